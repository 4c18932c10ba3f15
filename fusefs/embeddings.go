package fusefs

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/embedding"
)

// The embeddings view (embeddings/): the trainable tables open in the mounting process whose
// rows are the mounted dataset's nodes (docs/embedding.md), listed as they open and close.

// embeddingsDir is embeddings/: one directory per open table of the dataset, named by its node
// type (a second table of a type open at once: "<type>.<first 8 hex digits of its table id>").
type embeddingsDir struct {
	staticDir
	mu    sync.Mutex                  // held while syncing and listing
	shown map[string]*embedding.Table // the tables its children show now, by name
}

// openTables names the tables open now whose rows are the mounted dataset's nodes.
func (m *View) openTables() map[string]*embedding.Table {
	if m.opt.Tables == nil {
		return nil
	}
	datasetID := m.store.Session().Manifest().DatasetID
	types := map[string]bool{}
	for _, nt := range m.store.Session().NodeTypes() {
		types[nt.Name] = true
	}
	var tables []*embedding.Table
	infos := map[*embedding.Table]embedding.Info{}
	perType := map[string]int{}
	for _, t := range m.opt.Tables() {
		info := t.Info()
		if info.DatasetID != datasetID || !types[info.NodeType] {
			continue
		}
		tables = append(tables, t)
		infos[t] = info
		perType[info.NodeType]++
	}
	named := make(map[string]*embedding.Table, len(tables))
	for _, t := range tables {
		name := infos[t].NodeType
		if perType[name] > 1 {
			name += "." + infos[t].TableID[:min(8, len(infos[t].TableID))]
		}
		named[name] = t
	}
	return named
}

// sync makes the directory's children the tables open now.
func (d *embeddingsDir) sync(ctx context.Context) {
	if !d.m.gate.enter() {
		return // unmounting
	}
	defer d.m.gate.leave()
	now := d.m.openTables()
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, t := range d.shown {
		if now[name] != t {
			d.RmChild(name)
			delete(d.shown, name)
		}
	}
	for name, t := range now {
		if d.shown[name] == t {
			continue
		}
		td := &tableDir{staticDir: staticDir{m: d.m}, t: t}
		d.AddChild(name, d.NewPersistentInode(ctx, td, fs.StableAttr{Mode: fuse.S_IFDIR}), true)
		d.shown[name] = t
	}
}

func (d *embeddingsDir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	d.sync(ctx)
	d.mu.Lock()
	names := make([]string, 0, len(d.shown))
	for name := range d.shown {
		names = append(names, name)
	}
	d.mu.Unlock()
	slices.Sort(names)
	entries := make([]fuse.DirEntry, len(names))
	for i, name := range names {
		entries[i] = fuse.DirEntry{Name: name, Mode: fuse.S_IFDIR}
	}
	return fs.NewListDirStream(entries), 0
}

func (d *embeddingsDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	d.sync(ctx)
	child := d.GetChild(name)
	if child == nil {
		return nil, syscall.ENOENT
	}
	d.m.setAttr(&out.Attr, fuse.S_IFDIR|0o555, 0)
	// The name goes when the table closes: the kernel keeps it for the least time it can (a
	// jiffy; 0 would be the mount's default). A name not found is kept 1 s, as elsewhere.
	out.SetEntryTimeout(time.Nanosecond)
	return child, 0
}

// tableDir is embeddings/<name>/: the table's info, stats, tiers and rows.
type tableDir struct {
	staticDir
	t *embedding.Table
}

func (d *tableDir) OnAdd(ctx context.Context) {
	m, t := d.m, d.t
	d.addFile(ctx, "info.txt", &genFile{m: m, gen: func() ([]byte, error) { return tableInfoText(t), nil }})
	d.addFile(ctx, "stats.json", &genFile{m: m, gen: func() ([]byte, error) { return tableStatsJSON(t) }})
	tierDir := d.addDir(ctx, "tiers")
	for _, kind := range []string{"gpu", "host", "ssd"} {
		td := tierDir.addDir(ctx, kind)
		td.addFile(ctx, "summary.txt", &genFile{m: m, gen: func() ([]byte, error) { return tableTierSummary(t, kind), nil }})
		td.addFile(ctx, "ranges.txt", &streamFile{m: m, chunks: func() iter.Seq[[]byte] { return rangesText(tableRanges(t, kind)) }})
	}
	nodes := &tableNodesDir{staticDir: staticDir{m: m}, t: t}
	d.AddChild("nodes", d.NewPersistentInode(ctx, nodes, fs.StableAttr{Mode: fuse.S_IFDIR}), false)
	nodes.addFile(ctx, nodesReadme, &genFile{m: m, gen: func() ([]byte, error) { return tableReadme(t), nil }})
}

// tableInfoText is info.txt: "key value" lines of the table's Info and directory.
func tableInfoText(t *embedding.Table) []byte {
	i := t.Info()
	return fmt.Appendf(nil, "node_type %s\npath %s\ntable_id %s\nrows %d\ndim %d\ndtype %s\noptimizer %s\n"+
		"generation %d\nstep %d\nslot_floats %d\npage_bytes %d\nrows_per_page %d\npages %d\ndirect_io %t\nhost_cache_bytes %d\n",
		i.NodeType, t.Dir(), i.TableID, i.Rows, i.Dim, i.DType, i.Optimizer.Name,
		i.Generation, i.Step, i.SlotFloats, i.PageBytes, i.RowsPerPage, i.Pages, i.DirectIO, i.HostCacheMax)
}

// tableStatsJSON is stats.json: the table's counters since it was opened, and its cache now.
func tableStatsJSON(t *embedding.Table) ([]byte, error) {
	pages, _ := t.CachedPages(nil)
	st := struct {
		embedding.Stats
		CachedPages int64  `json:"cached_pages"`
		Generation  uint64 `json:"generation"`
		Step        int64  `json:"step"`
	}{Stats: t.Stats(), CachedPages: int64(len(pages))}
	info := t.Info()
	st.Generation, st.Step = info.Generation, info.Step
	data, err := json.MarshalIndent(st, "", "  ")
	return append(data, '\n'), err
}

// cachedRows is the number of rows of the pages the cache holds, ascending.
func cachedRows(pages []int64, info embedding.Info) int64 {
	var rows int64
	for _, p := range pages {
		first := p * int64(info.RowsPerPage)
		rows += min(first+int64(info.RowsPerPage), info.Rows) - first
	}
	return rows
}

// tableTierSummary is tiers/<kind>/summary.txt of a table: "key value" lines as a feature's,
// with the page cache's state (host) and the checkpoint's (ssd).
func tableTierSummary(t *embedding.Table, kind string) []byte {
	info, st := t.Info(), t.Stats()
	b := fmt.Appendf(nil, "tier %s\n", kind)
	switch kind {
	case "gpu":
		return append(b, "present no\nnote a table's rows are on the GPU only while a step runs (docs/embedding.md)\n"...)
	case "host":
		pages, dirty := t.CachedPages(nil)
		return fmt.Appendf(b, "present yes\nrows %d\nbytes %d\nnodes %d\npages %d\ndirty_pages %d\ncache_pages %d\nhits %d\nmisses %d\nevictions %d\n",
			cachedRows(pages, info), int64(len(pages))*int64(info.PageBytes), info.Rows, len(pages), dirty, st.CachePages, st.Hits, st.Misses, st.Evictions)
	}
	return fmt.Appendf(b, "present yes\nrows %d\nbytes %d\nnodes %d\npages %d\ngeneration %d\nstep %d\npages_read %d\npages_written %d\ncheckpoints %d\n",
		info.Rows, info.Pages*int64(info.PageBytes), info.Rows, info.Pages, info.Generation, info.Step, st.PagesRead, st.PagesWritten, st.Checkpoints)
}

// tableRanges yields the runs of row ids tier kind of a table holds: the cache's pages' rows
// (host), every row (ssd), none (gpu).
func tableRanges(t *embedding.Table, kind string) func(fn func(first, count int64) bool) {
	return func(fn func(first, count int64) bool) {
		info := t.Info()
		switch kind {
		case "ssd":
			if info.Rows > 0 {
				fn(0, info.Rows)
			}
			return
		case "gpu":
			return
		}
		pages, _ := t.CachedPages(nil)
		per := int64(info.RowsPerPage)
		for i := 0; i < len(pages); {
			j := i + 1
			for j < len(pages) && pages[j] == pages[j-1]+1 {
				j++
			}
			first := pages[i] * per
			if !fn(first, min(pages[j-1]*per+per, info.Rows)-first) {
				return
			}
			i = j
		}
	}
}

// tableReadme is embeddings/<name>/nodes/README.
func tableReadme(t *embedding.Table) []byte {
	i := t.Info()
	b := fmt.Appendf(nil, "nodes/<id>/ holds row <id> of the embedding table of node type %q, for a decimal id in\n", i.NodeType)
	b = fmt.Appendf(b, "[0, %d). Directories are found by name and never listed: cat nodes/42/feature.txt.\n\n", i.Rows)
	b = fmt.Appendf(b, "  feature.bin    the row: %d x float32, %d bytes, read through the table (its cache)\n", i.Dim, 4*i.Dim)
	b = append(b, "  feature.txt    its values, one per line\n"...)
	return append(b, "  tier           host when the table's page cache holds the row, else ssd\n"...)
}

// tableNodesDir is embeddings/<name>/nodes/: finds nodes/<id> by name, lists only its README.
type tableNodesDir struct {
	staticDir
	t *embedding.Table
}

func (d *tableNodesDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	return fs.NewListDirStream([]fuse.DirEntry{{Name: nodesReadme, Mode: fuse.S_IFREG}}), 0
}

func (d *tableNodesDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if name == nodesReadme {
		f := d.GetChild(name)
		var a fuse.AttrOut
		if errno := f.Operations().(*genFile).Getattr(ctx, nil, &a); errno != 0 {
			return nil, errno
		}
		out.Attr = a.Attr
		return f, 0
	}
	id, ok := parseID(name, d.t.Info().Rows)
	if !ok {
		return nil, syscall.ENOENT
	}
	d.m.setAttr(&out.Attr, fuse.S_IFDIR|0o555, 0)
	return d.NewInode(ctx, &tableRowDir{staticDir: staticDir{m: d.m}, t: d.t, id: id}, fs.StableAttr{Mode: fuse.S_IFDIR}), 0
}

// tableRowDir is embeddings/<name>/nodes/<id>/.
type tableRowDir struct {
	staticDir
	t  *embedding.Table
	id int64
}

var tableRowFiles = []string{"feature.bin", "feature.txt", "tier"}

func (d *tableRowDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	entries := make([]fuse.DirEntry, len(tableRowFiles))
	for i, name := range tableRowFiles {
		entries[i] = fuse.DirEntry{Name: name, Mode: fuse.S_IFREG}
	}
	return fs.NewListDirStream(entries), 0
}

func (d *tableRowDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	m, t, id := d.m, d.t, d.id
	var f *genFile
	switch name {
	case "feature.bin":
		f = &genFile{m: m, gen: func() ([]byte, error) { return tableRow(t, id) }, size: func() (int64, error) { return 4 * int64(t.Info().Dim), nil }}
	case "feature.txt":
		f = &genFile{m: m, gen: func() ([]byte, error) {
			row, err := tableRow(t, id)
			if err != nil {
				return nil, err
			}
			return appendValues(nil, dataset.Float32, row)
		}}
	case "tier":
		f = &genFile{m: m, gen: func() ([]byte, error) {
			if t.RowCached(id) {
				return []byte("host\n"), nil
			}
			return []byte("ssd\n"), nil
		}}
	default:
		return nil, syscall.ENOENT
	}
	return lookupGenFile(ctx, &d.Inode, f, 0, out)
}

// tableRow is row id of a table as little-endian float32 bytes, gathered through the table.
func tableRow(t *embedding.Table, id int64) ([]byte, error) {
	row := make([]float32, t.Info().Dim)
	if err := t.Gather([]int64{id}, row); err != nil {
		return nil, err
	}
	b := make([]byte, 4*len(row))
	for i, v := range row {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b, nil
}
