package embedding

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/internal/wfs"
)

// cache is a write-back cache of whole pages of one file in an mmap'ed arena (the kernel writes
// into it with O_DIRECT), evicted by CLOCK: a page used since the hand last passed is spared once.
// load brings a group of pages in at once, its reads and write-backs concurrent.
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
	gen  uint64 // the generation the file's pages are sealed as
}

type frame struct {
	page               int64 // -1: empty
	dirty, ref, pinned bool
}

// ioParallel is how many page reads and writes a load has in flight.
const ioParallel = 32

func newCache(l layout, id [16]byte, bytes int64, stats *Stats) (*cache, error) {
	n := bytes / int64(l.pageBytes)
	if n < 2 {
		return nil, invalid("embedding: host cache of %d bytes holds fewer than 2 pages of %d bytes", bytes, l.pageBytes)
	}
	n = min(n, l.pages)
	arena, err := unix.Mmap(-1, 0, int(n)*l.pageBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("embedding: host cache of %d pages: %w", n, err)
	}
	c := &cache{l: l, id: id, arena: arena, frames: make([]frame, n), where: make(map[int64]int32, n), stats: stats}
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
// pages outside ps; a dirty victim is written back before its frame is read into.
func (c *cache) load(ps []int64, dirty bool) ([][]byte, error) {
	type fill struct {
		f       int
		old     int64 // the victim's page to write back, -1 for none
		p       int64
		wrote   bool
		readErr error
	}
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
	var wg sync.WaitGroup
	sem := make(chan struct{}, ioParallel)
	for i := range fills {
		wg.Add(1)
		sem <- struct{}{}
		go func(x *fill) {
			defer func() { <-sem; wg.Done() }()
			b := c.bytesOf(x.f)
			if x.old >= 0 {
				if x.readErr = c.write(x.old, b); x.readErr != nil {
					return
				}
				x.wrote = true
			}
			x.readErr = c.read(x.p, b)
		}(&fills[i])
	}
	wg.Wait()
	var errs []error
	for _, x := range fills {
		if x.wrote {
			c.stats.PagesWritten++
		}
		if x.readErr != nil {
			errs = append(errs, x.readErr)
			if x.old >= 0 && !x.wrote { // the victim's data is still only here: keep it
				c.frames[x.f] = frame{page: x.old, dirty: true}
				c.where[x.old] = int32(x.f)
				c.stats.Dirty++
			}
			continue
		}
		c.stats.PagesRead++
		c.frames[x.f].page = x.p
		c.where[x.p] = int32(x.f)
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

func (c *cache) read(p int64, b []byte) error {
	n, err := c.file.ReadAt(b, p*int64(c.l.pageBytes))
	if n < len(b) {
		if err == nil {
			err = fmt.Errorf("short read")
		}
		return fmt.Errorf("embedding: reading page %d of %s: %w", p, c.name, err)
	}
	return check(c.id, p, c.gen, b, c.name)
}

// write seals b as page p and writes it.
func (c *cache) write(p int64, b []byte) error {
	seal(c.id, p, c.gen, b)
	if _, err := c.file.WriteAt(b, p*int64(c.l.pageBytes)); err != nil {
		return fmt.Errorf("embedding: writing page %d of %s: %w", p, c.name, err)
	}
	return nil
}

// flush writes every dirty page back.
func (c *cache) flush() error {
	for f := range c.frames {
		fr := &c.frames[f]
		if fr.page >= 0 && fr.dirty {
			if err := c.write(fr.page, c.bytesOf(f)); err != nil {
				return err
			}
			c.stats.PagesWritten++
			fr.dirty = false
			c.stats.Dirty--
		}
	}
	return nil
}

func (c *cache) free() error {
	if c.arena == nil {
		return nil
	}
	err := unix.Munmap(c.arena)
	c.arena = nil
	return err
}
