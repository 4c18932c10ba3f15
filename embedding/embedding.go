// Package embedding is a trainable table of node embeddings kept out of core: one float32 row
// per node of a node type, with the row's sparse-optimizer state beside it, on disk in checksummed
// pages behind a bounded write-back page cache in host memory. It is kept apart from the
// immutable dataset (its own directory, its own checkpoints), so the dataset stays what it is.
//
// Contract:
//   - Create writes a new table directory (generation 1, every row initialized); Open opens it to
//     train. Each page has two places on disk; a page changed since the last checkpoint is
//     written to the place that checkpoint does not use, so the checkpoint stays intact until
//     Checkpoint publishes the next one. One process opens a table at a time (a lock file).
//   - A slot is a row's parameter followed by its optimizer state (adagrad: state_sum; adam:
//     exp_avg, exp_avg_sq), Dim floats each, so one page read or write moves both. Slots never
//     span a page; every page ends with a crc32c bound to the table id, the page index and the
//     generation, so a page swapped, stale or damaged is refused (ErrCorrupt) on every read.
//   - Memory is bounded by Options.HostCacheBytes, plus 4 bytes a page for the page map (which
//     place holds each page, of which generation): a cache of whole
//     pages in an mmap'ed arena, evicted by CLOCK (second chance), dirty pages written back on
//     eviction. A call visits its ids by page and loads them a cache-full at a time, with up to
//     32 page reads and 32 write-backs in flight (gpuio's Stack and Writer: io_uring, or pread
//     and pwrite); a write-back that fails leaves its page dirty in the cache.
//   - Calls on a Table are serialized: a Gather after an Apply sees it. Inputs are checked
//     before anything changes; an id out of range, a length that is not ids × dim, or (adagrad,
//     adam) a duplicate id is an error naming the input.
//   - Apply is one optimizer step over the batch with torch's sparse semantics (see optim.go):
//     SGD applies the uncoalesced gradient row by row in input order (duplicates allowed);
//     Adagrad and SparseAdam take a coalesced gradient (unique ids) and step once.
//   - Checkpoint is incremental and crash-safe: the dirty pages are written to their free places
//     and fsynced, the next generation's page map is written (fsync, directory fsync), the
//     manifest naming that generation is published by rename, then the old map is removed. It
//     writes the pages changed since the last checkpoint and the map, nothing else; the disk
//     holds two places a page and at most two maps, whatever the number of checkpoints. A kill
//     at any point leaves the old checkpoint or the new one; Open removes what a killed writer
//     left, and converts a version 1 table (one whole copy a generation) once.
//   - Every file written goes through a wfs.FS, so tests fail the writes they choose.
package embedding

import (
	"errors"
	"fmt"
	"math"

	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/internal/wfs"
)

// ErrCorrupt marks a page whose checksum does not hold (damaged, swapped, or of another
// generation or table).
var ErrCorrupt = errors.New("embedding table corrupt")

// ErrInvalid marks a bad argument (a spec, a length, a repeated id); ErrIDOutOfRange an id
// outside [0, rows). Their messages name the input.
var (
	ErrInvalid      = errors.New("invalid argument")
	ErrIDOutOfRange = errors.New("id out of range")
	ErrClosed       = errors.New("embedding: the table is closed")
)

// argError is an error of kind (ErrInvalid, ErrIDOutOfRange) with its own message.
type argError struct {
	kind error
	msg  string
}

func (e *argError) Error() string        { return e.msg }
func (e *argError) Is(target error) bool { return target == e.kind }

func invalid(format string, args ...any) error {
	return &argError{ErrInvalid, fmt.Sprintf(format, args...)}
}

// Optimizer is a sparse optimizer and its hyper-parameters, named and defaulted as torch's
// (torch.optim.SGD, Adagrad, SparseAdam). A zero field takes torch's default.
type Optimizer struct {
	Name string `json:"name"` // "sgd", "adagrad" or "adam"
	// LR is the learning rate (torch: SGD requires one, given here as 0.01 by default; Adagrad
	// 0.01; SparseAdam 0.001).
	LR float64 `json:"lr,omitempty"`
	// Beta1, Beta2 are Adam's betas (0.9, 0.999); Eps is Adam's (1e-8) or Adagrad's (1e-10).
	Beta1 float64 `json:"beta1,omitempty"`
	Beta2 float64 `json:"beta2,omitempty"`
	Eps   float64 `json:"eps,omitempty"`
	// LRDecay is Adagrad's lr_decay (0); InitialAccumulatorValue its state_sum's start (0).
	LRDecay                 float64 `json:"lr_decay,omitempty"`
	InitialAccumulatorValue float64 `json:"initial_accumulator_value,omitempty"`
}

// Init is how Create fills the rows: "zeros", "normal" (mean 0, Std, default 1: torch's
// nn.Embedding), or "uniform" in [A, B), from Seed.
type Init struct {
	Kind string  `json:"kind"`
	Std  float64 `json:"std,omitempty"`
	A    float64 `json:"a,omitempty"`
	B    float64 `json:"b,omitempty"`
	Seed uint64  `json:"seed,omitempty"`
}

// Spec describes a new table.
type Spec struct {
	Rows      int64     `json:"rows"`
	Dim       int       `json:"dim"`
	DType     string    `json:"dtype,omitempty"` // "float32" (the only one; "" means it)
	Optimizer Optimizer `json:"optimizer"`
	Init      Init      `json:"init"`
	NodeType  string    `json:"node_type,omitempty"`  // the node type the rows are of
	DatasetID string    `json:"dataset_id,omitempty"` // the dataset it belongs to
}

// Options are how a table is opened.
type Options struct {
	// HostCacheBytes bounds the page cache (at least two pages; 0: 64 MiB).
	HostCacheBytes int64
	// FS writes every file (nil: wfs.OS).
	FS wfs.FS
	// IOBackend reads and writes the pages (gpuio.BackendAuto: io_uring where the kernel allows
	// it, else pread and pwrite; tests ask for each).
	IOBackend gpuio.Backend
	// Faults, when set, injects faults into the pages' reads and writes (tests; gpuio.Injector).
	Faults gpuio.Injector
}

// Stats are a table's counters since Open. Hits and Misses count a call's distinct pages (a call
// reads each of its pages once).
type Stats struct {
	PagesRead    int64 `json:"pages_read"`
	PagesWritten int64 `json:"pages_written"`
	WriteIOs     int64 `json:"write_ios"` // writes issued for them (adjacent pages merge)
	Hits         int64 `json:"hits"`
	Misses       int64 `json:"misses"`
	Evictions    int64 `json:"evictions"`
	Dirty        int64 `json:"dirty"`       // dirty pages in the cache now
	CachePages   int64 `json:"cache_pages"` // the cache's capacity in pages
	Checkpoints  int64 `json:"checkpoints"`
}

// Info describes an open table.
type Info struct {
	Spec
	TableID      string `json:"table_id"`
	Generation   uint64 `json:"generation"`
	Step         int64  `json:"step"` // optimizer steps taken (torch's per-tensor `step`)
	SlotFloats   int    `json:"slot_floats"`
	PageBytes    int    `json:"page_bytes"`
	RowsPerPage  int    `json:"rows_per_page"`
	Pages        int64  `json:"pages"`
	DirectIO     bool   `json:"direct_io"`
	HostCacheMax int64  `json:"host_cache_bytes"`
}

// maxFloats bounds a table's floats, state included (1 PiB of them).
const maxFloats = 1 << 48

// DefaultHostCacheBytes is the cache's size when Options.HostCacheBytes is 0.
const DefaultHostCacheBytes = 64 << 20

// withDefaults is s with torch's defaults filled in, checked.
func (s Spec) withDefaults() (Spec, error) {
	if s.DType == "" {
		s.DType = "float32"
	}
	if s.DType != "float32" {
		return s, invalid("embedding: dtype %q: only float32 is supported", s.DType)
	}
	if s.Rows <= 0 {
		return s, invalid("embedding: rows %d: a table has at least one row", s.Rows)
	}
	if s.Dim <= 0 || s.Dim > 1<<20 {
		return s, invalid("embedding: dim %d: must be in [1, 1048576]", s.Dim)
	}
	if s.Rows > maxFloats/int64(3*s.Dim) {
		return s, invalid("embedding: %d rows of dim %d: more than 2^48 floats with their state", s.Rows, s.Dim)
	}
	o := &s.Optimizer
	switch o.Name {
	case "sgd":
		o.LR = orDefault(o.LR, 0.01)
	case "adagrad":
		o.LR = orDefault(o.LR, 0.01)
		o.Eps = orDefault(o.Eps, 1e-10)
	case "adam":
		o.LR = orDefault(o.LR, 1e-3)
		o.Beta1 = orDefault(o.Beta1, 0.9)
		o.Beta2 = orDefault(o.Beta2, 0.999)
		o.Eps = orDefault(o.Eps, 1e-8)
		if o.Beta1 < 0 || o.Beta1 >= 1 || o.Beta2 < 0 || o.Beta2 >= 1 {
			return s, invalid("embedding: adam betas (%g, %g): each must be in [0, 1)", o.Beta1, o.Beta2)
		}
	default:
		return s, invalid("embedding: optimizer %q: want sgd, adagrad or adam", o.Name)
	}
	if !(o.LR > 0) || math.IsInf(o.LR, 0) {
		return s, invalid("embedding: lr %g: must be positive", o.LR)
	}
	if o.Eps < 0 || o.LRDecay < 0 || o.InitialAccumulatorValue < 0 {
		return s, invalid("embedding: eps %g, lr_decay %g, initial_accumulator_value %g: none may be negative", o.Eps, o.LRDecay, o.InitialAccumulatorValue)
	}
	if o.Name != "adagrad" && (o.LRDecay != 0 || o.InitialAccumulatorValue != 0) {
		return s, invalid("embedding: lr_decay and initial_accumulator_value are adagrad's, not %s's", o.Name)
	}
	if o.Name != "adam" && (o.Beta1 != 0 || o.Beta2 != 0) {
		return s, invalid("embedding: betas are adam's, not %s's", o.Name)
	}
	in := &s.Init
	switch in.Kind {
	case "", "zeros":
		in.Kind = "zeros"
	case "normal":
		in.Std = orDefault(in.Std, 1)
		if in.Std < 0 {
			return s, invalid("embedding: init normal std %g: must not be negative", in.Std)
		}
	case "uniform":
		if !(in.A < in.B) {
			return s, invalid("embedding: init uniform [%g, %g): a must be below b", in.A, in.B)
		}
	default:
		return s, invalid("embedding: init %q: want zeros, normal or uniform", in.Kind)
	}
	return s, nil
}

func orDefault(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

// stateVectors is how many Dim-float state vectors a slot holds after the parameter.
func stateVectors(optimizer string) int {
	switch optimizer {
	case "adagrad":
		return 1
	case "adam":
		return 2
	}
	return 0
}
