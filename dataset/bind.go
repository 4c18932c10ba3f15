package dataset

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/tierfs/tierfs/internal/wfs"
)

// Checksums bound to their place (format version 7) and to how they are read (version 9): a
// block's checksum is the xxhash64 of its bytes XORed with a mix of its file's bind key and its
// block index. The key is the xxhash64 of the dataset's id (Manifest.DatasetID, random at
// Commit), the file's role — what the manifest uses it for (fileBinding.role) — and, from version
// 9, the file's layout: the manifest's values that decide how its bytes are read (a feature's
// dtype, dim, row_bytes, stripes and rows, an array's dtype and count, num_classes;
// fileBinding.layout). So a block moved within its file, a file swapped for another of the
// dataset (two feature stripes exchanged), a file of another dataset (its labels.bin), and from
// version 9 a manifest whose dtype, dim, counts or num_classes were edited (its hash recomputed)
// are caught as a flipped bit is: at Load (the first and last block of every file,
// checkBinding), by `tierfs verify` and on verified reads. A manifest edited down to an older
// version reads the sidecars bound as that version binds them, and every block then mismatches:
// corruption, not a downgrade. Versions 7 and 8 bind no layout: their dtype, dims and counts are
// trusted as the manifest gives them (Upgrade binds them as they are).

// VersionBound is the first format version whose checksums are bound to their place.
const VersionBound = 7

// VersionBoundLayout is the first format version whose checksums are also bound to their file's
// layout (how its bytes are read).
const VersionBoundLayout = 9

// fileBinding is what a file's checksums are bound to: its role and its layout.
type fileBinding struct {
	// role names the file by what the manifest uses it for. The names are part of the format:
	//
	//	node/<type>/feature/<name>/<stripe>   node/<type>/labels   node/<type>/split/<name>
	//	edge/<src:rel:dst>/indptr   edge/<src:rel:dst>/indices   edge/<src:rel:dst>/feature/<name>/<stripe>
	//	edge/<src:rel:dst>/split/<name>/seeds | labels | neg_dst
	//	file/<path> (a listed file no role names)
	role string
	// layout (version 9) lists, as name=value pairs in a fixed order (part of the format), the
	// values that decide how the file's bytes are read: its dtype, its shape (a feature's dim,
	// row_bytes, rows_per_block, stripe_rows, stripe count, scalar, in_place and data_offset, and
	// its row shape where it has one; an array's count and per_seed), the counts of the node or
	// edge types its rows or ids belong to (nodes, edges, src_nodes, dst_nodes), and the labels'
	// num_classes.
	layout string
}

// fileBindings is every file's binding, by path: the files the manifest refers to (a file listed
// but referred to by none has the role file/<path> and no layout).
func (m *Manifest) fileBindings() map[string]fileBinding {
	out := map[string]fileBinding{}
	for _, f := range m.Files {
		out[f.Path] = fileBinding{role: "file/" + f.Path}
	}
	m.walkBindings(func(string) bool { return true }, func(p string, b fileBinding) { out[p] = b })
	return out
}

// walkBindings calls fn with every file a role of the manifest refers to, for which want says
// true, and its binding (built only for those).
func (m *Manifest) walkBindings(want func(path string) bool, fn func(path string, b fileBinding)) {
	features := func(prefix, rows string, count int64, list []FeatureSpec) {
		for _, f := range list {
			layout := ""
			for k, p := range f.Files {
				if !want(p) {
					continue
				}
				if layout == "" {
					layout = fmt.Sprintf("dtype=%s dim=%d row_bytes=%d rows_per_block=%d stripe_rows=%d stripes=%d scalar=%t in_place=%t data_offset=%d %s=%d",
						f.DType, f.Dim, f.RowBytes, f.RowsPerBlock, f.StripeRows, len(f.Files), f.Scalar, f.InPlace, f.DataOffset, rows, count)
					if f.Shape != nil { // a row shape, where it was given: a dataset without one binds as before
						layout += " shape=" + shapeString(f.Shape)
					}
				}
				fn(p, fileBinding{prefix + "/feature/" + f.Name + "/" + strconv.Itoa(k), layout})
			}
		}
	}
	one := func(p, role, format string, values ...any) {
		if want(p) {
			fn(p, fileBinding{role, fmt.Sprintf(format, values...)})
		}
	}
	nodes := map[string]int64{}
	for _, nt := range m.NodeTypes {
		nodes[nt.Name] = nt.Count
		prefix := "node/" + nt.Name
		features(prefix, "nodes", nt.Count, nt.Features)
		if l := nt.Labels; l != nil {
			one(l.File, prefix+"/labels", "dtype=%s nodes=%d num_classes=%d", l.DType, nt.Count, l.NumClasses)
		}
		for name, s := range nt.Splits {
			one(s.File, prefix+"/split/"+name, "dtype=%s count=%d nodes=%d", s.DType, s.Count, nt.Count)
		}
	}
	for _, et := range m.EdgeTypes {
		prefix := "edge/" + et.Key()
		src, dst := nodes[et.Src], nodes[et.Dst]
		one(et.Indptr.File, prefix+"/indptr", "dtype=%s dst_nodes=%d edges=%d", et.Indptr.DType, dst, et.Count)
		one(et.Indices.File, prefix+"/indices", "dtype=%s edges=%d src_nodes=%d", et.Indices.DType, et.Count, src)
		features(prefix, "edges", et.Count, et.Features)
		for name, s := range et.Splits {
			split := prefix + "/split/" + name
			one(s.Seeds.File, split+"/seeds", "dtype=%s count=%d src_nodes=%d dst_nodes=%d", s.Seeds.DType, s.Seeds.Count, src, dst)
			if l := s.Labels; l != nil {
				one(l.File, split+"/labels", "dtype=%s count=%d", l.DType, s.Seeds.Count)
			}
			if n := s.NegDst; n != nil {
				one(n.File, split+"/neg_dst", "dtype=%s count=%d per_seed=%d dst_nodes=%d", n.DType, s.Seeds.Count, n.PerSeed, dst)
			}
		}
	}
}

// shapeString is a row shape as the layout binds it: its sizes joined by 'x' ("2x3").
func shapeString(shape []int64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return strings.Join(parts, "x")
}

// key is the bind key of a file so bound in dataset id of a dataset of version.
func (b fileBinding) key(id string, version int) uint64 {
	s := id + "\x00" + b.role
	if version >= VersionBoundLayout {
		s += "\x00" + b.layout
	}
	return xxhash.Sum64String(s) | 1
}

// bindKey is the bind key of the file at path (bindKeys' of that file, without building every
// file's: a store loads its files' checksums one by one).
func (m *Manifest) bindKey(path string) uint64 {
	if m.Version < VersionBound {
		return 0
	}
	b := fileBinding{role: "file/" + path}
	m.walkBindings(func(p string) bool { return p == path }, func(_ string, found fileBinding) { b = found })
	return b.key(m.DatasetID, m.Version)
}

// bindKeys is every file's bind key (by path): none (0) before VersionBound.
func (m *Manifest) bindKeys() map[string]uint64 {
	keys := map[string]uint64{}
	if m.Version < VersionBound {
		return keys
	}
	bindings := m.fileBindings()
	for _, f := range m.Files {
		keys[f.Path] = bindings[f.Path].key(m.DatasetID, m.Version)
	}
	return keys
}

// blockMix is what block index of a file with bind key key XORs into its checksum (0 for key 0).
func blockMix(key uint64, index int64) uint64 {
	if key == 0 {
		return 0
	}
	z := key + uint64(index)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// newDatasetID is a random id for a new dataset (16 hex digits).
func newDatasetID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("dataset: random dataset id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// bindSidecar rewrites the sidecar at path (written unbound: plain xxhash64 per block) bound
// with key, and returns its xxhash64 for the manifest.
func bindSidecar(fsys wfs.FS, path string, key uint64) (string, error) {
	side, err := os.ReadFile(path) // one of ours, just written: 8 bytes a block
	if err != nil {
		return "", fmt.Errorf("dataset: %w", err)
	}
	for i := 0; i+8 <= len(side); i += 8 {
		binary.LittleEndian.PutUint64(side[i:], binary.LittleEndian.Uint64(side[i:])^blockMix(key, int64(i/8)))
	}
	if err := writeSynced(fsys, path, side); err != nil {
		return "", err
	}
	return hashHex(side), nil
}

// checkBinding holds the manifest to what its version binds, by the first and the last block of
// every file: under the file's bind key for that version (none before VersionBound) they must
// hash to their sums in the file's sidecar. A dataset of a later version whose manifest was
// edited down (its hash removed or recomputed, its dataset id dropped), and from version 9 one
// whose dtype, dims, counts or num_classes were edited, fails it on both — its sums are bound
// otherwise — and is corruption, named by the file and what its sums were checked as bound to.
// One bad block of two is damage, left to the reads that need it (Verify names every bad block),
// as is a file that does not open or read. It costs two blocks and 16 bytes per file.
func (m *Manifest) checkBinding() error {
	keys := m.bindKeys()
	bs := int64(m.BlockSize)
	buf := make([]byte, bs)
	for i := range m.Files {
		f := &m.Files[i]
		last := f.Blocks(bs) - 1
		if last < 0 || !m.blockBad(f, 0, keys[f.Path], buf) || last > 0 && !m.blockBad(f, last, keys[f.Path], buf) {
			continue
		}
		return m.bindingError(f.Path, last)
	}
	return nil
}

// blockBad reports whether block i of file f fails its sum in the sidecar under key (false where
// either does not read: that is left to the reads that need it). buf holds a block.
func (m *Manifest) blockBad(f *File, i int64, key uint64, buf []byte) bool {
	sum, ok := m.readAt(f.Checksums, 8*i, 8, buf)
	if !ok {
		return false
	}
	want := binary.LittleEndian.Uint64(sum)
	bs := int64(len(buf))
	block, ok := m.readAt(f.Path, i*bs, min(bs, f.Bytes-i*bs), buf)
	return ok && xxhash.Sum64(block)^blockMix(key, i) != want
}

// bindingError is checkBinding's error for file p, whose first and last (index last) blocks fail
// their sums.
func (m *Manifest) bindingError(p string, last int64) error {
	blocks := fmt.Sprintf("blocks 0 and %d of %s do not match their checksums", last, p)
	if last == 0 {
		blocks = fmt.Sprintf("block 0 of %s, its only block, does not match its checksum", p)
	}
	where := fmt.Sprintf("dataset: %s: format version %d: %s", m.Path(ManifestName), m.Version, blocks)
	b := m.fileBindings()[p]
	switch {
	case m.Version < VersionBound:
		return fmt.Errorf("%s (unbound checksums): a newer dataset whose manifest was edited down to an older version, or damage to an old one (tierfs verify names every bad block): %w", where, ErrCorrupt)
	case m.Version < VersionBoundLayout:
		return fmt.Errorf("%s, bound to its place, %s: a newer dataset whose manifest was edited down to an older version, a file moved or swapped, or damage (tierfs verify names every bad block): %w", where, b.role, ErrCorrupt)
	}
	return fmt.Errorf("%s, bound to its place, %s, and to how the manifest says to read it, %s: one of these values was edited after the dataset was written, the file was moved or swapped, or damage (tierfs verify names every bad block): %w",
		where, b.role, b.layout, ErrCorrupt)
}

// readAt reads the n bytes at off of the dataset's file p into buf, reporting whether it could.
func (m *Manifest) readAt(p string, off, n int64, buf []byte) ([]byte, bool) {
	fd, size, err := m.OpenFD(p, 0)
	if err != nil {
		return nil, false
	}
	file := os.NewFile(uintptr(fd), m.Path(p))
	defer file.Close()
	if size < off+n {
		return nil, false
	}
	if _, err := file.ReadAt(buf[:n], off); err != nil {
		return nil, false
	}
	return buf[:n], true
}
