// Package fusefs mounts a read-only FUSE view of a live featurestore.Store, for inspecting what
// each tier holds and what the store is doing while a training process runs.
//
// The tree (N is the node count):
//
//	manifest.json           the dataset's manifest, byte for byte
//	stats.json              store.Stats() as JSON, made anew on every open (counters move)
//	placement.json          host tier rows, bytes and id ranges, cache budget, placement policy
//	tiers/{gpu,host,ssd}/
//	    summary.txt         "key value" lines: tier, present, rows, bytes, nodes, hits,
//	                        bytes_served (gpu: "present no" until the CUDA path exists)
//	    ranges.txt          "first count" lines, one per run of consecutive node ids the tier
//	                        holds, streamed (ssd: "0 N"; gpu: empty)
//	nodes/README            how to use nodes/; the directory lists nothing else
//	nodes/<id>/             for a decimal id in [0, N), found by name only
//	    feature.bin         the feature row, as store.Gather returns it
//	    feature.txt         the row's values decoded from the dtype, one per line
//	    neighbors.txt       in-neighbor ids, one per line (datasets with topology)
//	    tier                "host" or "ssd": the fastest tier holding the row
//	    label               the node's label, -1 when unlabelled (datasets with labels)
//	topology/degrees.txt    nodes, edges, min/mean/max in-degree and a log2 histogram, computed
//	                        once on first read by streaming Degrees in chunks
//
// A dataset of several node or edge types (ARCHITECTURE.md, "Types") shows the tree above for
// the mounted store's node type, and every type through the session's typed calls, ids local to
// their type (T a node type, N_T its node count, E an edge type's src:rel:dst key):
//
//	types/<T>/
//	    info.txt            "key value" lines: name, nodes, feature (its tier stack's, or none),
//	                        dim, dtype, row_bytes, labels (yes/no), classes, in_edge_types
//	    stats.json          the Stats of T's tier stack alone (types without features have no
//	                        stats.json or tiers/)
//	    tiers/{gpu,host,ssd}/{summary.txt,ranges.txt}   as tiers/ above, of T's stack
//	    nodes/README        how to use nodes/; the directory lists nothing else
//	    nodes/<id>/         for a decimal id in [0, N_T), found by name only
//	        feature.bin     the row of T's stack's feature, as Session.Gather returns it
//	        feature.txt     its values, one per line
//	        tier            the fastest tier of T's stack holding the row
//	        label           the node's label, -1 when unlabelled (types with labels)
//	        neighbors/<E>.txt   for each edge type E whose dst is T: the node's in-neighbors
//	                        along E (ids of E's src type, in CSC order), one per line
//	edge_types/<E>/info.txt "key value" lines: src, rel, dst, count
//
// With Options.Tables (as the C ABI's tfs_mount and Python's store.mount give it), the trainable
// embedding tables open in the mounting process whose rows are the dataset's nodes
// (docs/embedding.md), listed as they open and close, each named by its node type T (a second
// table of T open at once: T.<first 8 hex digits of its table id>):
//
//	embeddings/<T>/
//	    info.txt            "key value" lines: node_type, path, table_id, rows, dim, dtype,
//	                        optimizer, generation (of the last checkpoint), step, slot_floats,
//	                        page_bytes, rows_per_page, pages, direct_io, host_cache_bytes
//	    stats.json          the table's counters since it was opened (embedding.Stats), and
//	                        cached_pages, generation, step
//	    tiers/gpu/          summary.txt "present no": rows are on the GPU only while a step runs
//	    tiers/host/         summary.txt: rows and bytes of the pages the page cache holds, pages,
//	                        dirty_pages, cache_pages, hits, misses, evictions; ranges.txt: the
//	                        runs of row ids of those pages
//	    tiers/ssd/          summary.txt: rows, bytes and pages of the working copy, generation,
//	                        step, pages_read, pages_written, checkpoints; ranges.txt "0 N_T"
//	    nodes/<id>/         feature.bin (the row, float32, read through the table's cache),
//	                        feature.txt, tier (host when the cache holds the row's page, else ssd)
//
// Guarantees:
//   - Read-only: the mount is made "ro", and every write, create, mkdir, setattr, unlink or rename
//     fails with EROFS.
//   - Fresh: files are opened with direct I/O and attributes are never cached, so each open sees
//     current content; stat reports the size the file has now (degrees.txt reports 0 until it has
//     been computed). Content is fixed per open file, except ranges.txt, which streams (a read
//     before the last one restarts the stream).
//   - Cheap at any scale: no directory lists per-node entries and nothing holds per-node memory;
//     ranges.txt streams from the tier, degrees.txt reads degrees in bounded chunks. A stat of
//     ranges.txt or placement.json walks the host tier's ids (linear in the rows it holds).
//   - Safe to close: Mount registers Unmount with store.OnClose. Unmount cancels long reads, detaches
//     the mount (lazily when it is busy), and returns only when no request of the mount is in a
//     store call any more; later requests on files still open fail with EIO. It never waits on the
//     store's Close, so closing the store with requests in flight cannot deadlock.
//
// The tiers are read through Store.TierOf and Store.TierRanges, under the store's placement lock:
// a read while a Place runs sees the old or the new placement.
//
// Mounting needs /dev/fuse, and either root (the mount is made with mount(2) directly) or the
// fusermount3 (or fusermount) helper in PATH.
package fusefs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/embedding"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/tiers"
)

// Options configure Mount. The zero value is valid.
type Options struct {
	// Placement says how the store's host tier was filled, for placement.json; nil reports the
	// budget and policy as unknown. PlacementOf makes it from the options the store was opened with.
	Placement *Placement
	// Tables lists the embedding tables open now (the mounting process's); embeddings/ shows
	// those whose rows are the mounted dataset's nodes. Nil: no embeddings/ directory.
	Tables func() []*embedding.Table
}

// Placement describes how a store chose the rows of its host tier.
type Placement struct {
	BudgetBytes int64  `json:"budget_bytes"` // featurestore.Options.HostCacheBytes
	Policy      string `json:"policy"`       // "none", "all", "hotness", "in-degree" or "node-id"
}

// PlacementOf describes the placement featurestore.Open made for s, opened with opened: "none"
// when the budget holds no row, "all" when it holds every row, otherwise the ranking used
// ("hotness" given by the caller, "in-degree", or "node-id" without topology).
func PlacementOf(s *featurestore.Store, opened featurestore.Options) *Placement {
	p := &Placement{BudgetBytes: opened.HostCacheBytes}
	switch rows := featurestore.TierRows(tiers.Host, opened.HostCacheBytes, s.RowBytes()); {
	case rows == 0:
		p.Policy = "none"
	case rows >= s.NumNodes():
		p.Policy = "all"
	case opened.Hotness != nil:
		p.Policy = "hotness"
	case opened.Placement != nil:
		p.Policy = opened.Placement.Policy.String() + " placement"
	case s.Graph() != nil:
		p.Policy = "in-degree"
	default:
		p.Policy = "node-id"
	}
	return p
}

// View is a mounted read-only view of a store.
type View struct {
	store    *featurestore.Store
	dir      string
	opt      Options
	manifest []byte // manifest.json as read at mount time
	// types and edgeTypes are the session's node and edge types for types/ and edge_types/; nil
	// for a dataset of one of each.
	types     []*nodeTypeView
	edgeTypes []featurestore.EdgeTypeInfo
	mountedAt time.Time
	conn      string // fusectl connection name, for aborting a lazily detached mount

	served  chan struct{} // closed when the FUSE server has stopped
	closing chan struct{} // closed when Unmount starts; long computations give up
	gate    gate          // store calls of FUSE requests

	streamsMu sync.Mutex
	streams   map[*streamHandle]struct{} // open ranges.txt streams

	degreesMu   sync.Mutex             // held while computing degrees.txt
	degreesText atomic.Pointer[[]byte] // topology/degrees.txt once computed

	unmountOnce sync.Once
	unmountErr  error
}

// mountpointError explains a mountpoint that cannot be looked at; a FUSE mount whose server died
// (ENOTCONN, or ECONNABORTED once the kernel aborted its connection) is still in place until it is unmounted.
func mountpointError(dir string, err error) error {
	if errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED) { // ECONNABORTED: the connection was aborted
		return fmt.Errorf("fusefs: mountpoint %s: %w (a mount whose server stopped is still there: run `tierfs umount %s` or `fusermount -u %s`, then mount again)", dir, err, dir, dir)
	}
	return fmt.Errorf("fusefs: mountpoint %s: %w", dir, err)
}

// mountError explains a failed mount of dir: mount(2) or /dev/fuse refused (EPERM, EACCES) to a
// user who is not root, with no fusermount helper to fall back to, says what is missing.
func mountError(dir string, err error, root, helper bool) error {
	if (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)) && !root && !helper {
		return fmt.Errorf("fusefs: mount %s: %w (not root, and neither fusermount3 nor fusermount is in PATH: install fuse3 for fusermount3, or mount as root)", dir, err)
	}
	return fmt.Errorf("fusefs: mount %s: %w", dir, err)
}

// CheckMountpoint returns the absolute path of dir when a view may be mounted there: dir is not
// empty (which would mean the working directory), is an existing directory, and is not already a
// mountpoint (mounts would stack there). Mount checks this; front ends that hand dir on (the
// CLI's background server) check it first.
func CheckMountpoint(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("fusefs: the mountpoint is empty; name the directory to mount at")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("fusefs: mountpoint %s: %w", dir, err)
	}
	if st, err := os.Stat(abs); err != nil {
		return "", mountpointError(dir, err)
	} else if !st.IsDir() {
		return "", fmt.Errorf("fusefs: mountpoint %s is not a directory", dir)
	}
	// mountinfo names mountpoints without symlinks; dir answered the Stat, so resolving it
	// does not hang on a stuck server.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", mountpointError(dir, err)
	}
	fstype, err := mountType(real)
	if err != nil {
		return "", err
	}
	switch {
	case fstype == fsType:
		return "", fmt.Errorf("fusefs: %s is already a tierfs mount; unmount it first (tierfs umount %s) or mount at another directory", dir, dir)
	case fstype != "":
		return "", fmt.Errorf("fusefs: %s is already a mountpoint (of a %s file system); mount at another directory", dir, fstype)
	}
	return abs, nil
}

// Mount mounts a read-only view of store at dir (an existing directory) and serves it until
// Unmount, store.Close, or an unmount from outside. The store must stay open while mounted;
// Mount registers Unmount with store.OnClose so closing it unmounts first.
func Mount(store *featurestore.Store, dir string, opt Options) (*View, error) {
	if store == nil {
		return nil, errors.New("fusefs: mount of a nil store")
	}
	abs, err := CheckMountpoint(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("fusefs: /dev/fuse is missing: %w (load the fuse kernel module; in a container, pass the device in, e.g. docker run --device /dev/fuse --cap-add SYS_ADMIN)", err)
	}
	manifest, err := dataset.ReadManifest(store.Manifest().Dir())
	if err != nil {
		return nil, fmt.Errorf("fusefs: read manifest of %s: %w", store.Manifest().Dir(), err)
	}
	m := &View{
		store: store, dir: abs, opt: opt, manifest: manifest, mountedAt: time.Now(),
		served: make(chan struct{}), closing: make(chan struct{}), streams: map[*streamHandle]struct{}{},
	}
	m.types, m.edgeTypes = typedView(store.Session())
	entryTimeout, attrTimeout := time.Second, time.Duration(0)
	fsOpt := &fs.Options{
		EntryTimeout:    &entryTimeout, // names never change
		AttrTimeout:     &attrTimeout,  // sizes do
		NegativeTimeout: &entryTimeout,
		UID:             uint32(os.Getuid()),
		GID:             uint32(os.Getgid()),
		MountOptions: fuse.MountOptions{
			FsName:        "tierfs:" + store.Manifest().Dir(),
			Name:          "tierfs",
			Options:       []string{"ro"},
			DirectMount:   true,
			DisableXAttrs: true,
		},
	}
	_, noHelper := fusermountBinary()
	if noHelper != nil {
		// Without the helper there is nothing to fall back to: report mount(2)'s own error.
		fsOpt.DirectMountStrict = true
	}
	server, err := fuse.NewServer(fs.NewNodeFS(&rootDir{staticDir{m: m}}, fsOpt), abs, &fsOpt.MountOptions)
	if err != nil {
		return nil, mountError(dir, err, os.Geteuid() == 0, noHelper == nil)
	}
	go func() {
		server.Serve()
		close(m.served)
	}()
	if err := server.WaitMount(); err != nil {
		m.Unmount()
		return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
	}
	m.conn = connectionName(abs)
	store.OnClose(func() { m.Unmount() })
	for _, nt := range m.types {
		// The typed view reads every stack of the session: closing any of them unmounts first.
		if nt.stack != nil && nt.stack != store {
			nt.stack.OnClose(func() { m.Unmount() })
		}
	}
	return m, nil
}

// Dir is the absolute path of the mountpoint.
func (m *View) Dir() string { return m.dir }

// Wait blocks until the file system has stopped serving: after Unmount, store.Close or an unmount
// from outside. After a lazy unmount of a busy mount, that is once the last open file is closed.
func (m *View) Wait() { <-m.served }

// Unmount unmounts the view and returns once no FUSE request of it is in a store call or will
// start one; the store may then be closed. A busy mount (a file open, or a working directory
// inside it) is detached lazily: it disappears from the namespace at once, and its open files
// fail with EIO. Unmount is idempotent and safe for concurrent use; every call returns the
// first call's result.
func (m *View) Unmount() error {
	m.unmountOnce.Do(func() { m.unmountErr = m.unmount() })
	return m.unmountErr
}

func (m *View) unmount() error {
	close(m.closing)
	err := m.detach()
	m.gate.close()
	m.streamsMu.Lock()
	for h := range m.streams {
		h.stop()
	}
	m.streams = nil
	m.streamsMu.Unlock()
	return err
}

// detach takes the mount out of the namespace, lazily when it is busy, and waits a little for
// the server to stop. It never waits unboundedly: a lazily detached mount serves its open files
// until they close, unless fusectl can abort the connection, and a mount propagated to another
// mount namespace outlives our unmount. The gate, not the server stopping, keeps the store safe.
func (m *View) detach() error {
	if m.waitServed(0) {
		return nil // unmounted from outside
	}
	lazy, err := unmountDir(m.dir)
	if errors.Is(err, syscall.EINVAL) {
		// Not mounted any more: unmounted from outside, perhaps lazily with files still open.
		m.waitServed(serverStopTimeout / 8)
		return nil
	}
	if err != nil {
		return fmt.Errorf("fusefs: unmount %s: %w", m.dir, err)
	}
	if !lazy && m.waitServed(serverStopTimeout) {
		return nil
	}
	if abortConnection(m.conn) == nil {
		m.waitServed(serverStopTimeout)
	}
	return nil
}

// serverStopTimeout bounds how long Unmount waits for the server to stop once the kernel has let
// go of the mount.
const serverStopTimeout = 2 * time.Second

// waitServed waits up to timeout for the server to stop and reports whether it has.
func (m *View) waitServed(timeout time.Duration) bool {
	if timeout <= 0 {
		select {
		case <-m.served:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-m.served:
		return true
	case <-t.C:
		return false
	}
}

// Unmount unmounts the tierfs mount at dir, whichever process serves it; that process sees the
// unmount and stops serving. A busy mount is detached lazily. It fails when dir is not a tierfs
// mount.
func Unmount(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("fusefs: unmount %s: %w", dir, err)
	}
	// mountinfo names mountpoints without symlinks. Resolve the parent only: resolving dir itself
	// would ask the mount's server, which may be the thing that is stuck.
	if parent, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(parent, filepath.Base(abs))
	}
	fstype, err := mountType(abs)
	if err != nil {
		return err
	}
	if fstype == "" {
		return fmt.Errorf("fusefs: %s is not a mountpoint", dir)
	}
	if fstype != fsType {
		return fmt.Errorf("fusefs: %s is a %s mount, not tierfs", dir, fstype)
	}
	if _, err := unmountDir(abs); err != nil {
		return fmt.Errorf("fusefs: unmount %s: %w", dir, err)
	}
	return nil
}

// fsType is the type of tierfs mounts in /proc/self/mountinfo.
const fsType = "fuse.tierfs"

// errUnmounted is returned by requests that arrive once Unmount has started.
var errUnmounted = errors.New("fusefs: unmounted")

// gate admits FUSE requests to the store until it is closed; close waits for those admitted.
type gate struct {
	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
}

func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.inflight.Add(1)
	return true
}

func (g *gate) leave() { g.inflight.Done() }

func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.inflight.Wait()
}

// use runs fn, which may call the store, if the mount is not being unmounted.
func (m *View) use(fn func() error) error {
	if !m.gate.enter() {
		return errUnmounted
	}
	defer m.gate.leave()
	return fn()
}

// errno turns an error of a store call into what the reader sees.
func errno(err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, featurestore.ErrIDOutOfRange), errors.Is(err, dataset.ErrTypeNotFound):
		return syscall.ENOENT
	case errors.Is(err, errCanceled):
		return syscall.EINTR
	}
	return syscall.EIO
}
