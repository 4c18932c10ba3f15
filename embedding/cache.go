package embedding

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/internal/wfs"
)

// cache is a write-back cache of whole pages of one file in an mmap'ed arena, evicted by CLOCK:
// a page used since the hand last passed is spared once. load brings a group of pages in at
// once: their reads in one submission to an IO stack (gpuio: io_uring into registered staging,
// pread where io_uring is unavailable), the dirty victims' write-backs, copied into the
// write-back buffer in page order, through a gpuio.Writer (io_uring WRITE_FIXED from that
// buffer, adjacent pages merged into one write; pwrite where io_uring is unavailable) at the
// same time as the reads.
type cache struct {
	l      layout
	id     [16]byte
	arena  []byte
	frames []frame
	where  map[int64]int32 // page index → frame
	hand   int
	stats  *Stats

	file wfs.File
	name string
	gen  uint64 // the generation being written: write-backs are sealed as it
	// loc is the working page map (see files.go): where each page's latest version is and the
	// generation it was sealed in. A page of an earlier generation is written back to its other
	// place, so the last checkpoint's places are never written; one of this generation in place.
	loc []uint32

	backend gpuio.Backend
	faults  gpuio.Injector
	stack   *gpuio.Stack  // reads file's pages; nil until the first read of a file
	writer  *gpuio.Writer // writes file's pages from wb; nil until the first write
	wb      []byte        // write-back buffer of wbPages pages (mmap'ed: O_DIRECT alignment)
	wbPages int
	// writesBefore counts the writes of writers closed (a checkpoint reopens the file).
	writesBefore uint64
}

type frame struct {
	page               int64 // -1: empty
	dirty, ref, pinned bool
}

const (
	ioDepth        = 32      // page reads in flight (the IO stack's queue depth), and writes
	writeBackBytes = 4 << 20 // the write-back buffer (at least one page)
)

func newCache(l layout, id [16]byte, bytes int64, backend gpuio.Backend, faults gpuio.Injector, stats *Stats) (*cache, error) {
	n := bytes / int64(l.pageBytes)
	if n < 2 {
		return nil, invalid("embedding: host cache of %d bytes holds fewer than 2 pages of %d bytes", bytes, l.pageBytes)
	}
	n = min(n, l.pages)
	arena, err := unix.Mmap(-1, 0, int(n)*l.pageBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("embedding: host cache of %d pages: %w", n, err)
	}
	wbPages := int(min(max(writeBackBytes/int64(l.pageBytes), 1), n))
	wb, err := unix.Mmap(-1, 0, wbPages*l.pageBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		unix.Munmap(arena)
		return nil, fmt.Errorf("embedding: write-back buffer of %d pages: %w", wbPages, err)
	}
	c := &cache{l: l, id: id, arena: arena, frames: make([]frame, n), where: make(map[int64]int32, n), stats: stats,
		backend: backend, faults: faults, wb: wb, wbPages: wbPages}
	for i := range c.frames {
		c.frames[i].page = -1
	}
	stats.CachePages = n
	return c, nil
}

func (c *cache) bytesOf(f int) []byte {
	return c.arena[f*c.l.pageBytes : (f+1)*c.l.pageBytes]
}

// load makes the distinct pages ps (at most the cache's frames) resident and returns their
// bytes in ps's order; dirty marks them so. The missing pages' frames are taken by CLOCK from
// pages outside ps.
func (c *cache) load(ps []int64, dirty bool) ([][]byte, error) {
	var fills []fill
	out := make([][]byte, len(ps))
	for _, p := range ps {
		if f, ok := c.where[p]; ok {
			c.frames[f].pinned = true
		}
	}
	for i, p := range ps {
		f, ok := c.where[p]
		if ok {
			c.stats.Hits++
		} else {
			c.stats.Misses++
			v := c.victim()
			fr := &c.frames[v]
			old := int64(-1)
			if fr.page >= 0 {
				c.stats.Evictions++
				delete(c.where, fr.page)
				if fr.dirty {
					old = fr.page
					c.stats.Dirty--
				}
			}
			*fr = frame{page: -1, pinned: true}
			fills = append(fills, fill{f: v, old: old, p: p})
			f = int32(v)
		}
		out[i] = c.bytesOf(int(f))
	}
	var errs []error
	for len(fills) > 0 {
		n, dirtyN := 0, 0
		for ; n < len(fills) && (fills[n].old < 0 || dirtyN < c.wbPages); n++ {
			if fills[n].old >= 0 {
				dirtyN++
			}
		}
		errs = append(errs, c.fill(fills[:n]))
		fills = fills[n:]
	}
	for _, p := range ps {
		if f, ok := c.where[p]; ok {
			fr := &c.frames[f]
			fr.pinned, fr.ref = false, true
			if dirty && !fr.dirty {
				fr.dirty = true
				c.stats.Dirty++
			}
		}
	}
	for i := range c.frames {
		c.frames[i].pinned = false
	}
	return out, errors.Join(errs...)
}

// fill is a frame to read page p into, and its victim's page old (-1: none) to write back from
// wb, a copy of the victim's bytes.
type fill struct {
	f                 int
	old, p            int64
	wb                []byte
	writeErr, readErr error
}

// fill reads fills' pages into their frames (at most wbPages of them with a dirty victim): the
// dirty victims are copied into the write-back buffer in page order and written, adjacent pages
// in one write, while the reads go to the IO stack in one submission. A victim whose write failed
// is put back (dirty) in its frame, and the page read there dropped.
func (c *cache) fill(fills []fill) error {
	var victims []*fill
	for i := range fills {
		if fills[i].old >= 0 {
			victims = append(victims, &fills[i])
		}
	}
	slices.SortFunc(victims, func(a, b *fill) int { return cmp.Compare(a.old, b.old) })
	reqs := make([]gpuio.WriteRequest, len(victims))
	for k, x := range victims {
		x.wb = c.wb[k*c.l.pageBytes : (k+1)*c.l.pageBytes]
		copy(x.wb, c.bytesOf(x.f))
		reqs[k] = c.writeRequest(x.old, x.wb)
	}
	var wg sync.WaitGroup
	if len(reqs) > 0 {
		if err := c.openIO(); err != nil {
			for i := range reqs {
				reqs[i].Err = err
			}
		} else {
			wg.Go(func() { c.writer.Write(reqs) }) // the writer and reqs are this goroutine's until Wait
		}
	}
	c.readPages(fills)
	wg.Wait()
	for k, x := range victims {
		x.writeErr = c.wrapWrite(reqs[k].Err, x.old)
	}
	var errs []error
	for i := range fills {
		x := &fills[i]
		if x.old >= 0 && x.writeErr != nil {
			errs = append(errs, x.writeErr)
			copy(c.bytesOf(x.f), x.wb)
			c.frames[x.f] = frame{page: x.old, dirty: true}
			c.where[x.old] = int32(x.f)
			c.stats.Dirty++
			continue
		}
		if x.old >= 0 {
			c.written(x.old)
			c.stats.PagesWritten++
		}
		if x.readErr != nil {
			errs = append(errs, x.readErr)
			continue
		}
		c.stats.PagesRead++
		c.frames[x.f].page = x.p
		c.where[x.p] = int32(x.f)
	}
	c.stats.WriteIOs = int64(c.writes())
	return errors.Join(errs...)
}

// writeRequest seals b (in wb) as page p and asks for it to be written to writePlace(p).
func (c *cache) writeRequest(p int64, b []byte) gpuio.WriteRequest {
	seal(c.id, p, c.gen, b)
	return gpuio.WriteRequest{Offset: c.l.pageOffset(p, c.writePlace(p)), Src: b}
}

// writePlace is where page p is written in this generation: where it is if it was written in it
// already, else its other place (the last checkpoint's stays as it is).
func (c *cache) writePlace(p int64) int {
	e := c.loc[p]
	if entryGen(e) == c.gen {
		return entryPlace(e)
	}
	return 1 - entryPlace(e)
}

// written records that page p's write-back succeeded: its latest version is this generation's.
func (c *cache) written(p int64) { c.loc[p] = entry(c.gen, c.writePlace(p)) }

// wrapWrite names page p in a write-back's error (nil stays nil).
func (c *cache) wrapWrite(err error, p int64) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("embedding: writing back page %d of %s: %w", p, c.name, err)
}

// writes is how many writes the writer issued (0 before the first).
func (c *cache) writes() uint64 {
	if c.writer == nil {
		return c.writesBefore
	}
	return c.writesBefore + c.writer.Stats().Writes
}

// openIO opens the IO stack and the writer of the file where they are not open.
func (c *cache) openIO() error {
	if c.stack == nil {
		s, err := gpuio.Open([]int{int(c.file.Fd())}, gpuio.Options{Backend: c.backend, QueueDepth: ioDepth, Faults: c.faults, Paths: []string{c.name}})
		if err != nil {
			return fmt.Errorf("embedding: the IO stack of %s: %w", c.name, err)
		}
		c.stack = s
	}
	if c.writer == nil {
		w, err := gpuio.OpenWriter([]int{int(c.file.Fd())}, c.wb, gpuio.Options{Backend: c.backend, QueueDepth: ioDepth, Faults: c.faults, Paths: []string{c.name}})
		if err != nil {
			return fmt.Errorf("embedding: the writer of %s: %w", c.name, err)
		}
		c.writer = w
	}
	return nil
}

// readPages reads fills' pages into their frames through the IO stack, in one submission, and
// checks each page's seal; it sets each fill's readErr.
func (c *cache) readPages(fills []fill) {
	fail := func(err error) {
		for i := range fills {
			fills[i].readErr = err
		}
	}
	if err := c.openIO(); err != nil {
		fail(err)
		return
	}
	reqs := make([]gpuio.Request, len(fills))
	for i := range fills {
		// Fields, not a copy of the fill: the write-back goroutines set writeErr meanwhile.
		p, f := fills[i].p, fills[i].f
		reqs[i] = gpuio.Request{Offset: c.l.pageOffset(p, entryPlace(c.loc[p])), Length: c.l.pageBytes, Dst: c.bytesOf(f)}
	}
	err := c.stack.Submit(reqs)
	if err == nil {
		err = c.stack.Complete()
	}
	if err != nil {
		c.stack.Close() // a stack whose reads failed is opened anew by the next read
		c.stack = nil
		fail(fmt.Errorf("embedding: reading %d pages (%d..) of %s: %w", len(fills), fills[0].p, c.name, err))
		return
	}
	for i := range fills {
		x := &fills[i]
		x.readErr = check(c.id, x.p, entryGen(c.loc[x.p]), c.bytesOf(x.f), c.name)
	}
}

// closeIO closes the IO stack and the writer of the file (before the file is closed).
func (c *cache) closeIO() error {
	var errs []error
	if c.stack != nil {
		errs = append(errs, c.stack.Close())
		c.stack = nil
	}
	if c.writer != nil {
		c.writesBefore += c.writer.Stats().Writes
		errs = append(errs, c.writer.Close())
		c.writer = nil
	}
	return errors.Join(errs...)
}

// victim is the frame CLOCK gives up next, never a pinned one (load pins at most as many pages as
// there are frames, and leaves one unpinned frame per page it still needs).
func (c *cache) victim() int {
	for {
		f := c.hand
		c.hand = (c.hand + 1) % len(c.frames)
		fr := &c.frames[f]
		switch {
		case fr.pinned:
		case fr.page < 0:
			return f
		case fr.ref:
			fr.ref = false
		default:
			return f
		}
	}
}

// flush writes every dirty page back, wbPages at a time in page order (adjacent pages in one
// write). A page whose write failed stays dirty.
func (c *cache) flush() error {
	var dirty []int
	for f := range c.frames {
		if fr := &c.frames[f]; fr.page >= 0 && fr.dirty {
			dirty = append(dirty, f)
		}
	}
	slices.SortFunc(dirty, func(a, b int) int { return cmp.Compare(c.frames[a].page, c.frames[b].page) })
	if len(dirty) > 0 {
		if err := c.openIO(); err != nil {
			return err
		}
	}
	var errs []error
	for len(dirty) > 0 {
		group := dirty[:min(len(dirty), c.wbPages)]
		dirty = dirty[len(group):]
		reqs := make([]gpuio.WriteRequest, len(group))
		for k, f := range group {
			b := c.wb[k*c.l.pageBytes : (k+1)*c.l.pageBytes]
			copy(b, c.bytesOf(f))
			reqs[k] = c.writeRequest(c.frames[f].page, b)
		}
		c.writer.Write(reqs)
		for k, f := range group {
			if err := c.wrapWrite(reqs[k].Err, c.frames[f].page); err != nil {
				errs = append(errs, err)
				continue
			}
			c.written(c.frames[f].page)
			c.stats.PagesWritten++
			c.frames[f].dirty = false
			c.stats.Dirty--
		}
	}
	c.stats.WriteIOs = int64(c.writes())
	if len(errs) > 1 {
		return fmt.Errorf("%w (and %d more pages)", errs[0], len(errs)-1)
	}
	return errors.Join(errs...)
}

func (c *cache) free() error {
	if c.arena == nil {
		return nil
	}
	err := errors.Join(c.closeIO(), unix.Munmap(c.arena), unix.Munmap(c.wb))
	c.arena, c.wb = nil, nil
	return err
}
