package embedding

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/internal/wfs"
)

// Table is an open table. Its methods are safe for concurrent use and run one at a time.
type Table struct {
	mu      sync.Mutex
	fs      wfs.FS
	dir     string
	m       manifest
	l       layout
	id      [16]byte
	c       *cache
	lock    wfs.File
	direct  bool
	stats   Stats
	cacheB  int64
	broken  error // set when a write failed half way: the table must be reopened
	changed bool  // written since the last checkpoint
	closed  bool
}

// copyChunk is how many bytes Create writes at a time.
const copyChunk = 1 << 20

// Create makes a new table in dir (which must not exist) as generation 1, every row initialized
// by spec.Init and every optimizer state at torch's start. A Create that fails removes dir; one
// killed leaves a dir without a manifest, which Open refuses, naming it.
func Create(fsys wfs.FS, dir string, spec Spec) error {
	fsys = wfs.Or(fsys)
	spec, err := spec.withDefaults()
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err == nil {
		return invalid("embedding: creating %s: it exists", dir)
	}
	id, err := newTableID()
	if err != nil {
		return err
	}
	m := &manifest{Version: manifestVersion, TableID: id, Generation: 1, Spec: spec}
	bid, _ := m.id()
	l := newLayout(spec.Rows, spec.Dim, spec.Optimizer.Name)
	if err := checkSpace(existingParent(dir), 2*l.fileBytes()+8*l.pages, "a table of "+fmt.Sprint(spec.Rows)+" rows"); err != nil {
		return err
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("embedding: creating %s: %w", dir, err)
	}
	if err := writeFirst(fsys, dir, m, l, bid); err != nil {
		fsys.RemoveAll(dir) // it did not exist: a failed Create leaves nothing
		return err
	}
	return nil
}

// writeFirst writes generation 1 of a new table into dir (every page in place 0, place 1
// reserved) and its map, and publishes its manifest.
func writeFirst(fsys wfs.FS, dir string, m *manifest, l layout, id [16]byte) error {
	path := filepath.Join(dir, pagesName)
	f, _, err := openRows(fsys, path, true)
	if err != nil {
		return fmt.Errorf("embedding: creating %s: %w", path, err)
	}
	err = initPages(f, l, id, m.Spec)
	if err == nil {
		// Both places on disk now, so a write-back does not run out of space later.
		if err = f.Allocate(2 * l.fileBytes()); errors.Is(err, wfs.ErrUnsupported) {
			err = f.Truncate(2 * l.fileBytes())
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("embedding: writing %s: %w", path, err)
	}
	loc := make([]uint32, l.pages)
	for i := range loc {
		loc[i] = entry(1, 0)
	}
	if err := writeMap(fsys, dir, id, 1, loc); err != nil {
		return err
	}
	if err := publish(fsys, dir, m); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(filepath.Clean(dir)))
}

// initPages writes every page of generation 1.
func initPages(f wfs.File, l layout, id [16]byte, spec Spec) error {
	per := max(1, copyChunk/l.pageBytes)
	buf, err := unix.Mmap(-1, 0, per*l.pageBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	defer unix.Munmap(buf)
	rng := rand.New(rand.NewPCG(spec.Init.Seed, 0x656d626564))
	acc := float32(spec.Optimizer.InitialAccumulatorValue)
	for p0 := int64(0); p0 < l.pages; p0 += int64(per) {
		n := int(min(int64(per), l.pages-p0))
		clear(buf)
		for i := range n {
			page := buf[i*l.pageBytes : (i+1)*l.pageBytes]
			for r := (p0 + int64(i)) * int64(l.rowsPerPage); r < min(l.rows, (p0+int64(i)+1)*int64(l.rowsPerPage)); r++ {
				s := l.slot(page, r)
				for j := range l.dim {
					switch spec.Init.Kind {
					case "normal":
						s[j] = float32(rng.NormFloat64() * spec.Init.Std)
					case "uniform":
						s[j] = float32(spec.Init.A + rng.Float64()*(spec.Init.B-spec.Init.A))
					}
				}
				if spec.Optimizer.Name == "adagrad" {
					for j := l.dim; j < 2*l.dim; j++ {
						s[j] = acc
					}
				}
			}
			seal(id, p0+int64(i), 1, page)
		}
		if _, err := f.WriteAt(buf[:n*l.pageBytes], p0*int64(l.pageBytes)); err != nil {
			return err
		}
	}
	return nil
}

// Open opens the table in dir to train: it removes what an interrupted checkpoint left, reads
// the last checkpoint's page map (checking it) and caches pages in at most opt.HostCacheBytes of
// host memory. Pages are checked as they are read.
func Open(dir string, opt Options) (t *Table, err error) {
	fsys := wfs.Or(opt.FS)
	lock, err := lockDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	id, err := m.id()
	if err != nil {
		return nil, err
	}
	if err := removeStale(fsys, dir, m); err != nil {
		return nil, err
	}
	t = &Table{fs: fsys, dir: dir, m: *m, id: id, lock: lock, l: newLayout(m.Spec.Rows, m.Spec.Dim, m.Spec.Optimizer.Name)}
	if m.Version == 1 {
		if err := convertV1(fsys, dir, &t.m, t.l, id); err != nil {
			return nil, err
		}
	}
	loc, err := readMap(dir, id, m.Generation, t.l.pages)
	if err != nil {
		return nil, err
	}
	t.cacheB = opt.HostCacheBytes
	if t.cacheB == 0 {
		t.cacheB = DefaultHostCacheBytes
	}
	path := filepath.Join(dir, pagesName)
	f, direct, err := openRows(fsys, path, false)
	if err != nil {
		return nil, fmt.Errorf("embedding: opening table: %w", err)
	}
	if st, err := f.Stat(); err != nil || st.Size() != 2*t.l.fileBytes() {
		f.Close()
		return nil, fmt.Errorf("embedding: %s: %w: %v bytes, want %d", path, ErrCorrupt, sizeOf(st), 2*t.l.fileBytes())
	}
	if t.c, err = newCache(t.l, id, t.cacheB, opt.IOBackend, opt.Faults, &t.stats); err != nil {
		f.Close()
		return nil, err
	}
	t.c.file, t.c.name, t.c.gen, t.c.loc, t.direct = f, path, m.Generation+1, loc, direct
	return t, nil
}

// convertV1 rewrites a version 1 table (gen-<G>.rows, every page sealed as G) as version 2 at
// the same generation: pages.rows holding every page (checked) in place 0, map-<G>, the manifest
// published, then gen-<G>.rows removed. A kill before the manifest leaves the version 1 table,
// converted again by the next Open; one after, a version 2 table whose Open removes the rest.
func convertV1(fsys wfs.FS, dir string, m *manifest, l layout, id [16]byte) error {
	src := filepath.Join(dir, v1GenName(m.Generation))
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("embedding: opening a version 1 table: %w", err)
	}
	defer in.Close()
	if st, err := in.Stat(); err != nil || st.Size() != l.fileBytes() {
		return fmt.Errorf("embedding: %s: %w: %v bytes, want %d", src, ErrCorrupt, sizeOf(st), l.fileBytes())
	}
	if err := checkSpace(dir, 2*l.fileBytes(), "converting the table to version 2"); err != nil {
		return err
	}
	path := filepath.Join(dir, pagesName)
	out, _, err := openRows(fsys, path, true)
	if err != nil {
		return fmt.Errorf("embedding: converting %s: %w", dir, err)
	}
	err = copyPages(in, src, out, l, id, m.Generation)
	if err == nil {
		if err = out.Allocate(2 * l.fileBytes()); errors.Is(err, wfs.ErrUnsupported) {
			err = out.Truncate(2 * l.fileBytes())
		}
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("embedding: converting %s: %w", dir, err)
	}
	loc := make([]uint32, l.pages)
	for i := range loc {
		loc[i] = entry(m.Generation, 0)
	}
	if err := writeMap(fsys, dir, id, m.Generation, loc); err != nil {
		return err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("embedding: converting %s: %w", dir, err)
	}
	next := *m
	next.Version = manifestVersion
	if err := publish(fsys, dir, &next); err != nil {
		return err
	}
	*m = next
	if err := fsys.Remove(src); err != nil {
		return fmt.Errorf("embedding: converted to version 2; removing %s: %w", src, err)
	}
	return nil
}

// copyPages copies every page of in (sealed as gen, checked) to the same offsets of out.
func copyPages(in *os.File, src string, out wfs.File, l layout, id [16]byte, gen uint64) error {
	per := max(1, copyChunk/l.pageBytes)
	buf, err := unix.Mmap(-1, 0, per*l.pageBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	defer unix.Munmap(buf)
	for p0 := int64(0); p0 < l.pages; p0 += int64(per) {
		n := int(min(int64(per), l.pages-p0))
		b := buf[:n*l.pageBytes]
		if k, err := in.ReadAt(b, p0*int64(l.pageBytes)); k < len(b) {
			return fmt.Errorf("embedding: reading %s: %w (%v)", src, ErrCorrupt, err)
		}
		for i := range n {
			if err := check(id, p0+int64(i), gen, b[i*l.pageBytes:(i+1)*l.pageBytes], src); err != nil {
				return err
			}
		}
		if _, err := out.WriteAt(b, p0*int64(l.pageBytes)); err != nil {
			return err
		}
	}
	return nil
}

// existingParent is dir's nearest ancestor that exists (where a new table's bytes will go).
func existingParent(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			return d
		}
	}
}

func sizeOf(st os.FileInfo) any {
	if st == nil {
		return "?"
	}
	return st.Size()
}

// enter takes the table's lock, refusing a closed or broken table.
func (t *Table) enter() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return ErrClosed
	}
	if t.broken != nil {
		t.mu.Unlock()
		return fmt.Errorf("embedding: the table must be reopened (it resumes from its last checkpoint): an earlier write failed: %w", t.broken)
	}
	return nil
}

// fail ends a write: err (a write that stopped half way) marks the table broken; either way the
// table has changed since its last checkpoint.
func (t *Table) fail(err error) error {
	if err != nil {
		t.broken = err
	}
	t.changed = true
	return err
}

// Info describes the table.
func (t *Table) Info() Info {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Info{Spec: t.m.Spec, TableID: t.m.TableID, Generation: t.m.Generation, Step: t.m.Step,
		SlotFloats: t.l.slotFloats, PageBytes: t.l.pageBytes, RowsPerPage: t.l.rowsPerPage,
		Pages: t.l.pages, DirectIO: t.direct, HostCacheMax: t.cacheB}
}

// Stats are the table's counters since Open.
func (t *Table) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// Checkpoint makes the table's state the new last checkpoint, crash-safely (see the package doc);
// a table unchanged since its last checkpoint is left as it is. A failure leaves the last
// checkpoint as it was and the table to be reopened.
func (t *Table) Checkpoint() error {
	if err := t.enter(); err != nil {
		return err
	}
	defer t.mu.Unlock()
	if !t.changed {
		return nil
	}
	if err := t.checkpoint(); err != nil {
		t.broken = err
		return err
	}
	t.changed = false
	return nil
}

// checkpoint writes the dirty pages to their places (none of the last checkpoint's), fsyncs
// them, writes the next generation's map and publishes the manifest naming it, then removes the
// old map.
func (t *Table) checkpoint() error {
	old := t.m.Generation
	if old+1 > maxGeneration {
		return fmt.Errorf("embedding: checkpoint: generation %d is the last a page map holds", old)
	}
	if err := t.c.flush(); err != nil {
		return err
	}
	if err := t.c.file.Sync(); err != nil {
		return fmt.Errorf("embedding: checkpoint: %w", err)
	}
	if err := writeMap(t.fs, t.dir, t.id, old+1, t.c.loc); err != nil {
		return err
	}
	if err := t.fs.SyncDir(t.dir); err != nil { // the map's name is durable before the manifest's
		return fmt.Errorf("embedding: checkpoint: %w", err)
	}
	m := t.m
	m.Generation = old + 1
	if err := publish(t.fs, t.dir, &m); err != nil {
		return err
	}
	t.m = m
	t.c.gen = old + 2
	t.stats.Checkpoints++
	if err := t.fs.Remove(filepath.Join(t.dir, mapName(old))); err != nil {
		return fmt.Errorf("embedding: checkpoint published; removing generation %d's map: %w", old, err)
	}
	return nil
}

// Close releases the table without a checkpoint: what changed since the last one is dropped.
func (t *Table) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	t.closed = true
	errs := []error{t.c.closeIO(), t.c.file.Close()} // the IO before the file it reads
	errs = append(errs, t.c.free(), t.lock.Close())
	return errors.Join(errs...)
}
