package embedding

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// A page is pageBytes bytes: rowsPerPage slots of slotBytes from its start, zeros, and the last
// trailerBytes: a crc32c (little endian) of the table id, the page index, the generation and
// every byte before it, then 4 zero bytes. Page p holds rows [p*rowsPerPage, (p+1)*rowsPerPage).

const (
	pageUnit     = 4096 // page sizes are multiples of it (O_DIRECT alignment)
	trailerBytes = 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// layout is where a table's slots are.
type layout struct {
	dim         int
	slotFloats  int // dim × (1 + state vectors)
	pageBytes   int
	rowsPerPage int
	rows        int64
	pages       int64
}

func newLayout(rows int64, dim int, optimizer string) layout {
	l := layout{dim: dim, slotFloats: dim * (1 + stateVectors(optimizer)), rows: rows}
	slotBytes := 4 * l.slotFloats
	l.pageBytes = (slotBytes + trailerBytes + pageUnit - 1) / pageUnit * pageUnit
	l.rowsPerPage = (l.pageBytes - trailerBytes) / slotBytes
	l.pages = (rows + int64(l.rowsPerPage) - 1) / int64(l.rowsPerPage)
	return l
}

// fileBytes is the bytes of one copy of every page; pages.rows holds two.
func (l layout) fileBytes() int64 { return l.pages * int64(l.pageBytes) }

// pageOffset is where place (0 or 1) of page p is in pages.rows: place 0 of every page, then
// place 1 of every page, so adjacent pages of one place are adjacent on disk.
func (l layout) pageOffset(p int64, place int) int64 {
	return (int64(place)*l.pages + p) * int64(l.pageBytes)
}

// slot is row's slot within its page's bytes.
func (l layout) slot(page []byte, row int64) []float32 {
	off := int(row%int64(l.rowsPerPage)) * 4 * l.slotFloats
	return floats(page[off : off+4*l.slotFloats])
}

// pageSeal is the checksum of page (its trailer excluded) as page index of generation gen of
// table id.
func pageSeal(id [16]byte, index int64, gen uint64, page []byte) uint32 {
	var hdr [32]byte
	copy(hdr[:16], id[:])
	binary.LittleEndian.PutUint64(hdr[16:], uint64(index))
	binary.LittleEndian.PutUint64(hdr[24:], gen)
	c := crc32.Update(0, castagnoli, hdr[:])
	return crc32.Update(c, castagnoli, page[:len(page)-trailerBytes])
}

// seal writes page's trailer for index and gen.
func seal(id [16]byte, index int64, gen uint64, page []byte) {
	t := page[len(page)-trailerBytes:]
	binary.LittleEndian.PutUint32(t, pageSeal(id, index, gen, page))
	binary.LittleEndian.PutUint32(t[4:], 0)
}

// check says whether page holds its seal for index and gen.
func check(id [16]byte, index int64, gen uint64, page []byte, file string) error {
	t := page[len(page)-trailerBytes:]
	if got, want := binary.LittleEndian.Uint32(t), pageSeal(id, index, gen, page); got != want || binary.LittleEndian.Uint32(t[4:]) != 0 {
		return fmt.Errorf("%w: %s: page %d (generation %d): checksum %08x, want %08x", ErrCorrupt, file, index, gen, got, want)
	}
	return nil
}

// floats views b (4-byte aligned: arena memory) as float32s.
func floats(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafeFloats(b)
}
