package dataset

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// Checksums bound to their place (format version 7): a block's checksum is the xxhash64 of its
// bytes XORed with a mix of its file's bind key and its block index, and the key is the xxhash64
// of the dataset's id (Manifest.DatasetID, random at Commit) and the file's role — what the
// manifest uses it for (fileRoles). So a block moved within its file, a file swapped for another
// of the dataset (two feature stripes exchanged), or a file of another dataset (its labels.bin)
// is caught as a flipped bit is, by `tierfs verify`, at open where checked, and on verified
// reads. A manifest edited down to an older version reads the sidecars unbound, and every block
// then mismatches: corruption, not a downgrade.

// VersionBound is the first format version whose checksums are bound to their place.
const VersionBound = 7

// fileRoles names each file the manifest refers to by its role, the place its checksums are
// bound to. The names are part of the format:
//
//	node/<type>/feature/<name>/<stripe>   node/<type>/labels   node/<type>/split/<name>
//	edge/<src:rel:dst>/indptr   edge/<src:rel:dst>/indices   edge/<src:rel:dst>/feature/<name>/<stripe>
//	edge/<src:rel:dst>/split/<name>/seeds | labels | neg_dst
func (m *Manifest) fileRoles() map[string]string {
	roles := map[string]string{}
	stripes := func(prefix string, list []FeatureSpec) {
		for _, f := range list {
			for k, p := range f.Files {
				roles[p] = prefix + "/feature/" + f.Name + "/" + strconv.Itoa(k)
			}
		}
	}
	for _, nt := range m.NodeTypes {
		prefix := "node/" + nt.Name
		stripes(prefix, nt.Features)
		if nt.Labels != nil {
			roles[nt.Labels.File] = prefix + "/labels"
		}
		for name, s := range nt.Splits {
			roles[s.File] = prefix + "/split/" + name
		}
	}
	for _, et := range m.EdgeTypes {
		prefix := "edge/" + et.Key()
		roles[et.Indptr.File] = prefix + "/indptr"
		roles[et.Indices.File] = prefix + "/indices"
		stripes(prefix, et.Features)
		for name, s := range et.Splits {
			roles[s.Seeds.File] = prefix + "/split/" + name + "/seeds"
			if s.Labels != nil {
				roles[s.Labels.File] = prefix + "/split/" + name + "/labels"
			}
			if s.NegDst != nil {
				roles[s.NegDst.File] = prefix + "/split/" + name + "/neg_dst"
			}
		}
	}
	return roles
}

// bindKeys is every file's bind key (by path): none (0) before VersionBound.
func (m *Manifest) bindKeys() map[string]uint64 {
	keys := map[string]uint64{}
	if m.Version < VersionBound {
		return keys
	}
	roles := m.fileRoles()
	for _, f := range m.Files {
		role, ok := roles[f.Path]
		if !ok {
			role = "file/" + f.Path
		}
		keys[f.Path] = xxhash.Sum64String(m.DatasetID+"\x00"+role) | 1
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
func bindSidecar(path string, key uint64) (string, error) {
	side, err := os.ReadFile(path) // one of ours, just written: 8 bytes a block
	if err != nil {
		return "", fmt.Errorf("dataset: %w", err)
	}
	for i := 0; i+8 <= len(side); i += 8 {
		binary.LittleEndian.PutUint64(side[i:], binary.LittleEndian.Uint64(side[i:])^blockMix(key, int64(i/8)))
	}
	if err := writeSynced(path, side); err != nil {
		return "", err
	}
	return hashHex(side), nil
}

// checkUnbound holds a manifest of a version before VersionBound to what such a dataset is: its
// sidecars unbound, so block 0 of every file hashes to the first sum of its sidecar. A dataset of
// version 7 or later whose manifest was edited down to an older version (its hash removed or
// recomputed, its dataset id dropped) fails this on every file — its sums are bound — and is
// corruption, not an old dataset. A file that does not open or read is left to the reads that
// need it (Verify names it). It costs one block and 8 bytes per file, and only old datasets pay.
func (m *Manifest) checkUnbound() error {
	if m.Version >= VersionBound {
		return nil
	}
	buf := make([]byte, m.BlockSize)
	for i := range m.Files {
		f := &m.Files[i]
		if f.Bytes == 0 {
			continue
		}
		sum, ok := m.readAt(f.Checksums, 8, buf[:8])
		if !ok {
			continue
		}
		want := binary.LittleEndian.Uint64(sum)
		n := min(int64(m.BlockSize), f.Bytes)
		block, ok := m.readAt(f.Path, n, buf[:n])
		if !ok {
			continue
		}
		if got := xxhash.Sum64(block); got != want {
			return fmt.Errorf("dataset: %s: the manifest says format version %d (unbound checksums), but block 0 of %s hashes to %016x, not the %016x of its sidecar: a newer dataset whose manifest was edited down to an older version, or damage to an old one (tierfs verify names every bad block): %w",
				m.Path(ManifestName), m.Version, f.Path, got, want, ErrCorrupt)
		}
	}
	return nil
}

// readAt reads the first n bytes of the dataset's file p into buf, reporting whether it could.
func (m *Manifest) readAt(p string, n int64, buf []byte) ([]byte, bool) {
	fd, size, err := m.OpenFD(p, 0)
	if err != nil {
		return nil, false
	}
	file := os.NewFile(uintptr(fd), m.Path(p))
	defer file.Close()
	if size < n {
		return nil, false
	}
	if _, err := file.ReadAt(buf[:n], 0); err != nil {
		return nil, false
	}
	return buf[:n], true
}
