package placement

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/strictjson"
)

// FileName is the name of the placement file inside a dataset directory.
const FileName = "placement.v1.bin"

// FileVersion is the placement file format this package writes and reads.
const FileVersion = 1

// fileMagic opens every placement file.
const fileMagic = "TFSPLACE"

// ErrStale is wrapped by Load's error when the saved placement no longer applies: the dataset
// changed, or it was made from other inputs. Callers recompute (and Save) then.
var ErrStale = errors.New("placement is stale")

// corruptError says a placement file is damaged or not a placement file. It wraps
// dataset.ErrCorrupt, the one corruption error of tierfs.
type corruptError struct {
	Path string
	Err  error // what decode found
}

func (e *corruptError) Error() string {
	return fmt.Sprintf("placement: %s: placement file corrupt: %v", e.Path, e.Err)
}
func (e *corruptError) Unwrap() error { return dataset.ErrCorrupt }

// StaleError says why a saved placement is stale. It wraps ErrStale.
type StaleError struct {
	Path   string
	Reason string
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("placement: %s is stale: %s", e.Path, e.Reason)
}
func (e *StaleError) Unwrap() error { return ErrStale }

// Inputs are what a placement depends on besides the dataset: the profile's fanouts and batch
// size, and the plan's budget and policy.
type Inputs struct {
	Fanouts   []int
	BatchSize int
	Budget    Budget // compared with defaults applied
	Policy    Policy
}

// InputsOf returns the inputs h and p were made from.
func InputsOf(h *Hotness, p *Placement) Inputs {
	return Inputs{Fanouts: slices.Clone(h.Fanouts), BatchSize: h.BatchSize, Budget: p.Budget, Policy: p.Policy}
}

// Fingerprint identifies a dataset's contents: the xxhash64 of its manifest.json, which lists
// every file's size and the xxhash64 of the file's per-block checksums, so a changed data file
// (rewritten by ingest) changes the manifest.
func Fingerprint(dir string) (uint64, error) {
	data, err := dataset.ReadManifest(dir)
	if err != nil {
		return 0, fmt.Errorf("placement: fingerprint of dataset %s: %w", dir, err)
	}
	return xxhash.Sum64(data), nil
}

// fileHeader is the JSON header of a placement file.
type fileHeader struct {
	Version     int    `json:"version"`
	Fingerprint string `json:"dataset_fingerprint"` // hex xxhash64 of manifest.json
	Nodes       int64  `json:"nodes"`
	// Profile inputs and results.
	Fanouts   []int `json:"fanouts"`
	BatchSize int   `json:"batch_size"`
	Batches   int   `json:"batches"`
	Seeds     int64 `json:"seeds"`
	Replace   bool  `json:"replace"`
	// Plan inputs and results.
	Policy           string             `json:"policy"`
	Budget           Budget             `json:"budget"`
	RowBytes         int64              `json:"row_bytes"`
	IndexBytes       int64              `json:"index_bytes"`
	BlockSize        int64              `json:"block_size"`
	FeatureOverhead  int64              `json:"feature_overhead"`
	TopologyOverhead int64              `json:"topology_overhead"`
	Memory           [2][NumTiers]int64 `json:"memory"` // per kind (topology, feature) and tier (ssd, host, gpu)
}

// Save writes h and p to dir/FileName with the dataset's fingerprint: to a temporary name, synced,
// then renamed over any older file. Layout: "TFSPLACE", uint32 version, uint32 header length, the
// JSON header, Topology and Feature hotness (uint32 each per node), one tier byte per node, and
// the xxhash64 of everything before it; integers little-endian.
func Save(dir string, h *Hotness, p *Placement) error {
	if err := h.validate(); err != nil {
		return err
	}
	if p == nil || p.NumNodes() != h.NumNodes() {
		return fmt.Errorf("placement: save needs a placement of the hotness's %d nodes", h.NumNodes())
	}
	fp, err := Fingerprint(dir)
	if err != nil {
		return err
	}
	hdr, err := json.Marshal(fileHeader{
		Version: FileVersion, Fingerprint: fmt.Sprintf("%016x", fp), Nodes: p.NumNodes(),
		Fanouts: h.Fanouts, BatchSize: h.BatchSize, Batches: h.Batches, Seeds: h.Seeds, Replace: h.Replace,
		Policy: p.Policy.String(), Budget: p.Budget, RowBytes: p.RowBytes, IndexBytes: p.IndexBytes, BlockSize: p.BlockSize,
		FeatureOverhead: p.FeatureOverhead, TopologyOverhead: p.TopologyOverhead, Memory: p.mem,
	})
	if err != nil {
		return fmt.Errorf("placement: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(24 + len(hdr) + 9*len(p.tiers))
	buf.WriteString(fileMagic)
	buf.Write(binary.LittleEndian.AppendUint32(nil, FileVersion))
	buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(hdr))))
	buf.Write(hdr)
	buf.Write(uint32Bytes(h.Topology))
	buf.Write(uint32Bytes(h.Feature))
	buf.Write(p.tiers)
	buf.Write(binary.LittleEndian.AppendUint64(nil, xxhash.Sum64(buf.Bytes())))

	path := filepath.Join(dir, FileName)
	_, _ = CleanStale(dir)
	f, err := createTemp(dir)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails harmlessly once renamed
	if saveHook != nil {
		saveHook(f.Name())
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("placement: write %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("placement: sync %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("placement: close %s: %w", f.Name(), err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("placement: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// tempPrefix begins the name of the temporary file Save writes before renaming it into place.
const tempPrefix = "." + FileName + ".tmp-"

// saveHook, when set (by tests), runs once Save has created and locked its temporary file.
var saveHook func(tmp string)

// createTemp creates Save's temporary file in dir, flocked for as long as it is open: a
// temporary file that can be flocked belongs to a Save that was killed, and CleanStale removes
// it. The lock is taken after the create, so a cleaner may take it (and remove the file) first;
// createTemp then tries again under another name.
func createTemp(dir string) (*os.File, error) {
	for {
		f, err := os.CreateTemp(dir, tempPrefix+"*")
		if err != nil {
			return nil, fmt.Errorf("placement: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, fmt.Errorf("placement: lock %s: %w", f.Name(), err)
		}
		if sameFile(f, f.Name()) {
			return f, nil
		}
		f.Close() // a cleaner removed it before the lock was ours
	}
}

// sameFile reports whether path still names the open file f.
func sameFile(f *os.File, path string) bool {
	var held, named unix.Stat_t
	return unix.Fstat(int(f.Fd()), &held) == nil && unix.Lstat(path, &named) == nil && held.Ino == named.Ino && held.Dev == named.Dev
}

// CleanStale removes from dir the temporary files of Saves that were killed (their lock is
// free), and says what it removed, one line each; a live Save's file is left alone. Save calls
// it; so does `tierfs verify`.
func CleanStale(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("placement: look for temporary files of killed saves: %w", err)
	}
	var did []string
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			continue // gone, or not a file this package wrote
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil && sameFile(f, p) {
			if err := os.Remove(p); err == nil {
				did = append(did, "removed "+p+", the temporary file of a killed placement save")
			} else if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("placement: remove %s: %w", p, err))
			}
		}
		f.Close()
	}
	return did, errors.Join(errs...)
}

// Load reads dir/FileName and returns its hotness and placement when they still apply: the
// dataset's fingerprint matches and the inputs equal want. Otherwise the error is a *StaleError
// (errors.Is(err, ErrStale)); when only the plan's budget or policy differ, the hotness is still
// returned (with a nil placement) so the caller can Plan again without profiling. A missing file
// gives an error wrapping os.ErrNotExist; a damaged one an error wrapping dataset.ErrCorrupt that
// names the file.
func Load(dir string, want Inputs) (*Hotness, *Placement, error) {
	path := filepath.Join(dir, FileName)
	data, err := readFile(dir)
	if err != nil {
		return nil, nil, err
	}
	h, p, hdr, err := decode(data)
	if err != nil {
		return nil, nil, &corruptError{path, err}
	}
	fp, err := Fingerprint(dir)
	if err != nil {
		return nil, nil, err
	}
	if got := fmt.Sprintf("%016x", fp); got != hdr.Fingerprint {
		return nil, nil, &StaleError{path, fmt.Sprintf("the dataset changed (manifest fingerprint %s, the placement was made for %s)", got, hdr.Fingerprint)}
	}
	if !slices.Equal(h.Fanouts, want.Fanouts) || h.BatchSize != want.BatchSize {
		return nil, nil, &StaleError{path, fmt.Sprintf("profiled with fanouts %v and batch size %d, want fanouts %v and batch size %d", h.Fanouts, h.BatchSize, want.Fanouts, want.BatchSize)}
	}
	if wb := want.Budget.withDefaults(); p.Budget != wb || p.Policy != want.Policy {
		return h, nil, &StaleError{path, fmt.Sprintf("planned as %s with %+v, want %s with %+v", p.Policy, p.Budget, want.Policy, wb)}
	}
	return h, p, nil
}

// maxHeaderBytes caps the JSON header of a placement file.
const maxHeaderBytes = 1 << 20

// readFile reads dir/FileName, which must be a regular file inside dir (dataset.OpenFDIn) of the
// size its header declares, and, where the dataset's manifest loads, no larger than a placement
// of its nodes can be: anything else is refused, naming the file, before its body is read.
func readFile(dir string) ([]byte, error) {
	limit := int64(-1)
	if m, err := dataset.Load(dir); err == nil {
		limit = 16 + maxHeaderBytes + 8
		for i := range m.NodeTypes {
			limit += 9 * m.NodeTypes[i].Count
		}
	}
	fd, size, err := dataset.OpenFDIn(dir, FileName, 0, limit)
	if err != nil {
		return nil, fmt.Errorf("placement: %w", err)
	}
	path := filepath.Join(dir, FileName)
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	// The framing and header first: they say how large the file is.
	head := make([]byte, 16)
	if _, err := io.ReadFull(f, head); err != nil || string(head[:8]) != fileMagic {
		return nil, &corruptError{path, errors.New("not a tierfs placement file (bad magic or too short)")}
	}
	hlen := int64(binary.LittleEndian.Uint32(head[12:]))
	if hlen > maxHeaderBytes || hlen > size-16-8 {
		return nil, &corruptError{path, fmt.Errorf("header of %d bytes in a file of %d (at most %d)", hlen, size, maxHeaderBytes)}
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, &corruptError{path, fmt.Errorf("header: %v", err)}
	}
	var h struct {
		Nodes int64 `json:"nodes"`
	}
	if err := json.Unmarshal(hdr, &h); err != nil {
		return nil, &corruptError{path, fmt.Errorf("header: %v", err)}
	}
	if h.Nodes < 0 || h.Nodes > (math.MaxInt64-16-hlen-8)/9 || size != 16+hlen+9*h.Nodes+8 {
		return nil, &corruptError{path, fmt.Errorf("%d bytes; a placement of the %d nodes its header names has %d", size, h.Nodes, 16+hlen+9*max(h.Nodes, 0)+8)}
	}
	data := make([]byte, size)
	copy(data, head)
	copy(data[16:], hdr)
	if _, err := io.ReadFull(f, data[16+hlen:]); err != nil {
		return nil, &corruptError{path, fmt.Errorf("read: %v", err)}
	}
	return data, nil
}

// decode parses a placement file, checking its framing, checksum and contents.
func decode(data []byte) (*Hotness, *Placement, *fileHeader, error) {
	if len(data) < 16+8 || string(data[:8]) != fileMagic {
		return nil, nil, nil, errors.New("not a tierfs placement file (bad magic or too short)")
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != FileVersion {
		return nil, nil, nil, fmt.Errorf("format version %d, this tierfs reads version %d", v, FileVersion)
	}
	body, sum := data[:len(data)-8], binary.LittleEndian.Uint64(data[len(data)-8:])
	if got := xxhash.Sum64(body); got != sum {
		return nil, nil, nil, fmt.Errorf("checksum %016x does not match the stored %016x", got, sum)
	}
	hlen := uint64(binary.LittleEndian.Uint32(data[12:]))
	if hlen > uint64(len(body)-16) {
		return nil, nil, nil, fmt.Errorf("header of %d bytes overruns the file", hlen)
	}
	var hdr fileHeader
	if err := strictjson.Decode(body[16:16+hlen], &hdr); err != nil {
		return nil, nil, nil, fmt.Errorf("header: %v", err)
	}
	rest := body[16+hlen:]
	if hdr.Nodes < 0 || uint64(len(rest)) != 9*uint64(hdr.Nodes) {
		return nil, nil, nil, fmt.Errorf("%d bytes of data for %d nodes, want %d", len(rest), hdr.Nodes, 9*hdr.Nodes)
	}
	policy, err := ParsePolicy(hdr.Policy)
	if err != nil {
		return nil, nil, nil, err
	}
	n := hdr.Nodes
	h := &Hotness{
		Topology: make([]uint32, n), Feature: make([]uint32, n),
		Batches: hdr.Batches, Seeds: hdr.Seeds, Fanouts: hdr.Fanouts, BatchSize: hdr.BatchSize, Replace: hdr.Replace,
	}
	copy(uint32Bytes(h.Topology), rest[:4*n])
	copy(uint32Bytes(h.Feature), rest[4*n:8*n])
	s := Sizes{RowBytes: hdr.RowBytes, IndexBytes: hdr.IndexBytes, BlockSize: hdr.BlockSize,
		FeatureOverhead: hdr.FeatureOverhead, TopologyOverhead: hdr.TopologyOverhead}
	p := newPlacement(n, policy, hdr.Budget, s)
	copy(p.tiers, rest[8*n:])
	if err := p.recount(); err != nil {
		return nil, nil, nil, err
	}
	p.mem = hdr.Memory
	return h, p, &hdr, nil
}

// uint32Bytes views v as its little-endian bytes (every platform tierfs builds for is
// little-endian).
func uint32Bytes(v []uint32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
