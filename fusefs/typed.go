package fusefs

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/tierfs/tierfs/featurestore"
)

// The typed view (types/, edge_types/) of a typed dataset (several node or edge types, or one
// named type): every node
// type through the session's typed calls, ids local to their type (ARCHITECTURE.md, "Types").

// nodeTypeView is one node type of the typed view, fixed at mount.
type nodeTypeView struct {
	index int // in the manifest's order
	info  featurestore.NodeTypeInfo
	stack *featurestore.Store // serves its default feature; nil for a type without features
	in    []string            // keys of the edge types whose dst it is, in the manifest's order
}

// typedView is the session's node and edge types, or nil when the dataset is untyped (a
// homogeneous graph, Session.Typed): such a dataset has only the one-type tree.
func typedView(sess *featurestore.Session) ([]*nodeTypeView, []featurestore.EdgeTypeInfo) {
	if !sess.Typed() {
		return nil, nil
	}
	nts, ets := sess.NodeTypes(), sess.EdgeTypes()
	views := make([]*nodeTypeView, len(nts))
	for i, info := range nts {
		v := &nodeTypeView{index: i, info: info}
		if s, err := sess.Stack(info.Name); err == nil {
			v.stack = s
		}
		for _, et := range ets {
			if et.Dst == info.Name {
				v.in = append(v.in, et.Key)
			}
		}
		views[i] = v
	}
	return views, ets
}

// Inode numbers of the typed view: 1<<62 | (type+1)<<48 | (id+1)<<8 | kind, apart from the
// one-type tree's (below 2^62 for any id a dataset can hold) and go-fuse's automatic ones (from
// 2^63). Where type, id or kind do not fit, the inode takes an automatic number.
const (
	inoTypedNeighborsDir = inoLabel + 1 // nodes/<id>/neighbors/
	inoTypedNeighbors    = 8            // neighbors/<key>.txt of the type's k-th in-edge type: 8+k
)

func typedIno(t int, id int64, kind int) uint64 {
	if t+1 >= 1<<14 || id+1 >= 1<<40 || kind >= 1<<8 {
		return 0
	}
	return 1<<62 | uint64(t+1)<<48 | uint64(id+1)<<8 | uint64(kind)
}

// addTyped adds types/ and edge_types/ to the root.
func (r *rootDir) addTyped(ctx context.Context) {
	m := r.m
	typesDir := r.addDir(ctx, "types")
	for _, nt := range m.types {
		d := typesDir.addDir(ctx, nt.info.Name)
		d.addFile(ctx, "info.txt", &genFile{m: m, gen: func() ([]byte, error) { return nt.infoText(), nil }})
		if nt.stack != nil {
			d.addFile(ctx, "stats.json", &genFile{m: m, gen: func() ([]byte, error) { return typeStatsJSON(nt.stack) }})
			d.addTiers(ctx, nt.stack)
		}
		nodes := &nodesDir{staticDir: staticDir{m: m}, typ: nt}
		d.AddChild("nodes", d.NewPersistentInode(ctx, nodes, fs.StableAttr{Mode: fuse.S_IFDIR}), false)
		nodes.addFile(ctx, nodesReadme, &genFile{m: m, gen: func() ([]byte, error) { return m.typedReadme(nt), nil }})
	}
	edgesDir := r.addDir(ctx, "edge_types")
	for _, et := range m.edgeTypes {
		d := edgesDir.addDir(ctx, et.Key)
		text := fmt.Appendf(nil, "src %s\nrel %s\ndst %s\ncount %d\n", et.Src, et.Rel, et.Dst, et.Count)
		d.addFile(ctx, "info.txt", &genFile{m: m, gen: func() ([]byte, error) { return text, nil }})
	}
}

// infoText is types/<ntype>/info.txt: "key value" lines.
func (nt *nodeTypeView) infoText() []byte {
	b := fmt.Appendf(nil, "name %s\nnodes %d\n", nt.info.Name, nt.info.Count)
	if nt.stack != nil {
		f := nt.stack.Feature()
		b = fmt.Appendf(b, "feature %s\ndim %d\ndtype %s\nrow_bytes %d\n", f.Name, f.Dim, f.DType, f.RowBytes)
	} else {
		b = append(b, "feature none\n"...)
	}
	if nt.info.Labels {
		b = fmt.Appendf(b, "labels yes\nclasses %d\n", nt.info.NumClasses)
	} else {
		b = append(b, "labels no\n"...)
	}
	return fmt.Appendf(b, "in_edge_types %s\n", strings.Join(nt.in, " "))
}

// typeStatsJSON is types/<ntype>/stats.json: the Stats of the type's stack alone.
func typeStatsJSON(s *featurestore.Store) ([]byte, error) {
	st := s.Stats()
	st.NodeTypes = nil // the stack of the mounted store reports every type's
	data, err := json.MarshalIndent(st, "", "  ")
	return append(data, '\n'), err
}

// typedReadme is types/<ntype>/nodes/README.
func (m *View) typedReadme(nt *nodeTypeView) []byte {
	b := fmt.Appendf(nil, "nodes/<id>/ holds node <id> of type %q, for a decimal id in [0, %d). Directories are\n", nt.info.Name, nt.info.Count)
	b = append(b, "found by name and never listed: ls nodes/42/, cat nodes/42/feature.txt.\n\n"...)
	if nt.stack != nil {
		f := nt.stack.Feature()
		b = fmt.Appendf(b, "  feature.bin    the feature row of feature %q: %d x %s, %d bytes, read through the type's stack\n", f.Name, f.Dim, f.DType, f.RowBytes)
		b = append(b, "  feature.txt    its values, one per line\n"...)
		b = append(b, "  tier           the fastest tier of the type's stack holding the row: gpu, host or ssd\n"...)
	}
	if nt.info.Labels {
		b = append(b, "  label          the node's label, -1 when unlabelled\n"...)
	}
	if len(nt.in) > 0 {
		b = append(b, "  neighbors/     <src:rel:dst>.txt for each edge type whose dst is this type: the node's\n"...)
		b = append(b, "                 in-neighbors along it, ids of its src type, one per line\n"...)
	}
	return b
}

// lookupTypedNode is types/<ntype>/nodes/<id>.
func (d *nodesDir) lookupTypedNode(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	nt := d.typ
	id, ok := parseID(name, nt.info.Count)
	if !ok {
		return nil, syscall.ENOENT
	}
	d.m.setAttr(&out.Attr, fuse.S_IFDIR|0o555, 0)
	return d.NewInode(ctx, &typedNodeDir{staticDir: staticDir{m: d.m}, typ: nt, id: id}, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: typedIno(nt.index, id, inoNodeDir)}), 0
}

// typedNodeDir is types/<ntype>/nodes/<id>/.
type typedNodeDir struct {
	staticDir
	typ *nodeTypeView
	id  int64
}

func (d *typedNodeDir) files() []fuse.DirEntry {
	nt, id := d.typ, d.id
	var entries []fuse.DirEntry
	if nt.stack != nil {
		entries = append(entries,
			fuse.DirEntry{Name: "feature.bin", Mode: fuse.S_IFREG, Ino: typedIno(nt.index, id, inoFeatureBin)},
			fuse.DirEntry{Name: "feature.txt", Mode: fuse.S_IFREG, Ino: typedIno(nt.index, id, inoFeatureTxt)},
			fuse.DirEntry{Name: "tier", Mode: fuse.S_IFREG, Ino: typedIno(nt.index, id, inoTier)})
	}
	if nt.info.Labels {
		entries = append(entries, fuse.DirEntry{Name: "label", Mode: fuse.S_IFREG, Ino: typedIno(nt.index, id, inoLabel)})
	}
	if len(nt.in) > 0 {
		entries = append(entries, fuse.DirEntry{Name: "neighbors", Mode: fuse.S_IFDIR, Ino: typedIno(nt.index, id, inoTypedNeighborsDir)})
	}
	return entries
}

func (d *typedNodeDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	return fs.NewListDirStream(d.files()), 0
}

func (d *typedNodeDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	m, nt, id := d.m, d.typ, d.id
	var entry *fuse.DirEntry
	for _, e := range d.files() {
		if e.Name == name {
			entry = &e
		}
	}
	if entry == nil {
		return nil, syscall.ENOENT
	}
	if name == "neighbors" {
		m.setAttr(&out.Attr, fuse.S_IFDIR|0o555, 0)
		return d.NewInode(ctx, &neighborsDir{staticDir: staticDir{m: m}, typ: nt, id: id}, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: entry.Ino}), 0
	}
	var f *genFile
	switch name {
	case "feature.bin":
		f = &genFile{m: m, gen: func() ([]byte, error) { return m.typedRow(nt, id) }, size: func() (int64, error) { return nt.stack.RowBytes(), nil }}
	case "feature.txt":
		f = &genFile{m: m, gen: func() ([]byte, error) { return m.typedText(nt, id) }}
	case "tier":
		f = &genFile{m: m, gen: func() ([]byte, error) { return []byte(nt.stack.TierOf(id) + "\n"), nil }}
	case "label":
		f = &genFile{m: m, gen: func() ([]byte, error) { return m.typedLabel(nt, id) }}
	}
	return lookupGenFile(ctx, &d.Inode, f, entry.Ino, out)
}

// lookupGenFile makes the inode of f, a child of parent, with its attributes in out.
func lookupGenFile(ctx context.Context, parent *fs.Inode, f *genFile, ino uint64, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var a fuse.AttrOut
	if errno := f.Getattr(ctx, nil, &a); errno != 0 {
		return nil, errno
	}
	out.Attr = a.Attr
	return parent.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: ino}), 0
}

// neighborsDir is types/<ntype>/nodes/<id>/neighbors/: <src:rel:dst>.txt for each edge type
// whose dst is the node's type.
type neighborsDir struct {
	staticDir
	typ *nodeTypeView
	id  int64
}

func (d *neighborsDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	entries := make([]fuse.DirEntry, len(d.typ.in))
	for k, key := range d.typ.in {
		entries[k] = fuse.DirEntry{Name: key + ".txt", Mode: fuse.S_IFREG, Ino: typedIno(d.typ.index, d.id, inoTypedNeighbors+k)}
	}
	return fs.NewListDirStream(entries), 0
}

func (d *neighborsDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	m, id := d.m, d.id
	for k, key := range d.typ.in {
		if name == key+".txt" {
			f := &genFile{m: m, gen: func() ([]byte, error) { return m.typedNeighbors(key, id) }}
			return lookupGenFile(ctx, &d.Inode, f, typedIno(d.typ.index, id, inoTypedNeighbors+k), out)
		}
	}
	return nil, syscall.ENOENT
}

// typedRow is the row of node id of type nt's default feature, gathered through its stack.
func (m *View) typedRow(nt *nodeTypeView, id int64) ([]byte, error) {
	row := make([]byte, nt.stack.RowBytes())
	if err := m.store.Session().Gather(nt.info.Name, "", []int64{id}, row); err != nil {
		return nil, err
	}
	return row, nil
}

func (m *View) typedText(nt *nodeTypeView, id int64) ([]byte, error) {
	row, err := m.typedRow(nt, id)
	if err != nil {
		return nil, err
	}
	return appendValues(nil, nt.stack.Feature().DType, row)
}

func (m *View) typedLabel(nt *nodeTypeView, id int64) ([]byte, error) {
	label := make([]int64, 1)
	if err := m.store.Session().Labels(nt.info.Name, []int64{id}, label); err != nil {
		return nil, err
	}
	return append(strconv.AppendInt(nil, label[0], 10), '\n'), nil
}

// typedNeighbors lists the in-neighbors of node id along edge type key, one per line.
func (m *View) typedNeighbors(key string, id int64) ([]byte, error) {
	ids, err := m.store.Session().Neighbors(key, id)
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, v := range ids {
		out = strconv.AppendInt(out, v, 10)
		out = append(out, '\n')
	}
	return out, nil
}
