package host

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/internal/wfs"
	"github.com/tierfs/tierfs/tiers"
)

// A shared host tier is a Cache whose index and arena live in one file in shared memory (a tmpfs
// such as /dev/shm), so the processes of one host (the ranks of a torch.distributed job) serve
// the same rows from one copy: one process fills it (FillShared), the others map it (MapShared).
//
// The file, all little-endian:
//
//	[0, 64)            header: magic "TFSHOST3", row bytes, rows, table length, ready, creator pid,
//	                   checksum, key (the xxhash64 of the caller's key)
//	[64, 64+8·rows)    the ids held, ascending (Index.ids)
//	then               the hash table, table length int32s (Index.table)
//	from a page        the arena: rows × row bytes, row i for ids[i]
//
// The ready word is set (atomically) after everything else is written: MapShared refuses a file
// whose creator has not finished, so a half-filled tier is never served. The checksum is the
// xxhash64 of the header's other words, the index and every row (contentSum); MapShared checks
// it, so a byte of the file changed after its creator filled it is refused, not served as a
// feature. The key names what the rows are (the caller's: a store's dataset, node type and
// feature); MapShared refuses a file filled under another key, so a tier file of another
// dataset, node type or feature of the same row width is not served as this one's rows. (Once mapped, the file is read-only in every process that maps it; a process that
// writes it after that through its own writable mapping is not detected.) The file is mapped
// read-only once filled, in every process; a process that pins it for a GPU makes its arena
// writable first (cudaHostRegister pins pages for writing) and still never writes it. Removing
// the file (os.Remove) when every process has mapped it leaves nothing behind when the processes
// end, however they end.
const (
	sharedMagic       = "TFSHOST3"
	sharedHeaderBytes = 64
	sharedReadyOffset = 32
	sharedSumOffset   = 48
	sharedKeyOffset   = 56
)

// keySum is the header's key word for key.
func keySum(key string) uint64 { return xxhash.Sum64String(key) }

// contentSum is the checksum a shared tier file's header holds: the xxhash64 of the header's
// words but the ready word and the checksum itself, then everything after the header.
func contentSum(mem []byte) uint64 {
	d := xxhash.New()
	d.Write(mem[:sharedReadyOffset])
	d.Write(mem[sharedReadyOffset+8 : sharedSumOffset])
	d.Write(mem[sharedSumOffset+8:])
	return d.Sum64()
}

// sharedFile is the mapping of a shared host tier's file.
type sharedFile struct {
	path    string
	mem     []byte // the whole file, MAP_SHARED
	created bool   // FillShared made it (else MapShared)
	pinned  bool   // its arena was made writable for pinning
}

// sharedLayout is where the parts of a shared tier's file lie.
type sharedLayout struct {
	rows, tableLen, rowBytes int64
	tableOff, arenaOff, size int64
}

func layoutOf(rows, tableLen, rowBytes int64) sharedLayout {
	l := sharedLayout{rows: rows, tableLen: tableLen, rowBytes: rowBytes}
	l.tableOff = sharedHeaderBytes + 8*rows
	page := int64(os.Getpagesize())
	l.arenaOff = (l.tableOff + 4*tableLen + page - 1) / page * page
	l.size = l.arenaOff + rows*rowBytes
	return l
}

// view points index and arena into mem, laid out as l.
func (l sharedLayout) view(mem []byte) (Index, []byte) {
	x := Index{mask: uint64(l.tableLen) - 1}
	if l.rows > 0 {
		x.ids = unsafe.Slice((*int64)(unsafe.Pointer(&mem[sharedHeaderBytes])), l.rows)
	}
	x.table = unsafe.Slice((*int32)(unsafe.Pointer(&mem[l.tableOff])), l.tableLen)
	var arena []byte
	if n := l.rows * l.rowBytes; n > 0 {
		arena = mem[l.arenaOff : l.arenaOff+n : l.arenaOff+n]
	}
	return x, arena
}

// FillShared is Fill into a new file at path in shared memory (see sharedFile): it creates the
// file (refusing one that exists), writes the index, calls load with the ids sorted and the
// arena, marks the file ready and maps it read-only. Other processes then map it with
// MapShared under the same key. On error the file is removed (if that removal fails, the file
// stays never ready, refused by MapShared: the caller removes its path). The tier's earlier contents are released as by Fill.
// The file is created, sized, reserved (so that a full tmpfs is an error, not a SIGBUS) and
// removed through fsys (nil: the operating system's); its contents are written through the
// mapping.
func (c *Cache) FillShared(fsys wfs.FS, path, key string, ids []int64, load tiers.Source) error {
	fsys = wfs.Or(fsys)
	index, err := NewIndex(ids)
	if err != nil {
		return fmt.Errorf("host tier: %w", err)
	}
	l := layoutOf(int64(len(index.ids)), int64(len(index.table)), c.rowBytes)
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("host tier: create the shared tier file: %w", err)
	}
	mem, err := func() ([]byte, error) {
		defer f.Close()
		if err := f.Truncate(l.size); err != nil {
			return nil, fmt.Errorf("host tier: size the shared tier file %s to %d bytes for %d rows: %w", path, l.size, l.rows, err)
		}
		// Reserved now, a full tmpfs is this error, not a SIGBUS while the rows are written.
		if err := f.Allocate(l.size); err != nil && !errors.Is(err, wfs.ErrUnsupported) {
			return nil, fmt.Errorf("host tier: reserve %d bytes for the shared tier file %s (%d rows): %w", l.size, path, l.rows, err)
		}
		mem, err := unix.Mmap(int(f.Fd()), 0, int(l.size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return nil, fmt.Errorf("host tier: map the shared tier file %s (%d bytes): %w", path, l.size, err)
		}
		return mem, nil
	}()
	if err == nil {
		err = c.writeShared(mem, l, key, index, load)
		if err != nil {
			unix.Munmap(mem)
		}
	}
	if err != nil {
		fsys.Remove(path)
		return err
	}
	if err := unix.Mprotect(mem, unix.PROT_READ); err != nil {
		unix.Munmap(mem)
		fsys.Remove(path)
		return fmt.Errorf("host tier: make the shared tier file %s read-only: %w", path, err)
	}
	return c.adopt(&sharedFile{path: path, mem: mem, created: true}, l)
}

// writeShared writes the index and the rows into mem and then the header, ready last.
func (c *Cache) writeShared(mem []byte, l sharedLayout, key string, index Index, load tiers.Source) error {
	x, arena := l.view(mem)
	copy(x.ids, index.ids)
	copy(x.table, index.table)
	if arena != nil {
		if err := load(x.ids, arena); err != nil {
			return err
		}
	}
	copy(mem[0:8], sharedMagic)
	binary.LittleEndian.PutUint64(mem[8:], uint64(l.rowBytes))
	binary.LittleEndian.PutUint64(mem[16:], uint64(l.rows))
	binary.LittleEndian.PutUint64(mem[24:], uint64(l.tableLen))
	binary.LittleEndian.PutUint64(mem[40:], uint64(os.Getpid()))
	binary.LittleEndian.PutUint64(mem[sharedKeyOffset:], keySum(key))
	binary.LittleEndian.PutUint64(mem[sharedSumOffset:], contentSum(mem))
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&mem[sharedReadyOffset])), 1)
	return nil
}

// MapShared replaces the tier's contents with the shared tier in the file at path, filled by
// FillShared in this or another process under key, mapped read-only. It refuses a file that is
// not ready (its creator has not finished or was killed), whose rows are not this tier's width,
// whose header or index does not match its size, whose checksum does not match its contents,
// or that was filled under another key; the error names the file and what is wrong.
func (c *Cache) MapShared(path, key string) error {
	// O_RDWR although the mapping is read-only: pinning for a GPU makes the arena writable.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("host tier: open the shared tier file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("host tier: shared tier file: %w", err)
	}
	if st.Size() < sharedHeaderBytes {
		return fmt.Errorf("host tier: shared tier file %s has %d bytes, less than its %d-byte header", path, st.Size(), sharedHeaderBytes)
	}
	if st.Size() > math.MaxInt {
		return fmt.Errorf("host tier: shared tier file %s has %d bytes, more than this process maps", path, st.Size())
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("host tier: map the shared tier file %s (%d bytes): %w", path, st.Size(), err)
	}
	l, err := c.checkShared(path, key, mem)
	if err != nil {
		unix.Munmap(mem)
		return err
	}
	return c.adopt(&sharedFile{path: path, mem: mem}, l)
}

// checkShared checks a mapped shared tier file's header and index against its size, the tier's
// row width and key.
func (c *Cache) checkShared(path, key string, mem []byte) (sharedLayout, error) {
	bad := func(format string, a ...any) (sharedLayout, error) {
		return sharedLayout{}, fmt.Errorf("host tier: shared tier file %s: %s", path, fmt.Sprintf(format, a...))
	}
	if atomic.LoadUint64((*uint64)(unsafe.Pointer(&mem[sharedReadyOffset]))) != 1 {
		return bad("is not ready (its creator has not finished filling it, or was killed while it did)")
	}
	if string(mem[0:8]) != sharedMagic {
		return bad("is not a shared host tier (magic %q)", mem[0:8])
	}
	rowBytes := binary.LittleEndian.Uint64(mem[8:])
	rows := binary.LittleEndian.Uint64(mem[16:])
	tableLen := binary.LittleEndian.Uint64(mem[24:])
	if int64(rowBytes) != c.rowBytes {
		return bad("holds rows of %d bytes, this tier's are %d", rowBytes, c.rowBytes)
	}
	if rows > math.MaxInt32/2 || tableLen != tableSize(int(rows)) {
		return bad("header says %d rows and a table of %d entries, want at most %d rows and a table of %d", rows, tableLen, math.MaxInt32/2, tableSize(int(min(rows, math.MaxInt32/2))))
	}
	l := layoutOf(int64(rows), int64(tableLen), c.rowBytes)
	if l.size != int64(len(mem)) {
		return bad("has %d bytes, its header (%d rows of %d bytes) says %d", len(mem), rows, rowBytes, l.size)
	}
	x, _ := l.view(mem)
	for i := 1; i < len(x.ids); i++ {
		if x.ids[i] <= x.ids[i-1] {
			return bad("ids[%d] = %d does not follow ids[%d] = %d (they must ascend)", i, x.ids[i], i-1, x.ids[i-1])
		}
	}
	filled := 0
	for h, s := range x.table {
		if s >= int32(rows) || s < -1 {
			return bad("hash table entry %d is %d, not a slot of its %d rows", h, s, rows)
		}
		if s >= 0 {
			filled++
		}
	}
	if filled != int(rows) {
		return bad("hash table lists %d slots for %d rows", filled, rows)
	}
	if sum, want := contentSum(mem), binary.LittleEndian.Uint64(mem[sharedSumOffset:]); sum != want {
		return bad("has checksum %016x over its header, index and rows, its creator wrote %016x: it was changed after it was filled", sum, want)
	}
	if got, want := binary.LittleEndian.Uint64(mem[sharedKeyOffset:]), keySum(key); got != want {
		return bad("was filled for another tier (key hash %016x, this tier's %016x for %q): the rows of another dataset, node type or feature", got, want, key)
	}
	return l, nil
}

// adopt makes the mapped file the tier's contents, releasing (and unpinning) what it held.
func (c *Cache) adopt(sf *sharedFile, l sharedLayout) error {
	index, arena := l.view(sf.mem)
	err := c.unpublish()
	c.release()
	c.Index, c.arena, c.shared = index, arena, sf
	return errors.Join(err, c.publish())
}

// SharedPath is the file the tier's rows are shared through and whether this tier created it
// (FillShared) rather than mapped it (MapShared); "" for a private tier.
func (c *Cache) SharedPath() (path string, created bool) {
	if c.shared == nil {
		return "", false
	}
	return c.shared.path, c.shared.created
}

// pinnable makes a shared tier's arena writable, as cudaHostRegister needs; a no-op for a
// private tier (nil) or an empty arena.
func (s *sharedFile) pinnable(arena []byte) error {
	if s == nil || s.pinned || len(arena) == 0 {
		return nil
	}
	if err := unix.Mprotect(arena, unix.PROT_READ|unix.PROT_WRITE); err != nil {
		return fmt.Errorf("host tier: make the shared tier file %s's arena pinnable: %w", s.path, err)
	}
	s.pinned = true
	return nil
}
