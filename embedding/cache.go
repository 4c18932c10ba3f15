package embedding

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/internal/wfs"
)

// cache is a write-back cache of whole pages of one file in an mmap'ed arena (the kernel writes
// into it with O_DIRECT), evicted by CLOCK: a page used since the hand last passed is spared once.
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
	page       int64 // -1: empty
	dirty, ref bool
}

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

// page is page p's bytes in the cache, read (and checked) on a miss; dirty marks it so.
func (c *cache) page(p int64, dirty bool) ([]byte, error) {
	if f, ok := c.where[p]; ok {
		c.stats.Hits++
		fr := &c.frames[f]
		fr.ref = true
		if dirty && !fr.dirty {
			fr.dirty = true
			c.stats.Dirty++
		}
		return c.bytesOf(int(f)), nil
	}
	c.stats.Misses++
	f, err := c.victim()
	if err != nil {
		return nil, err
	}
	b := c.bytesOf(f)
	if err := c.read(p, b); err != nil {
		return nil, err
	}
	c.frames[f] = frame{page: p, dirty: dirty, ref: true}
	c.where[p] = int32(f)
	if dirty {
		c.stats.Dirty++
	}
	return b, nil
}

// victim empties a frame (writing it back if dirty) and returns it.
func (c *cache) victim() (int, error) {
	for {
		f := c.hand
		c.hand = (c.hand + 1) % len(c.frames)
		fr := &c.frames[f]
		if fr.page < 0 {
			return f, nil
		}
		if fr.ref {
			fr.ref = false
			continue
		}
		if fr.dirty {
			if err := c.write(fr.page, c.bytesOf(f)); err != nil {
				return 0, err
			}
			fr.dirty = false
			c.stats.Dirty--
		}
		c.stats.Evictions++
		delete(c.where, fr.page)
		fr.page = -1
		return f, nil
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
	c.stats.PagesRead++
	return check(c.id, p, c.gen, b, c.name)
}

// write seals b as page p and writes it.
func (c *cache) write(p int64, b []byte) error {
	seal(c.id, p, c.gen, b)
	if _, err := c.file.WriteAt(b, p*int64(c.l.pageBytes)); err != nil {
		return fmt.Errorf("embedding: writing page %d of %s: %w", p, c.name, err)
	}
	c.stats.PagesWritten++
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
