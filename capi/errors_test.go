package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/embedding"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/placement"
	"github.com/tierfs/tierfs/planned"
	"github.com/tierfs/tierfs/topology"
)

// The status every kind of error of the core becomes, wrapped as the core wraps it. This is the
// contract of tierfs.h's codes; statusOf must agree with it.
var wantStatus = []struct {
	kind error
	code status
}{
	{featurestore.ErrClosed, stECLOSED},
	{embedding.ErrClosed, stECLOSED},
	{embedding.ErrInvalid, stEINVAL},
	{embedding.ErrIDOutOfRange, stERANGE},
	{embedding.ErrCorrupt, stECORRUPT},
	{featurestore.ErrInvalidOption, stEINVAL},
	{featurestore.ErrIDOutOfRange, stERANGE},
	{topology.ErrSampleTooLarge, stEINVAL},
	{planned.ErrStalePlan, stEINVAL},
	{dataset.ErrVersionTooNew, stEVERSION},
	{dataset.ErrCorrupt, stECORRUPT},
	{dataset.ErrNotDataset, stENOENT},
	{dataset.ErrExists, stEINVAL},
	{dataset.ErrFeatureNotFound, stENOENT},
	{featurestore.ErrNotFound, stENOENT},
	{dataset.ErrTypeNotFound, stENOENT},
	{os.ErrNotExist, stENOENT},
	{featurestore.ErrNoGPU, stENOTSUP},
	{cuda.ErrUnavailable, stENOTSUP},
	{errors.ErrUnsupported, stENOTSUP},
	{io.ErrUnexpectedEOF, stECORRUPT},
	{io.EOF, stECORRUPT},
}

func TestStatusOfEachKind(t *testing.T) {
	for _, c := range wantStatus {
		for _, err := range []error{c.kind, fmt.Errorf("featurestore: read x: %w", c.kind), fmt.Errorf("a: %w", fmt.Errorf("b: %w (%w)", c.kind, io.ErrClosedPipe))} {
			if got := classify(err, stEINTERNAL); got != c.code {
				t.Errorf("classify(%q) = %d, want %d", err, got, c.code)
			}
		}
	}
	if len(statusOf) != len(wantStatus) {
		t.Errorf("statusOf has %d kinds, the test %d: add the new kind's status here", len(statusOf), len(wantStatus))
	}
	for _, k := range statusOf {
		found := false
		for _, c := range wantStatus {
			found = found || c.kind == k.kind
		}
		if !found {
			t.Errorf("statusOf maps %v, which the test does not know", k.kind)
		}
	}
}

// A damaged placement file is corruption, as a damaged dataset is: placement wraps
// dataset.ErrCorrupt rather than a sentinel of its own.
func TestStatusOfDamagedPlacement(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, placement.FileName), []byte("TFSPLACE garbage, not a placement"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := placement.Saved(dir)
	if got := classify(err, stEINTERNAL); got != stECORRUPT {
		t.Errorf("classify(%v) = %d, want %d", err, got, stECORRUPT)
	}
}

func TestStatusOfOtherErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want status
	}{
		{nil, stOK},
		{errors.New("something else"), stEINTERNAL}, // the call's default
		{fail(stEINVAL, "dst is NULL"), stEINVAL},
		{withStatus(stENOTSUP, fmt.Errorf("mount: %w", os.ErrNotExist)), stENOTSUP}, // a fixed status wins
		{fmt.Errorf("read: %w", unix.EIO), stEIO},
		{fmt.Errorf("mmap: %w", unix.ENOMEM), stENOMEM},
		{fmt.Errorf("io_uring_setup: %w", unix.ENOSYS), stENOTSUP},
		{&os.PathError{Op: "open", Path: "/x", Err: unix.ENOENT}, stENOENT},
		{&os.PathError{Op: "open", Path: "/x", Err: unix.EACCES}, stEIO},
		// A dataset error that is also a missing file is reported as the dataset error.
		{fmt.Errorf("%w: %w", dataset.ErrCorrupt, os.ErrNotExist), stECORRUPT},
		// A read the end of a truncated dataset file cut short (tiers/ssd) and damaged on-disk
		// topology (topology.DiskCSC) are corruption, not IO errors.
		{fmt.Errorf("ssd: x.bin ends before byte 8192 (truncated?): %w: %w", &gpuio.ShortReadError{File: 0, Offset: 4096, Want: 4096, Got: 100}, dataset.ErrCorrupt), stECORRUPT},
		{fmt.Errorf("topology: read index pointers: gpuio: verify of file 1 block at offset 0: %w", dataset.ErrCorrupt), stECORRUPT},
	} {
		if got := classify(c.err, stEINTERNAL); got != c.want {
			t.Errorf("classify(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
