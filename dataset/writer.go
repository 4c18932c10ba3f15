package dataset

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/internal/wfs"
)

// ErrExists is wrapped by Begin's error when the destination already holds a dataset or other
// files and replacing it was not asked for.
var ErrExists = errors.New("destination exists")

// Writing is a dataset being written. Its files go into Dir, a new staging directory beside the
// destination (same file system), and stripes on other devices get names with Nonce in them, so
// nothing an open store reads is touched until Publish; Publish then swaps the directory in.
//
// From Begin until Publish succeeds or Abort returns, the writer holds an flock on a lock file
// beside Dir (.NAME.tierfs-lock-NONCE, listing the stripes Claim records); the kernel drops it
// when the writer dies, however it dies, and CleanStale then removes what the write left.
type Writing struct {
	Dir   string // where the files are written (Manifest gives their manifest)
	Dest  string // where the dataset ends up
	Nonce string // unique to this write; part of stripe names outside Dir
	FS    wfs.FS // what every file of the write is written through

	lock      wfs.File // flocked until Publish succeeds or Abort returns
	published bool     // Dir is at Dest: Abort removes nothing
}

// Begin starts writing a dataset to dest. First it cleans up what killed writes to dest left
// (CleanStale). A dest that holds a dataset, or any other entry, is then refused with ErrExists
// unless replace; either way nothing in dest changes until Publish. A write that fails leaves
// nothing once Abort returns; one that is killed leaves a hidden staging directory
// (.NAME.tierfs-new-*) beside dest until the next Begin, or CleanStale, for dest. Every file of
// the write is written through fsys (nil: the operating system's).
func Begin(fsys wfs.FS, dest string, replace bool) (*Writing, error) {
	fsys = wfs.Or(fsys)
	dest = filepath.Clean(dest)
	// Best effort: what it cannot remove (another user's, say) only takes space, and it says
	// why when run alone (tierfs verify).
	_, _ = cleanStale(fsys, dest)
	if entries, err := os.ReadDir(dest); err == nil && len(entries) > 0 && !replace {
		what := fmt.Sprintf("%d entries", len(entries))
		if _, err := os.Stat(filepath.Join(dest, ManifestName)); err == nil {
			what = "a dataset"
		}
		return nil, fmt.Errorf("dataset: %s already holds %s; replace it explicitly (--force, force=True): %w", dest, what, ErrExists)
	} else if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("dataset: %s: %w", dest, err)
	}
	parent := filepath.Dir(dest)
	if err := fsys.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("dataset: create %s: %w", parent, err)
	}
	var nonce [6]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	w := &Writing{Dest: dest, Nonce: hex.EncodeToString(nonce[:]), FS: fsys}
	w.Dir = w.stagingDir()
	if err := w.takeLock(); err != nil {
		return nil, err
	}
	if err := fsys.Mkdir(w.Dir, 0o755); err != nil {
		w.release()
		return nil, fmt.Errorf("dataset: create staging directory: %w", err)
	}
	return w, nil
}

// Manifest is a new manifest of the dataset being written: its directory w.Dir, its files
// written through w.FS when committed.
func (w *Writing) Manifest() *Manifest {
	return &Manifest{BlockSize: DefaultBlockSize, dir: w.Dir, fs: w.FS}
}

// Publish puts the committed dataset m (written into w.Dir) at w.Dest: a dataset already there
// is renamed aside, the staging directory renamed into place, and the old one removed with its
// stripes on other devices that m does not use. Stores open on the old dataset keep reading its
// files (they hold them open); a store opened after Publish sees the new one, never a mix.
func (w *Writing) Publish(m *Manifest) error {
	parent := filepath.Dir(w.Dest)
	old := w.oldDir()
	hadOld := false
	if _, err := os.Lstat(w.Dest); err == nil {
		if err := w.FS.Rename(w.Dest, old); err != nil {
			return fmt.Errorf("dataset: move the old %s aside: %w", w.Dest, err)
		}
		hadOld = true
	}
	if err := w.FS.Rename(w.Dir, w.Dest); err != nil {
		if hadOld {
			_ = w.FS.Rename(old, w.Dest)
		}
		return fmt.Errorf("dataset: put the new dataset in place at %s: %w", w.Dest, err)
	}
	w.published = true
	m.SetDir(w.Dest)
	if err := syncDir(w.FS, parent); err != nil {
		return err
	}
	if hadOld {
		if err := removeReplaced(w.FS, old, m); err != nil {
			return err
		}
	}
	w.release()
	return nil
}

// removeReplaced removes old, a dataset that m replaced, with its stripes on other devices that
// m does not use. The stripes go first: old, which names them, stays until they are gone, so a
// removal that fails is done again by the next CleanStale.
func removeReplaced(fsys wfs.FS, old string, m *Manifest) error {
	keep := map[string]bool{}
	for _, f := range m.Files {
		keep[f.Path] = true
	}
	if prev, err := Load(old); err == nil {
		for _, f := range prev.Files {
			if filepath.IsAbs(f.Path) && !keep[f.Path] && !f.InPlace { // an in-place file is the user's
				for _, p := range []string{f.Path, f.Path + ChecksumSuffix} {
					if err := fsys.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
						return fmt.Errorf("dataset: remove %s, a stripe of the replaced dataset %s: %w", p, old, err)
					}
				}
			}
		}
	}
	if err := fsys.RemoveAll(old); err != nil {
		return fmt.Errorf("dataset: remove the replaced dataset %s: %w", old, err)
	}
	return nil
}

// Abort removes what a write that did not publish left: the staging directory and the stripes
// on other devices named in files (and those Claim recorded); after a Publish that put the
// dataset in place it removes nothing. It releases the write's lock.
//
// A removal of a stripe that fails leaves the staging directory, and with it the lock file, in
// place, so that CleanStale removes the stripe later: the lock file lists it, and it is only
// read while a staging or an old directory is beside the destination.
func (w *Writing) Abort(files []string) {
	if !w.published {
		left := false
		stripes := slices.Concat(files, w.claimed())
		slices.Sort(stripes)
		for _, f := range slices.Compact(stripes) { // each removed once: a failure is not retried here
			if filepath.IsAbs(f) && strings.Contains(filepath.Base(f), w.Nonce) {
				for _, p := range []string{f, f + ChecksumSuffix} {
					if err := w.FS.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
						left = true
					}
				}
			}
		}
		if !left {
			_ = w.FS.RemoveAll(w.Dir)
		}
	}
	w.release()
}

// MappedFile is a file of a fixed size mapped read-write, for filling arrays in any order.
type MappedFile struct {
	f    wfs.File
	data []byte
}

// CreateMapped creates (or truncates) path through fsys (nil: the operating system's) with the
// given size and maps it shared.
func CreateMapped(fsys wfs.FS, path string, size int64) (*MappedFile, error) {
	f, err := wfs.Or(fsys).OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, fmt.Errorf("dataset: size %s to %d bytes: %w", path, size, err)
	}
	m := &MappedFile{f: f}
	if size > 0 {
		m.data, err = unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("dataset: map %s: %w", path, err)
		}
	}
	return m, nil
}

// Bytes is the mapped content.
func (m *MappedFile) Bytes() []byte { return m.data }

// Close flushes the mapping to disk (an fsync of the file writes back its mapped pages, which
// are its page cache), unmaps and closes the file.
func (m *MappedFile) Close() error {
	var err error
	if m.data != nil {
		if e := m.f.Sync(); e != nil {
			err = fmt.Errorf("dataset: fsync %s: %w", m.f.Name(), e)
		}
		if e := unix.Munmap(m.data); e != nil && err == nil {
			err = e
		}
		m.data = nil
	}
	if e := m.f.Close(); e != nil && err == nil {
		err = e
	}
	return err
}

// FeatureWriter streams feature rows, in row order, into the stripe files of a FeatureSpec.
type FeatureWriter struct {
	spec  *FeatureSpec
	files []wfs.File
	bufs  []*bufio.Writer
	local []int64 // rows written per file
	row   int64
	pad   []byte
}

// NewFeatureWriter creates the spec's files (resolved against dir when relative) through fsys
// (nil: the operating system's).
func NewFeatureWriter(fsys wfs.FS, dir string, spec *FeatureSpec) (*FeatureWriter, error) {
	if spec.InPlace {
		return nil, fmt.Errorf("dataset: feature %q is read in place from %q; it has no files to write", spec.Name, spec.Files)
	}
	w := &FeatureWriter{spec: spec, local: make([]int64, len(spec.Files))}
	if spec.RowsPerBlock > 0 {
		w.pad = make([]byte, spec.blockSize-spec.RowsPerBlock*spec.RowBytes)
	}
	for _, p := range spec.Files {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		f, err := wfs.Create(wfs.Or(fsys), p)
		if err != nil {
			w.abort()
			return nil, fmt.Errorf("dataset: create feature file: %w", err)
		}
		w.files = append(w.files, f)
		w.bufs = append(w.bufs, bufio.NewWriterSize(f, 1<<20))
	}
	return w, nil
}

// WriteRows appends whole rows (len(rows) a multiple of RowBytes).
func (w *FeatureWriter) WriteRows(rows []byte) error {
	rb := w.spec.RowBytes
	if int64(len(rows))%rb != 0 {
		return fmt.Errorf("dataset: feature %q: %d bytes is not a whole number of %d-byte rows", w.spec.Name, len(rows), rb)
	}
	for off := int64(0); off < int64(len(rows)); off += rb {
		if w.row >= w.spec.count {
			return fmt.Errorf("dataset: feature %q: more than the %d rows declared", w.spec.Name, w.spec.count)
		}
		k := int((w.row / w.spec.StripeRows) % int64(len(w.files)))
		if _, err := w.bufs[k].Write(rows[off : off+rb]); err != nil {
			return fmt.Errorf("dataset: write %s: %w", w.files[k].Name(), err)
		}
		w.local[k]++
		if w.pad != nil && w.local[k]%w.spec.RowsPerBlock == 0 && len(w.pad) > 0 {
			if _, err := w.bufs[k].Write(w.pad); err != nil {
				return fmt.Errorf("dataset: write %s: %w", w.files[k].Name(), err)
			}
		}
		w.row++
	}
	return nil
}

// Close checks every declared row was written and flushes the files (padding comes in Commit).
func (w *FeatureWriter) Close() error {
	defer w.abort()
	if w.row != w.spec.count {
		return fmt.Errorf("dataset: feature %q: %d rows written, %d declared", w.spec.Name, w.row, w.spec.count)
	}
	for k, b := range w.bufs {
		if err := b.Flush(); err != nil {
			return fmt.Errorf("dataset: write %s: %w", w.files[k].Name(), err)
		}
		// Drop a trailing partial block's padding: content ends at the last row.
		if err := w.files[k].Truncate(w.spec.ContentBytesOfFile(k)); err != nil {
			return fmt.Errorf("dataset: %w", err)
		}
	}
	return nil
}

func (w *FeatureWriter) abort() {
	for _, f := range w.files {
		f.Close()
	}
	w.files = nil
}

// WriteInt64s writes a little-endian int64 array file (labels, split ids, small indptrs) through
// fsys (nil: the operating system's).
func WriteInt64s(fsys wfs.FS, path string, values []int64) error {
	f, err := wfs.Create(wfs.Or(fsys), path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	b := bufio.NewWriterSize(f, min(1<<20, 8*len(values)))
	var buf [8]byte
	for _, v := range values {
		binary.LittleEndian.PutUint64(buf[:], uint64(v))
		b.Write(buf[:])
	}
	if err := b.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("dataset: write %s: %w", path, err)
	}
	return f.Close()
}

// Commit finishes a dataset written into m's directory: it pads every data file named by the
// manifest to the block size, syncs it, writes its checksum sidecar, fills m.Files, validates m and
// then writes the manifest (temporary name, fsync, rename, directory fsync). Until Commit returns
// nil the directory is not a dataset. Labels that are neither a class id below their
// num_classes nor -1 are refused, naming the node and its label. The file of an in-place feature (listed in files too) is
// only read: checksummed as it is, its size and modification time recorded, its sidecar
// written into m's directory (InPlaceSidecar).
func Commit(m *Manifest, files []string, by string, args []string) error {
	return CommitProgress(m, files, by, args, nil)
}

// CommitProgress is Commit calling progress, when set, with the bytes of in-place files
// checksummed so far and their total.
func CommitProgress(m *Manifest, files []string, by string, args []string, progress func(done, total int64)) error {
	if m.DatasetID == "" {
		id, err := newDatasetID()
		if err != nil {
			return err
		}
		m.DatasetID = id
	}
	m.Format, m.Version, m.Checksum = FormatName, m.minVersion(), "xxhash64"
	if m.BlockSize == 0 {
		m.BlockSize = DefaultBlockSize
	}
	if m.BlockSize < 512 || m.BlockSize > 1<<20 || m.BlockSize&(m.BlockSize-1) != 0 {
		return fmt.Errorf("dataset: block size %d is not a power of two in [512, 1 MiB]", m.BlockSize)
	}
	m.Created = Created{By: by, Args: args, Time: time.Now().UTC().Format(time.RFC3339), Version: ToolVersion}
	m.Files = m.Files[:0]
	inPlace := map[string]*FeatureSpec{} // in-place file -> its feature
	for _, f := range m.allFeatures() {
		if f.InPlace {
			// Checked before anything is written: every other file is padded and synced in
			// place, which must never happen to the user's.
			if len(f.Files) != 1 || !filepath.IsAbs(f.Files[0]) {
				return fmt.Errorf("dataset: in-place feature %q names files %q; want one absolute path", f.Name, f.Files)
			}
			inPlace[f.Files[0]] = f
		}
	}
	var done, total int64
	for _, p := range files {
		if _, ok := inPlace[p]; ok {
			if st, err := os.Stat(p); err == nil {
				total += st.Size()
			}
		}
	}
	for _, p := range files {
		if spec, ok := inPlace[p]; ok {
			name := spec.Name
			f, err := checksumInPlace(m.fsys(), p, spec, m.Path(InPlaceSidecar(name)), int64(m.BlockSize), func(n int64) {
				if progress != nil {
					progress(done+n, total)
				}
			})
			done += f.Bytes
			if err != nil {
				return err
			}
			f.Path, f.Checksums = p, InPlaceSidecar(name)
			m.Files = append(m.Files, f)
			continue
		}
		f, err := finishFile(m.fsys(), m.Path(p), int64(m.BlockSize))
		if err != nil {
			return err
		}
		f.Path, f.Checksums = p, p+ChecksumSuffix
		m.Files = append(m.Files, f)
	}
	for i := range m.NodeTypes {
		for j := range m.NodeTypes[i].Features {
			m.NodeTypes[i].Features[j].blockSize = int64(m.BlockSize)
			m.NodeTypes[i].Features[j].count = m.NodeTypes[i].Count
		}
	}
	for i := range m.EdgeTypes {
		for j := range m.EdgeTypes[i].Features {
			m.EdgeTypes[i].Features[j].blockSize = int64(m.BlockSize)
			m.EdgeTypes[i].Features[j].count = m.EdgeTypes[i].Count
		}
	}
	if err := m.Validate(); err != nil {
		return fmt.Errorf("dataset: refusing to commit an inconsistent manifest: %w", err)
	}
	if bad := m.labelProblems(); len(bad) > 0 {
		return fmt.Errorf("dataset: refusing to commit labels their num_classes does not hold: %s", bad[0])
	}
	// Bind every sidecar to its file's place (bind.go), now that the roles are known.
	keys := m.bindKeys()
	for i := range m.Files {
		f := &m.Files[i]
		h, err := bindSidecar(m.fsys(), m.Path(f.Checksums), keys[f.Path])
		if err != nil {
			return err
		}
		f.ChecksumsHash = h
	}
	return m.writeManifest()
}

// writeManifest sets m's hash and writes it as its directory's manifest: a temporary name,
// fsync, rename, directory fsync — so the directory holds the old manifest or the new one, whole.
func (m *Manifest) writeManifest() error {
	hash, err := m.contentHash()
	if err != nil {
		return err
	}
	m.ManifestHash = hash
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	tmp := filepath.Join(m.dir, ManifestName+".tmp")
	if err := writeSynced(m.fsys(), tmp, data); err != nil {
		return err
	}
	if err := m.fsys().Rename(tmp, filepath.Join(m.dir, ManifestName)); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	return syncDir(m.fsys(), m.dir)
}

// ToolVersion is recorded in manifests this build writes.
var ToolVersion = "0.1.0"

// finishFile pads path to a block multiple, syncs it and writes its sidecar.
func finishFile(fsys wfs.FS, path string, block int64) (File, error) {
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return File{}, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return File{}, fmt.Errorf("dataset: %w", err)
	}
	content := st.Size()
	padded := RoundUp(content, block)
	if padded != content {
		if err := f.Truncate(padded); err != nil {
			return File{}, fmt.Errorf("dataset: pad %s: %w", path, err)
		}
	}
	if err := f.Sync(); err != nil {
		return File{}, fmt.Errorf("dataset: fsync %s: %w", path, err)
	}
	sums, err := blockChecksums(f, padded, block, nil)
	if err != nil {
		return File{}, err
	}
	side := make([]byte, 8*len(sums))
	for i, s := range sums {
		binary.LittleEndian.PutUint64(side[8*i:], s)
	}
	if err := writeSynced(fsys, path+ChecksumSuffix, side); err != nil {
		return File{}, err
	}
	return File{Bytes: padded, ContentBytes: content, ChecksumsHash: hashHex(side)}, nil
}

// InPlaceSidecar is the checksum sidecar, in the dataset directory, of the in-place feature
// name's file.
func InPlaceSidecar(name string) string { return "features." + name + ".in-place" + ChecksumSuffix }

// checksumInPlace checksums the user's file path as it is (its last block partial) into the
// sidecar, and returns its files-list entry with its size and modification time. A file that
// changes meanwhile is refused.
func checksumInPlace(fsys wfs.FS, path string, spec *FeatureSpec, sidecar string, block int64, progress func(done int64)) (File, error) {
	// Never blocks on a FIFO or reads a device: a regular file or a clear error.
	fd, _, err := OpenRegularFD(path, 0)
	if err != nil {
		return File{}, fmt.Errorf("dataset: in-place feature file: %w", err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var before, after unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &before); err != nil {
		return File{}, fmt.Errorf("dataset: stat %s: %w", path, err)
	}
	if before.Mode&unix.S_IFMT != unix.S_IFREG {
		return File{}, fmt.Errorf("dataset: in-place feature file %s is not a regular file", path)
	}
	if spec.inPlaceMTimeNS != 0 && (before.Size != spec.inPlaceSize || before.Mtim.Nano() != spec.inPlaceMTimeNS) {
		return File{}, fmt.Errorf("dataset: in-place feature file %s changed after its header was read (size %d, was %d; modified %s); ingest again once nothing writes it",
			path, before.Size, spec.inPlaceSize, time.Unix(0, before.Mtim.Nano()).UTC().Format(time.RFC3339Nano))
	}
	sums, err := blockChecksums(f, before.Size, block, progress)
	if err != nil {
		return File{}, err
	}
	if err := unix.Fstat(int(f.Fd()), &after); err != nil {
		return File{}, fmt.Errorf("dataset: stat %s: %w", path, err)
	}
	if after.Size != before.Size || after.Mtim != before.Mtim {
		return File{}, fmt.Errorf("dataset: in-place feature file %s changed while it was being checksummed; ingest again once nothing writes it", path)
	}
	side := make([]byte, 8*len(sums))
	for i, s := range sums {
		binary.LittleEndian.PutUint64(side[8*i:], s)
	}
	if err := writeSynced(fsys, sidecar, side); err != nil {
		return File{}, err
	}
	return File{Bytes: before.Size, ContentBytes: before.Size, ChecksumsHash: hashHex(side), InPlace: true, MTimeNS: before.Mtim.Nano()}, nil
}

func writeSynced(fsys wfs.FS, path string, data []byte) error {
	if err := wfs.WriteSynced(fsys, path, data); err != nil {
		return fmt.Errorf("dataset: write %s: %w", path, err)
	}
	return nil
}

func syncDir(fsys wfs.FS, dir string) error {
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("dataset: fsync %s: %w", dir, err)
	}
	return nil
}
