package fusefs

import (
	"context"
	"iter"
	"strconv"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/tierfs/tierfs/embedding"
	"github.com/tierfs/tierfs/featurestore"
)

// Inode numbers: the static tree takes go-fuse's automatic numbers (from 2^63); nodes/<id>/ and
// its files take (id+1)<<3 | kind, so looking up the same path again finds the same inode.
const (
	inoNodeDir = iota
	inoFeatureBin
	inoFeatureTxt
	inoNeighbors
	inoTier
	inoLabel
)

func nodeIno(id int64, kind int) uint64 { return uint64(id+1)<<3 | uint64(kind) }

// readOnly answers every call that would change the tree with EROFS. The mount is made "ro", so
// the kernel refuses these before they arrive; this covers a mount made without it.
type readOnly struct{}

func (readOnly) Setattr(context.Context, fs.FileHandle, *fuse.SetAttrIn, *fuse.AttrOut) syscall.Errno {
	return syscall.EROFS
}

func (readOnly) Create(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EROFS
}

func (readOnly) Mkdir(context.Context, string, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (readOnly) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (readOnly) Link(context.Context, fs.InodeEmbedder, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (readOnly) Symlink(context.Context, string, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (readOnly) Unlink(context.Context, string) syscall.Errno { return syscall.EROFS }
func (readOnly) Rmdir(context.Context, string) syscall.Errno  { return syscall.EROFS }
func (readOnly) Rename(context.Context, string, fs.InodeEmbedder, string, uint32) syscall.Errno {
	return syscall.EROFS
}

// dir is a directory whose children are fixed when it is added.
type staticDir struct {
	fs.Inode
	readOnly
	m *View
}

func (d *staticDir) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.m.setAttr(&out.Attr, fuse.S_IFDIR|0o555, 0)
	return 0
}

func (m *View) setAttr(a *fuse.Attr, mode uint32, size int64) {
	a.Mode = mode
	a.Nlink = 1
	if mode&fuse.S_IFDIR != 0 {
		a.Nlink = 2
	}
	a.Size = uint64(size)
	a.Blocks = (uint64(size) + 511) / 512
	a.SetTimes(&m.mountedAt, &m.mountedAt, &m.mountedAt)
}

// addDir adds a directory child and returns it.
func (d *staticDir) addDir(ctx context.Context, name string) *staticDir {
	child := &staticDir{m: d.m}
	d.AddChild(name, d.NewPersistentInode(ctx, child, fs.StableAttr{Mode: fuse.S_IFDIR}), false)
	return child
}

func (d *staticDir) addFile(ctx context.Context, name string, f fs.InodeEmbedder) {
	d.AddChild(name, d.NewPersistentInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG}), false)
}

// rootDir is the mount's root; it builds the static tree when added.
type rootDir struct{ staticDir }

func (r *rootDir) OnAdd(ctx context.Context) {
	m := r.m
	r.addFile(ctx, "manifest.json", &genFile{m: m, gen: func() ([]byte, error) { return m.manifest, nil }})
	r.addFile(ctx, "stats.json", &genFile{m: m, gen: func() ([]byte, error) { return statsJSON(m.store) }})
	r.addFile(ctx, "placement.json", &genFile{m: m, gen: m.placementJSON})
	r.addTiers(ctx, m.store)
	nodes := &nodesDir{staticDir: staticDir{m: m}}
	r.AddChild("nodes", r.NewPersistentInode(ctx, nodes, fs.StableAttr{Mode: fuse.S_IFDIR}), false)
	nodes.addFile(ctx, nodesReadme, &genFile{m: m, gen: func() ([]byte, error) { return m.nodesReadme(), nil }})
	topo := r.addDir(ctx, "topology")
	topo.addFile(ctx, "degrees.txt", &genFile{m: m, gen: m.degreesSummary, size: m.degreesSize})
	if m.types != nil {
		r.addTyped(ctx)
	}
	if m.opt.Tables != nil {
		emb := &embeddingsDir{staticDir: staticDir{m: m}, shown: map[string]*embedding.Table{}}
		r.AddChild("embeddings", r.NewPersistentInode(ctx, emb, fs.StableAttr{Mode: fuse.S_IFDIR}), false)
	}
}

// addTiers adds tiers/{gpu,host,ssd}/ of store s to d.
func (d *staticDir) addTiers(ctx context.Context, s *featurestore.Store) {
	m := d.m
	tierDir := d.addDir(ctx, "tiers")
	for _, kind := range featurestore.TierKinds() {
		td := tierDir.addDir(ctx, string(kind))
		td.addFile(ctx, "summary.txt", &genFile{m: m, gen: func() ([]byte, error) { return tierSummary(s, kind), nil }})
		td.addFile(ctx, "ranges.txt", &streamFile{m: m, chunks: func() iter.Seq[[]byte] { return rangesText(tierRanges(s, kind)) }})
	}
}

// nodesReadme names the one entry nodes/ lists.
const nodesReadme = "README"

// nodesDir is nodes/ (or types/<ntype>/nodes/ when typ is set): it finds nodes/<id> by name and
// lists only its README.
type nodesDir struct {
	staticDir
	typ *nodeTypeView // nil: the mounted store's nodes
}

func (d *nodesDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if name == nodesReadme {
		child := d.GetChild(name)
		var a fuse.AttrOut
		if errno := child.Operations().(*genFile).Getattr(ctx, nil, &a); errno != 0 {
			return nil, errno
		}
		out.Attr = a.Attr
		return child, 0
	}
	if d.typ != nil {
		return d.lookupTypedNode(ctx, name, out)
	}
	id, ok := parseID(name, d.m.store.NumNodes())
	if !ok {
		return nil, syscall.ENOENT
	}
	d.m.setAttr(&out.Attr, fuse.S_IFDIR|0o555, 0)
	return d.NewInode(ctx, &nodeDir{staticDir: staticDir{m: d.m}, id: id}, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: nodeIno(id, inoNodeDir)}), 0
}

// parseID reads name as a node id in [0, n), in its canonical decimal form only.
func parseID(name string, n int64) (int64, bool) {
	id, err := strconv.ParseInt(name, 10, 64)
	if err != nil || id < 0 || id >= n || strconv.FormatInt(id, 10) != name {
		return 0, false
	}
	return id, true
}

func (d *nodesDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	return fs.NewListDirStream([]fuse.DirEntry{{Name: nodesReadme, Mode: fuse.S_IFREG}}), 0
}

// nodeDir is nodes/<id>/.
type nodeDir struct {
	staticDir
	id int64
}

// files lists the entries of nodes/<id>/ this dataset has, with their inode kinds.
func (d *nodeDir) files() []fuse.DirEntry {
	entries := []fuse.DirEntry{
		{Name: "feature.bin", Ino: nodeIno(d.id, inoFeatureBin)},
		{Name: "feature.txt", Ino: nodeIno(d.id, inoFeatureTxt)},
	}
	if d.m.store.Graph() != nil {
		entries = append(entries, fuse.DirEntry{Name: "neighbors.txt", Ino: nodeIno(d.id, inoNeighbors)})
	}
	entries = append(entries, fuse.DirEntry{Name: "tier", Ino: nodeIno(d.id, inoTier)})
	if d.m.store.Manifest().Nodes().Labels != nil {
		entries = append(entries, fuse.DirEntry{Name: "label", Ino: nodeIno(d.id, inoLabel)})
	}
	for i := range entries {
		entries[i].Mode = fuse.S_IFREG
	}
	return entries
}

func (d *nodeDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	return fs.NewListDirStream(d.files()), 0
}

func (d *nodeDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	m, id := d.m, d.id
	var f *genFile
	var ino uint64
	for _, e := range d.files() {
		if e.Name == name {
			ino = e.Ino
		}
	}
	switch ino & 7 {
	case inoFeatureBin:
		f = &genFile{m: m, gen: func() ([]byte, error) { return m.featureRow(id) }, size: func() (int64, error) { return m.store.RowBytes(), nil }}
	case inoFeatureTxt:
		f = &genFile{m: m, gen: func() ([]byte, error) { return m.featureText(id) }}
	case inoNeighbors:
		f = &genFile{m: m, gen: func() ([]byte, error) { return m.neighborsText(id) }}
	case inoTier:
		f = &genFile{m: m, gen: func() ([]byte, error) { return m.tierOf(id), nil }}
	case inoLabel:
		f = &genFile{m: m, gen: func() ([]byte, error) { return m.labelText(id) }}
	default:
		return nil, syscall.ENOENT
	}
	return lookupGenFile(ctx, &d.Inode, f, ino, out)
}

// genFile is a file whose content is made by gen on each open and fixed for that open file.
type genFile struct {
	fs.Inode
	readOnly
	m   *View
	gen func() ([]byte, error)
	// size, when set, is the file's size without making its content; otherwise stat makes it.
	size func() (int64, error)
}

func (f *genFile) Getattr(_ context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if snap, ok := fh.(*snapshot); ok {
		f.m.setAttr(&out.Attr, fuse.S_IFREG|0o444, int64(len(snap.data)))
		return 0
	}
	return f.m.fileAttr(out, func() (int64, error) {
		if f.size != nil {
			return f.size()
		}
		data, err := f.gen()
		return int64(len(data)), err
	})
}

// fileAttr fills out with a read-only file's attributes, its size what size says (in use).
func (m *View) fileAttr(out *fuse.AttrOut, size func() (int64, error)) syscall.Errno {
	var n int64
	if err := m.use(func() (err error) {
		n, err = size()
		return err
	}); err != nil {
		return errno(err)
	}
	m.setAttr(&out.Attr, fuse.S_IFREG|0o444, n)
	return 0
}

// writes says whether open flags ask to write (or truncate) a file.
func writes(flags uint32) bool {
	return flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0
}

func (f *genFile) Open(_ context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if writes(flags) {
		return nil, 0, syscall.EROFS
	}
	var data []byte
	if err := f.m.use(func() error {
		var err error
		data, err = f.gen()
		return err
	}); err != nil {
		return nil, 0, errno(err)
	}
	return &snapshot{data: data}, fuse.FOPEN_DIRECT_IO, 0
}

// streamFile is a file whose content is streamed in chunks from the store while it is read;
// stat counts the whole stream.
type streamFile struct {
	fs.Inode
	readOnly
	m      *View
	chunks func() iter.Seq[[]byte]
}

func (f *streamFile) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	return f.m.fileAttr(out, func() (int64, error) {
		var size int64
		for chunk := range f.chunks() {
			size += int64(len(chunk))
		}
		return size, nil
	})
}

func (f *streamFile) Open(_ context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if writes(flags) {
		return nil, 0, syscall.EROFS
	}
	h := &streamHandle{m: f.m, chunks: f.chunks}
	f.m.streamsMu.Lock()
	defer f.m.streamsMu.Unlock()
	if f.m.streams == nil {
		return nil, 0, syscall.EIO // unmounted
	}
	f.m.streams[h] = struct{}{}
	return h, fuse.FOPEN_DIRECT_IO, 0
}
