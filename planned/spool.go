package planned

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/internal/wfs"
)

// The sample spool: with PlaceTiers, a plan draws each batch once. The placement pass, which
// draws every batch of the K epochs to count how often each row is read, also writes each
// epoch's samples file, exactly as the packing pass would write it, into a spool directory of
// its own inside the plan directory (spoolPrefix, flocked while its planner lives). The packing
// pass then reads each batch's nodes back from the record instead of drawing the batch again,
// and moves the epoch's samples file into the plan: the same bytes, since the same draw is
// encoded the same way. Memory stays what it was: a samples file is written through a
// samplesWriter's buffer and read back a batch's nodes at a time. Disk: the spool holds the K
// epochs' samples files until the packing pass takes them, so the plan's files never exceed the
// finished plan's; with a DiskBudget, it spools at most that many bytes (an epoch's samples are
// part of its bytes, so the spool stops only in an epoch the plan cannot hold either; an epoch
// not spooled is drawn again). What the plan does not take is removed with the spool.

// spoolPrefix starts the name of a spool directory in a plan directory.
const spoolPrefix = ".placing-"

// spoolSamples lets the placement pass spool its samples; tests turn it off to compare the
// plans made by drawing every batch twice.
var spoolSamples = true

// sampleSpool is a placement pass's samples files, per planned epoch.
type sampleSpool struct {
	fs     wfs.FS // what its files are written through
	dir    string
	lock   *os.File // the spool directory's flock: CleanEpochPlan leaves a live spool alone
	epochs []*spooledEpoch
	bytes  int64 // of every samples file spooled
	budget int64 // the most bytes spooled (0: no bound)
	full   bool  // an epoch did not fit the budget: none after it is spooled
}

// spooledEpoch is one planned epoch's spooled samples file and its records.
type spooledEpoch struct {
	path    string
	records []sampleRecord
	bytes   int64
	fd      int // open for reading while the packing pass takes the epoch; -1 otherwise
}

// newSampleSpool makes a spool in plan directory dir for a plan whose files are bounded by budget
// (0: unbounded).
func newSampleSpool(fsys wfs.FS, dir string, budget int64) (*sampleSpool, error) {
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("planned: plan directory: %w", err)
	}
	var name [6]byte
	if _, err := rand.Read(name[:]); err != nil {
		return nil, fmt.Errorf("planned: %w", err)
	}
	sd := filepath.Join(dir, spoolPrefix+hex.EncodeToString(name[:]))
	if err := fsys.Mkdir(sd, 0o700); err != nil {
		return nil, fmt.Errorf("planned: epoch plan sample spool: %w", err)
	}
	lock, err := lockPlan(sd, true) // a new directory: nobody else holds it
	if err != nil {
		fsys.RemoveAll(sd)
		return nil, err
	}
	return &sampleSpool{fs: fsys, dir: sd, lock: lock, budget: budget}, nil
}

// spooler writes planned epoch e's samples file into the spool, batch by batch (add), unless the
// spool is full.
type spooler struct {
	sp *sampleSpool
	ep *spooledEpoch
	w  *samplesWriter
}

// begin starts epoch e's samples file; nil when the spool takes no more epochs.
func (sp *sampleSpool) begin(e int) (*spooler, error) {
	if sp == nil || sp.full {
		return nil, nil
	}
	ep := &spooledEpoch{path: filepath.Join(sp.dir, samplesFile(e)), fd: -1}
	w, err := createSamples(sp.fs, ep.path, &ep.records)
	if err != nil {
		return nil, err
	}
	return &spooler{sp: sp, ep: ep, w: w}, nil
}

// add appends batch p's record (in batch order). Past the budget it drops the epoch's file and
// fills the spool (the epoch is drawn again when packed).
func (s *spooler) add(p *packedBatch) error {
	if s == nil || s.w == nil {
		return nil
	}
	if b := s.sp.budget; b > 0 && s.sp.bytes+s.w.size()+p.recordLen > b {
		s.drop()
		return nil
	}
	return s.w.add(p.record, p.recordSum)
}

func (s *spooler) drop() {
	s.w.finish(false)
	s.sp.fs.Remove(s.ep.path)
	s.w, s.sp.full = nil, true
}

// finish syncs and closes the epoch's file and lists it in the spool (not when it was dropped;
// ok false drops it).
func (s *spooler) finish(ok bool) error {
	if s == nil || s.w == nil {
		return nil
	}
	if !ok {
		s.drop()
		return nil
	}
	s.ep.bytes = s.w.size()
	err := s.w.finish(true)
	s.w = nil
	if err != nil {
		return err
	}
	s.sp.epochs = append(s.sp.epochs, s.ep)
	s.sp.bytes += s.ep.bytes
	return nil
}

// epoch is planned epoch e's spooled samples file, nil when it was not spooled.
func (sp *sampleSpool) epoch(e int) *spooledEpoch {
	if sp == nil || e >= len(sp.epochs) {
		return nil
	}
	return sp.epochs[e]
}

// take opens epoch ep's file for reading and moves it to path (in the plan directory) through
// fsys.
func (ep *spooledEpoch) take(fsys wfs.FS, path string) error {
	fd, err := unix.Open(ep.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("planned: epoch plan sample spool %s: %w", ep.path, err)
	}
	if err := fsys.Rename(ep.path, path); err != nil {
		unix.Close(fd)
		return fmt.Errorf("planned: epoch plan: %w", err)
	}
	ep.fd, ep.path = fd, path
	return nil
}

// release closes the file take opened.
func (ep *spooledEpoch) release() {
	if ep != nil && ep.fd >= 0 {
		unix.Close(ep.fd)
		ep.fd = -1
	}
}

// nodes reads batch b's sampled nodes of every node type back from its record (shape s): its
// header and table, then its Nodes arrays (one after another in the record).
func (ep *spooledEpoch) nodes(s recordShape, b int) ([][]int64, error) {
	r := ep.records[b]
	fail := func(err error) error {
		return fmt.Errorf("planned: epoch plan samples %s, batch %d: %w", ep.path, b, err)
	}
	head := make([]byte, min(int64(sampleHeader+8*s.arrays()), r.Length))
	if err := preadFull(ep.fd, head, r.Offset); err != nil {
		return nil, fail(err)
	}
	n, coding, err := s.lengths(head, r.Length)
	if err != nil {
		return nil, fail(err)
	}
	// The Nodes arrays come first, one after another, each padded to 8 bytes.
	var size int64
	for t, k := range n[:s.types] {
		size += arrayBytes(k, s.width(t, coding))
	}
	words := make([]int64, size/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), size)
	if size > 0 {
		if err := preadFull(ep.fd, buf, r.Offset+int64(len(head))); err != nil {
			return nil, fail(err)
		}
	}
	nodes := make([][]int64, s.types)
	for t, k := range n[:s.types] {
		w := s.width(t, coding)
		switch {
		case k < 0:
		case w == 8: // the record's int64s are little-endian, as decode's in-place views assume
			nodes[t] = words[:k:k]
		default:
			nodes[t], _ = widen(buf[:w*k], w, math.MaxInt64)
		}
		words, buf = words[arrayBytes(k, w)/8:], buf[arrayBytes(k, w):]
	}
	return nodes, nil
}

// batch is batch b as the packing pass of a plan of o on src takes it from the spool: its nodes
// per packed stack, their count and hashes, and its record's length and checksum.
func (ep *spooledEpoch) batch(src *epochSource, o *EpochOptions, b int) *packedBatch {
	nodes, err := ep.nodes(src.recordShape(o), b)
	if err != nil {
		return &packedBatch{err: err}
	}
	r := ep.records[b]
	p := &packedBatch{nodeIDs: make([][]int64, len(src.stacks)), types: make([]packedRows, len(src.stacks)), recordLen: r.Length, recordSum: r.Sum}
	for t := range src.stacks {
		ids := nodes[src.recordType(t)]
		p.nodeIDs[t], p.types[t].nodesID = ids, hashIDs(ids)
		p.nodes += int64(len(ids))
	}
	return p
}

// preadFull reads len(buf) bytes of fd at off.
func preadFull(fd int, buf []byte, off int64) error {
	for got := 0; got < len(buf); {
		n, err := unix.Pread(fd, buf[got:], off+int64(got))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err == nil && n == 0 {
			err = fmt.Errorf("end of file at byte %d", off+int64(got))
		}
		if err != nil {
			return err
		}
		got += n
	}
	return nil
}

// close removes the spool with what the plan did not take.
func (sp *sampleSpool) close() {
	if sp == nil {
		return
	}
	for _, ep := range sp.epochs {
		ep.release()
	}
	sp.fs.RemoveAll(sp.dir)
	sp.lock.Close()
}

// cleanSpools removes the spool directories in plan directory dir that no live planner holds
// (what a killed planner left), and says what it removed.
func cleanSpools(dir string) []string {
	spools, _ := filepath.Glob(filepath.Join(dir, spoolPrefix+"*"))
	var did []string
	for _, sd := range spools {
		lock, err := lockPlan(sd, false)
		if err != nil || lock == nil {
			continue
		}
		if os.RemoveAll(sd) == nil {
			did = append(did, "removed "+sd+", left by a killed epoch planner")
		}
		lock.Close()
	}
	return did
}
