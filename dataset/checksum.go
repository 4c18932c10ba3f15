package dataset

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"
)

func hashHex(b []byte) string { return fmt.Sprintf("%016x", xxhash.Sum64(b)) }

// blockChecksums hashes each block of the first size bytes of f; when size is no multiple of
// block, the last block's hash covers the bytes there are. progress, when set, gets the bytes
// hashed so far.
func blockChecksums(f interface {
	io.ReaderAt
	Name() string
}, size, block int64, progress func(done int64)) ([]uint64, error) {
	sums := make([]uint64, 0, (size+block-1)/block)
	buf := make([]byte, min(1<<20/block*block, RoundUp(size, block)))
	for off := int64(0); off < size; {
		n := min(int64(len(buf)), size-off)
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return nil, fmt.Errorf("dataset: read %s at %d: %w", f.Name(), off, err)
		}
		for b := int64(0); b < n; b += block {
			sums = append(sums, xxhash.Sum64(buf[b:min(b+block, n)]))
		}
		off += n
		if progress != nil {
			progress(off)
		}
	}
	return sums, nil
}

// Checksums are the per-block checksums of one data file of Size bytes (a multiple of BlockSize
// but for an in-place file, whose last block's sum covers the bytes there are).
type Checksums struct {
	Path      string
	BlockSize int64
	Size      int64
	Sums      []uint64
	key       uint64 // the file's bind key (bind.go); 0: plain xxhash64 (versions before 7)
}

// LoadChecksums reads the sidecar of file f (a files-list entry) and checks it against the hash
// the manifest holds for it.
func (m *Manifest) LoadChecksums(f *File) (*Checksums, error) {
	// The sidecar's size is known from the manifest (one uint64 per block): a file of any other
	// size is refused before reading, and no more than that is ever read.
	bs := int64(m.BlockSize)
	want := f.Blocks(bs) * 8
	fd, size, err := m.OpenFD(f.Checksums, 0)
	if err != nil {
		return nil, fmt.Errorf("dataset: checksums of %s: %w", f.Path, err)
	}
	if size != want {
		unix.Close(fd)
		return nil, fmt.Errorf("dataset: checksum sidecar %s has %d bytes, want %d for a %d-byte file: %w", m.Path(f.Checksums), size, want, f.Bytes, ErrCorrupt)
	}
	side, err := readCapped(m.Path(f.Checksums), fd, size, want)
	if err != nil {
		return nil, fmt.Errorf("dataset: checksums of %s: %w", f.Path, err)
	}
	if got := hashHex(side); got != f.ChecksumsHash {
		return nil, fmt.Errorf("dataset: checksum sidecar %s hashes to %s, manifest says %s: %w", f.Checksums, got, f.ChecksumsHash, ErrCorrupt)
	}
	c := &Checksums{Path: f.Path, BlockSize: bs, Size: f.Bytes, Sums: make([]uint64, len(side)/8), key: m.bindKey(f.Path)}
	for i := range c.Sums {
		c.Sums[i] = binary.LittleEndian.Uint64(side[8*i:])
	}
	return c, nil
}

// Check verifies whole blocks read at a block-aligned offset; the last may be partial only where
// it ends the file (an in-place file whose size is no block multiple).
func (c *Checksums) Check(offset int64, blocks []byte) error {
	n := int64(len(blocks))
	if offset%c.BlockSize != 0 || (n%c.BlockSize != 0 && offset+n != c.Size) {
		return fmt.Errorf("dataset: %s: check of %d bytes at offset %d is not whole %d-byte blocks, nor the %d-byte file's partial last one: %w", c.Path, n, offset, c.BlockSize, c.Size, ErrCorrupt)
	}
	for b := int64(0); b < n; b += c.BlockSize {
		i := (offset + b) / c.BlockSize
		if i >= int64(len(c.Sums)) {
			return fmt.Errorf("dataset: %s: block at offset %d is past the file's end: %w", c.Path, offset+b, ErrCorrupt)
		}
		end := min(b+c.BlockSize, n)
		if got := xxhash.Sum64(blocks[b:end]) ^ blockMix(c.key, i); got != c.Sums[i] {
			return fmt.Errorf("dataset: %s: block %d (bytes %d..%d) has checksum %016x, checksum file says %016x (a changed, moved or swapped block): %w",
				c.Path, i, offset+b, offset+end, got, c.Sums[i], ErrCorrupt)
		}
	}
	return nil
}

// Problem is one thing Verify found wrong.
type Problem struct {
	File   string
	Offset int64 // byte offset of the bad block, or -1 for the file as a whole
	What   string
}

func (p Problem) String() string {
	if p.Offset < 0 {
		return p.File + ": " + p.What
	}
	return p.File + " at byte " + strconv.FormatInt(p.Offset, 10) + ": " + p.What
}

// Verify reads every block of every file and compares it with its checksum, then checks every
// node type's labels against its num_classes. It reports every problem it finds (up to limit per
// file; 0 means no limit; one per labels file outside its classes) and calls progress with the
// bytes checked so far.
func (m *Manifest) Verify(limit int, progress func(done, total int64)) ([]Problem, error) {
	var problems []Problem
	total, done := m.TotalBytes(), int64(0)
	largest := int64(0)
	for _, f := range m.Files {
		largest = max(largest, f.Bytes)
	}
	block := max(int64(m.BlockSize), 1)
	buf := make([]byte, min(4<<20/block*block, RoundUp(largest, block))) // 4 MiB, or the largest file
	for i := range m.Files {
		f := &m.Files[i]
		perFile := 0
		report := func(off int64, what string) {
			if limit == 0 || perFile < limit {
				problems = append(problems, Problem{f.Path, off, what})
			}
			perFile++
		}
		sums, err := m.LoadChecksums(f)
		if err != nil {
			report(-1, err.Error())
			done += f.Bytes
			continue
		}
		rawFD, size, err := m.OpenFD(f.Path, 0)
		if err != nil {
			report(-1, err.Error())
			done += f.Bytes
			continue
		}
		fd := os.NewFile(uintptr(rawFD), m.Path(f.Path))
		if size != f.Bytes {
			report(-1, fmt.Sprintf("file has %d bytes, manifest says %d", size, f.Bytes))
		}
		for off := int64(0); off < f.Bytes; {
			n := min(int64(len(buf)), f.Bytes-off)
			got, err := fd.ReadAt(buf[:n], off)
			if err != nil && !errors.Is(err, io.EOF) {
				report(off, err.Error())
				break
			}
			// Whole blocks, and the partial last block of an in-place file.
			whole := int64(got) / sums.BlockSize * sums.BlockSize
			if off+int64(got) == f.Bytes {
				whole = int64(got)
			}
			for b := int64(0); b < whole; b += sums.BlockSize {
				if sums.Check(off+b, buf[b:min(b+sums.BlockSize, whole)]) != nil {
					report(off+b, fmt.Sprintf("block %d does not match its checksum", (off+b)/sums.BlockSize))
				}
			}
			done += whole
			if progress != nil {
				progress(done, total)
			}
			if int64(got) < n {
				report(off+whole, "file ends early")
				break
			}
			off += n
		}
		fd.Close()
	}
	// Then the labels, against their num_classes (one problem per labels file).
	return append(problems, m.labelProblems()...), nil
}
