// Package cuda loads libtierfs_cuda.so, tierfs's CUDA shim, at run time and wraps its C ABI
// (tierfs_cuda.h beside this file). Nothing links against CUDA: on a machine without the
// library, its driver or a GPU, Load fails with the reason and every caller stays on the host.
//
// Device and pinned-host addresses are uintptr values that Go never dereferences, except the
// byte views HostAlloc hands out of pinned C memory. Every call names the device it works on and
// makes it current on the calling thread first. CUDA failures come back as *Error naming the call.
package cuda

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tierfs_cuda.h"

#define TFC_FUNCS(X) X(tfc_abi_version) X(tfc_last_error) X(tfc_device_count) X(tfc_device_info) \
  X(tfc_malloc) X(tfc_free) X(tfc_host_alloc) X(tfc_host_free) X(tfc_host_register) \
  X(tfc_host_unregister) X(tfc_memcpy) X(tfc_memset) X(tfc_stream_create) X(tfc_stream_destroy) \
  X(tfc_stream_sync) X(tfc_event_create) X(tfc_event_destroy) X(tfc_event_record) X(tfc_event_sync) \
  X(tfc_event_query) X(tfc_event_elapsed_ms) X(tfc_stream_wait_event) X(tfc_gather_rows) \
  X(tfc_copy_pieces) X(tfc_sample_degrees) X(tfc_sample_hop) X(tfc_split_gather) X(tfc_device_sync) \
  X(tfc_uring_read)

#define TFC_DECL(f) static __typeof__(&f) p_##f;
TFC_FUNCS(TFC_DECL)

static void *tfc_lib;

// tfc_load opens path and resolves every symbol; on failure err says why.
static int tfc_load(const char *path, char *err, int errlen) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) { snprintf(err, errlen, "%s", dlerror()); return -1; }
#define TFC_LOAD(f) p_##f = (__typeof__(&f))dlsym(lib, #f); \
  if (!p_##f) { snprintf(err, errlen, "%s lacks symbol %s", path, #f); dlclose(lib); return -1; }
  TFC_FUNCS(TFC_LOAD)
  tfc_lib = lib;
  return 0;
}

// tfc_self_path writes the path of the object (shared library or executable) holding this code.
static int tfc_self_path(char *buf, int n) {
  Dl_info info;
  if (!dladdr((void *)tfc_self_path, &info) || !info.dli_fname) return -1;
  snprintf(buf, n, "%s", info.dli_fname);
  return 0;
}

static void *tfc_ptr(uintptr_t p) { return (void *)p; }

static void tfc_grab(int rc, char *err) {
  if (rc) snprintf(err, 512, "%s", p_tfc_last_error());
}

static int c_abi_version(void) { return p_tfc_abi_version(); }
static int c_device_count(char *e, int *n) { int rc = p_tfc_device_count(n); tfc_grab(rc, e); return rc; }
static int c_device_info(char *e, int dev, char *name, int name_len, int *sms, int *ma, int *mi, uint64_t *fr, uint64_t *to) {
  int rc = p_tfc_device_info(dev, name, name_len, sms, ma, mi, fr, to); tfc_grab(rc, e); return rc; }
static int c_malloc(char *e, int dev, uint64_t b, uintptr_t *p) {
  void *q = 0; int rc = p_tfc_malloc(dev, b, &q); *p = (uintptr_t)q; tfc_grab(rc, e); return rc; }
static int c_free(char *e, int dev, uintptr_t p) { int rc = p_tfc_free(dev, (void *)p); tfc_grab(rc, e); return rc; }
static int c_host_alloc(char *e, int dev, uint64_t b, uintptr_t *p) {
  void *q = 0; int rc = p_tfc_host_alloc(dev, b, &q); *p = (uintptr_t)q; tfc_grab(rc, e); return rc; }
static int c_host_free(char *e, int dev, uintptr_t p) { int rc = p_tfc_host_free(dev, (void *)p); tfc_grab(rc, e); return rc; }
static int c_host_register(char *e, int dev, uintptr_t p, uint64_t b, uintptr_t *d) {
  void *q = 0; int rc = p_tfc_host_register(dev, (void *)p, b, &q); *d = (uintptr_t)q; tfc_grab(rc, e); return rc; }
static int c_host_unregister(char *e, int dev, uintptr_t p) { int rc = p_tfc_host_unregister(dev, (void *)p); tfc_grab(rc, e); return rc; }
static int c_memcpy(char *e, int dev, uintptr_t d, uintptr_t s, uint64_t b, uintptr_t st) {
  int rc = p_tfc_memcpy(dev, (void *)d, (const void *)s, b, (void *)st); tfc_grab(rc, e); return rc; }
static int c_memset(char *e, int dev, uintptr_t d, int v, uint64_t b, uintptr_t st) {
  int rc = p_tfc_memset(dev, (void *)d, v, b, (void *)st); tfc_grab(rc, e); return rc; }
static int c_stream_create(char *e, int dev, uintptr_t *s) {
  void *q = 0; int rc = p_tfc_stream_create(dev, &q); *s = (uintptr_t)q; tfc_grab(rc, e); return rc; }
static int c_stream_destroy(char *e, int dev, uintptr_t s) { int rc = p_tfc_stream_destroy(dev, (void *)s); tfc_grab(rc, e); return rc; }
static int c_stream_sync(char *e, int dev, uintptr_t s) { int rc = p_tfc_stream_sync(dev, (void *)s); tfc_grab(rc, e); return rc; }
static int c_event_create(char *e, int dev, uintptr_t *ev) {
  void *q = 0; int rc = p_tfc_event_create(dev, &q); *ev = (uintptr_t)q; tfc_grab(rc, e); return rc; }
static int c_event_destroy(char *e, int dev, uintptr_t ev) { int rc = p_tfc_event_destroy(dev, (void *)ev); tfc_grab(rc, e); return rc; }
static int c_event_record(char *e, int dev, uintptr_t ev, uintptr_t s) { int rc = p_tfc_event_record(dev, (void *)ev, (void *)s); tfc_grab(rc, e); return rc; }
static int c_event_sync(char *e, int dev, uintptr_t ev) { int rc = p_tfc_event_sync(dev, (void *)ev); tfc_grab(rc, e); return rc; }
static int c_event_query(char *e, int dev, uintptr_t ev, int *done) { int rc = p_tfc_event_query(dev, (void *)ev, done); tfc_grab(rc, e); return rc; }
static int c_event_elapsed_ms(char *e, int dev, uintptr_t a, uintptr_t b, float *ms) {
  int rc = p_tfc_event_elapsed_ms(dev, (void *)a, (void *)b, ms); tfc_grab(rc, e); return rc; }
static int c_stream_wait_event(char *e, int dev, uintptr_t s, uintptr_t ev) {
  int rc = p_tfc_stream_wait_event(dev, (void *)s, (void *)ev); tfc_grab(rc, e); return rc; }
static int c_gather_rows(char *e, int dev, uintptr_t src, uint64_t rb, uintptr_t sr, uintptr_t dr, int64_t n, uintptr_t dst, int mb, uintptr_t st) {
  int rc = p_tfc_gather_rows(dev, (const void *)src, rb, (const int64_t *)sr, (const int64_t *)dr, n, (void *)dst, mb, (void *)st);
  tfc_grab(rc, e); return rc; }
static int c_split_gather(char *e, int dev, uintptr_t ids, int64_t n, int64_t nn, const tfc_tier_index *t, int nt, uint64_t rb,
                          uintptr_t dst, uintptr_t mi, uintptr_t mp, uintptr_t scratch, uintptr_t hc, int mb, uintptr_t st) {
  int rc = p_tfc_split_gather(dev, (const int64_t *)ids, n, nn, t, nt, rb, (void *)dst, (int64_t *)mi, (int64_t *)mp,
                              (unsigned long long *)scratch, (unsigned long long *)hc, mb, (void *)st);
  tfc_grab(rc, e); return rc; }
static int c_device_sync(char *e, int dev) { int rc = p_tfc_device_sync(dev); tfc_grab(rc, e); return rc; }
static int c_copy_pieces(char *e, int dev, uintptr_t pieces, int64_t n, int mb, uintptr_t st) {
  int rc = p_tfc_copy_pieces(dev, (const tfc_piece *)pieces, n, mb, (void *)st); tfc_grab(rc, e); return rc; }
static int c_uring_read(char *e, int dev, const tfc_uring *r, uintptr_t reads, int64_t n, uintptr_t pieces, uintptr_t status,
                        int threads, uintptr_t st) {
  int rc = p_tfc_uring_read(dev, r, (const tfc_uring_io *)reads, n, (const tfc_piece *)pieces, (tfc_uring_status *)status,
                            threads, (void *)st);
  tfc_grab(rc, e); return rc; }
static int c_sample_degrees(char *e, int dev, uintptr_t indptr, uintptr_t nodes, int64_t n, uintptr_t deg, int mb, uintptr_t st) {
  int rc = p_tfc_sample_degrees(dev, (const int64_t *)indptr, (const int64_t *)nodes, n, (int64_t *)deg, mb, (void *)st);
  tfc_grab(rc, e); return rc; }
static int c_sample_hop(char *e, int dev, uintptr_t indptr, uintptr_t indices, int ib, uintptr_t nodes, uintptr_t deg,
                        uintptr_t off, int64_t n, int fanout, int replace, uint64_t seed, int hop, uintptr_t pos,
                        uintptr_t out, int mb, uintptr_t st) {
  int rc = p_tfc_sample_hop(dev, (const int64_t *)indptr, (const void *)indices, ib, (const int64_t *)nodes,
                            (const int64_t *)deg, (const int64_t *)off, n, fanout, replace, seed, hop,
                            (int64_t *)pos, (int64_t *)out, mb, (void *)st);
  tfc_grab(rc, e); return rc; }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"
)

// ABIVersion is the shim ABI this package speaks (TFC_ABI_VERSION).
const ABIVersion = C.TFC_ABI_VERSION

// LibraryName is the shim's file name.
const LibraryName = "libtierfs_cuda.so"

// Error is a failed CUDA call.
type Error struct {
	Code    int    // cudaError_t
	Message string // the shim's message: the call, its arguments, CUDA's error name and text
}

func (e *Error) Error() string { return "cuda: " + e.Message }

// ErrUnavailable is wrapped by Load's error when the shim or a GPU cannot be used.
var ErrUnavailable = errors.New("CUDA unavailable")

var (
	loadOnce sync.Once
	loadErr  error
	loadPath string
)

// Load opens the shim once per process and checks its ABI version and that a device exists.
// It looks at $TIERFS_CUDA_LIB, then beside the library or executable holding this code (and
// in build/ or _lib/ next to it), then the dynamic loader's search path.
func Load() error {
	loadOnce.Do(func() { loadErr = load() })
	return loadErr
}

// Path is the file Load opened, "" before a successful Load.
func Path() string {
	if Load() != nil {
		return ""
	}
	return loadPath
}

func load() error {
	var tried []string
	try := func(path string) error {
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		var buf [512]C.char
		if C.tfc_load(cpath, &buf[0], C.int(len(buf))) != 0 {
			tried = append(tried, C.GoString(&buf[0]))
			return errors.New(C.GoString(&buf[0]))
		}
		loadPath = path
		return nil
	}
	var candidates []string
	if p := os.Getenv("TIERFS_CUDA_LIB"); p != "" {
		candidates = []string{p}
	} else {
		var self [4096]C.char
		if C.tfc_self_path(&self[0], C.int(len(self))) == 0 {
			dir := filepath.Dir(C.GoString(&self[0]))
			for _, d := range []string{dir, filepath.Join(dir, "build"), filepath.Join(dir, "_lib"), filepath.Join(dir, "..", "build")} {
				if p := filepath.Join(d, LibraryName); fileExists(p) {
					candidates = append(candidates, p)
				}
			}
		}
		candidates = append(candidates, LibraryName)
	}
	loaded := false
	for _, p := range candidates {
		if try(p) == nil {
			loaded = true
			break
		}
	}
	if !loaded {
		return fmt.Errorf("%w: cannot load %s (%s)", ErrUnavailable, LibraryName, joinShort(tried))
	}
	if v := int(C.c_abi_version()); v != ABIVersion {
		return fmt.Errorf("%w: %s has ABI version %d, this build needs %d; rebuild it with `make cuda`", ErrUnavailable, loadPath, v, ABIVersion)
	}
	n, err := DeviceCount()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: no CUDA device", ErrUnavailable)
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func joinShort(msgs []string) string {
	out := ""
	for i, m := range msgs {
		if i > 0 {
			out += "; "
		}
		out += m
	}
	return out
}

// call runs f with an error buffer and turns a failure into *Error.
func call(f func(e *C.char) C.int) error {
	var buf [512]C.char
	if rc := f(&buf[0]); rc != 0 {
		return &Error{Code: int(rc), Message: C.GoString(&buf[0])}
	}
	return nil
}

// DeviceCount is the number of CUDA devices.
func DeviceCount() (int, error) {
	var n C.int
	err := call(func(e *C.char) C.int { return C.c_device_count(e, &n) })
	return int(n), err
}

// Device describes one GPU.
type Device struct {
	Ordinal    int    `json:"ordinal"`
	Name       string `json:"name"`
	SMs        int    `json:"sms"`
	CCMajor    int    `json:"cc_major"`
	CCMinor    int    `json:"cc_minor"`
	FreeBytes  uint64 `json:"free_bytes"`
	TotalBytes uint64 `json:"total_bytes"`
}

// Info describes device dev.
func Info(dev int) (Device, error) {
	if err := Load(); err != nil {
		return Device{}, err
	}
	var name [256]C.char
	var sms, ma, mi C.int
	var fr, to C.uint64_t
	err := call(func(e *C.char) C.int {
		return C.c_device_info(e, C.int(dev), &name[0], C.int(len(name)), &sms, &ma, &mi, &fr, &to)
	})
	if err != nil {
		return Device{}, err
	}
	return Device{Ordinal: dev, Name: C.GoString(&name[0]), SMs: int(sms), CCMajor: int(ma), CCMinor: int(mi), FreeBytes: uint64(fr), TotalBytes: uint64(to)}, nil
}

// Stream is a cudaStream_t; 0 is the legacy default stream.
type Stream uintptr

// Event is a cudaEvent_t.
type Event uintptr

// Malloc allocates bytes of device memory.
func Malloc(dev int, bytes uint64) (uintptr, error) {
	var p C.uintptr_t
	err := call(func(e *C.char) C.int { return C.c_malloc(e, C.int(dev), C.uint64_t(bytes), &p) })
	return uintptr(p), err
}

// Free releases device memory from Malloc.
func Free(dev int, p uintptr) error {
	return call(func(e *C.char) C.int { return C.c_free(e, C.int(dev), C.uintptr_t(p)) })
}

// HostAlloc allocates bytes of pinned host memory mapped for every device; the slice views it
// (C memory: valid until HostFree, never moved by Go).
func HostAlloc(dev int, bytes uint64) (uintptr, []byte, error) {
	var p C.uintptr_t
	if err := call(func(e *C.char) C.int { return C.c_host_alloc(e, C.int(dev), C.uint64_t(bytes), &p) }); err != nil {
		return 0, nil, err
	}
	return uintptr(p), unsafe.Slice((*byte)(C.tfc_ptr(p)), bytes), nil
}

// HostFree releases memory from HostAlloc.
func HostFree(dev int, p uintptr) error {
	return call(func(e *C.char) C.int { return C.c_host_free(e, C.int(dev), C.uintptr_t(p)) })
}

// HostRegister pins mmap'ed or C memory [p, p+bytes) and maps it for the devices; it returns the
// address kernels use for p.
func HostRegister(dev int, p uintptr, bytes uint64) (uintptr, error) {
	var d C.uintptr_t
	err := call(func(e *C.char) C.int { return C.c_host_register(e, C.int(dev), C.uintptr_t(p), C.uint64_t(bytes), &d) })
	return uintptr(d), err
}

// HostUnregister undoes HostRegister.
func HostUnregister(dev int, p uintptr) error {
	return call(func(e *C.char) C.int { return C.c_host_unregister(e, C.int(dev), C.uintptr_t(p)) })
}

// Memcpy copies bytes from src to dst asynchronously on stream (any kinds of memory).
func Memcpy(dev int, dst, src uintptr, bytes uint64, stream Stream) error {
	return call(func(e *C.char) C.int {
		return C.c_memcpy(e, C.int(dev), C.uintptr_t(dst), C.uintptr_t(src), C.uint64_t(bytes), C.uintptr_t(stream))
	})
}

// Memset sets bytes at dst to value asynchronously on stream.
func Memset(dev int, dst uintptr, value byte, bytes uint64, stream Stream) error {
	return call(func(e *C.char) C.int {
		return C.c_memset(e, C.int(dev), C.uintptr_t(dst), C.int(value), C.uint64_t(bytes), C.uintptr_t(stream))
	})
}

// NewStream creates a non-blocking stream.
func NewStream(dev int) (Stream, error) {
	var s C.uintptr_t
	err := call(func(e *C.char) C.int { return C.c_stream_create(e, C.int(dev), &s) })
	return Stream(s), err
}

// DestroyStream destroys a stream from NewStream.
func DestroyStream(dev int, s Stream) error {
	return call(func(e *C.char) C.int { return C.c_stream_destroy(e, C.int(dev), C.uintptr_t(s)) })
}

// SyncStream waits for everything queued on s.
func SyncStream(dev int, s Stream) error {
	return call(func(e *C.char) C.int { return C.c_stream_sync(e, C.int(dev), C.uintptr_t(s)) })
}

// NewEvent creates an event.
func NewEvent(dev int) (Event, error) {
	var ev C.uintptr_t
	err := call(func(e *C.char) C.int { return C.c_event_create(e, C.int(dev), &ev) })
	return Event(ev), err
}

// DestroyEvent destroys an event from NewEvent.
func DestroyEvent(dev int, ev Event) error {
	return call(func(e *C.char) C.int { return C.c_event_destroy(e, C.int(dev), C.uintptr_t(ev)) })
}

// Record records ev on s.
func Record(dev int, ev Event, s Stream) error {
	return call(func(e *C.char) C.int { return C.c_event_record(e, C.int(dev), C.uintptr_t(ev), C.uintptr_t(s)) })
}

// SyncEvent waits until the work recorded before ev has finished.
func SyncEvent(dev int, ev Event) error {
	return call(func(e *C.char) C.int { return C.c_event_sync(e, C.int(dev), C.uintptr_t(ev)) })
}

// EventDone reports whether the work recorded before ev has finished, without waiting.
func EventDone(dev int, ev Event) (bool, error) {
	var done C.int
	err := call(func(e *C.char) C.int { return C.c_event_query(e, C.int(dev), C.uintptr_t(ev), &done) })
	return done != 0, err
}

// ElapsedMs is the time between two recorded events.
func ElapsedMs(dev int, start, end Event) (float32, error) {
	var ms C.float
	err := call(func(e *C.char) C.int {
		return C.c_event_elapsed_ms(e, C.int(dev), C.uintptr_t(start), C.uintptr_t(end), &ms)
	})
	return float32(ms), err
}

// WaitEvent makes s wait for ev without blocking the host.
func WaitEvent(dev int, s Stream, ev Event) error {
	return call(func(e *C.char) C.int { return C.c_stream_wait_event(e, C.int(dev), C.uintptr_t(s), C.uintptr_t(ev)) })
}

// GatherRows enqueues the row gather of tfc_gather_rows: dst row dstRows[i] (or i when dstRows
// is 0) gets src row srcRows[i] (or i), for i < n.
func GatherRows(dev int, src uintptr, rowBytes uint64, srcRows, dstRows uintptr, n int64, dst uintptr, maxBlocks int, s Stream) error {
	return call(func(e *C.char) C.int {
		return C.c_gather_rows(e, C.int(dev), C.uintptr_t(src), C.uint64_t(rowBytes), C.uintptr_t(srcRows), C.uintptr_t(dstRows),
			C.int64_t(n), C.uintptr_t(dst), C.int(maxBlocks), C.uintptr_t(s))
	})
}

// DeviceSync waits for every piece of work on device dev, on every stream.
func DeviceSync(dev int) error {
	return call(func(e *C.char) C.int { return C.c_device_sync(e, C.int(dev)) })
}

// Piece is one copy of the completion kernel (tfc_piece).
type Piece struct{ Src, Dst, Len uint64 }

// PieceBytes is the size of a Piece in the arrays CopyPieces reads.
const PieceBytes = int(unsafe.Sizeof(C.tfc_piece{}))

// URing describes an io_uring in mapped memory to the gpu-uring kernel (tfc_uring); every
// address is a device address except StagingUser, the process's address of staging slot 0.
type URing struct {
	SQHead, SQTail, SQFlags, CQHead, CQTail uintptr
	SQMask, SQEntries, CQMask, CQEntries    uint32
	SQEs, CQEs                              uintptr
	StagingUser                             uint64
	StagingDev                              uintptr
	SlotBytes                               uint64
	Slots                                   uint32
	FixedFiles                              bool
	BufIndex                                uint32
	TimeoutNs                               uint64
}

// URingRead is one read of the gpu-uring kernel (tfc_uring_io), laid out as C lays it out.
type URingRead struct {
	File       int32
	Len        uint32
	Offset     uint64
	Need       uint32
	NPieces    uint32
	FirstPiece uint64
}

// URingStatus is what the gpu-uring kernel reports (tfc_uring_status), laid out as in C.
type URingStatus struct {
	Completed, Failed, FirstFailed int64
	FirstRes, TimedOut             int32
	SQWaits                        int64
}

// URingMaxSlots bounds URing.Slots (TFC_URING_MAX_SLOTS).
const URingMaxSlots = C.TFC_URING_MAX_SLOTS

// Layout checks: Go's structs are the C ones, byte for byte.
var (
	_ [unsafe.Sizeof(TierIndex{}) - unsafe.Sizeof(C.tfc_tier_index{})]struct{}
	_ [unsafe.Sizeof(C.tfc_tier_index{}) - unsafe.Sizeof(TierIndex{})]struct{}
	_ [unsafe.Offsetof(TierIndex{}.IDs) - unsafe.Offsetof(C.tfc_tier_index{}.ids)]struct{}
	_ [unsafe.Offsetof(C.tfc_tier_index{}.ids) - unsafe.Offsetof(TierIndex{}.IDs)]struct{}
	_ [unsafe.Offsetof(TierIndex{}.Table) - unsafe.Offsetof(C.tfc_tier_index{}.table)]struct{}
	_ [unsafe.Offsetof(C.tfc_tier_index{}.table) - unsafe.Offsetof(TierIndex{}.Table)]struct{}
	_ [unsafe.Offsetof(TierIndex{}.Mask) - unsafe.Offsetof(C.tfc_tier_index{}.mask)]struct{}
	_ [unsafe.Offsetof(C.tfc_tier_index{}.mask) - unsafe.Offsetof(TierIndex{}.Mask)]struct{}
	_ [unsafe.Offsetof(TierIndex{}.Count) - unsafe.Offsetof(C.tfc_tier_index{}.count)]struct{}
	_ [unsafe.Offsetof(C.tfc_tier_index{}.count) - unsafe.Offsetof(TierIndex{}.Count)]struct{}
	_ [unsafe.Offsetof(TierIndex{}.Rows) - unsafe.Offsetof(C.tfc_tier_index{}.rows)]struct{}
	_ [unsafe.Offsetof(C.tfc_tier_index{}.rows) - unsafe.Offsetof(TierIndex{}.Rows)]struct{}
	_ [unsafe.Sizeof(URingRead{}) - unsafe.Sizeof(C.tfc_uring_io{})]struct{}
	_ [unsafe.Sizeof(C.tfc_uring_io{}) - unsafe.Sizeof(URingRead{})]struct{}
	_ [unsafe.Sizeof(URingStatus{}) - unsafe.Sizeof(C.tfc_uring_status{})]struct{}
	_ [unsafe.Sizeof(C.tfc_uring_status{}) - unsafe.Sizeof(URingStatus{})]struct{}
)

// URingReads enqueues the gpu-uring kernel on s over n reads and their pieces (device-accessible
// arrays); status (device-accessible) is final once the kernel has run.
func URingReads(dev int, r *URing, reads uintptr, n int64, pieces uintptr, status uintptr, threads int, s Stream) error {
	cr := C.tfc_uring{
		sq_head: (*C.uint32_t)(C.tfc_ptr(C.uintptr_t(r.SQHead))), sq_tail: (*C.uint32_t)(C.tfc_ptr(C.uintptr_t(r.SQTail))),
		sq_flags: (*C.uint32_t)(C.tfc_ptr(C.uintptr_t(r.SQFlags))), cq_head: (*C.uint32_t)(C.tfc_ptr(C.uintptr_t(r.CQHead))),
		cq_tail: (*C.uint32_t)(C.tfc_ptr(C.uintptr_t(r.CQTail))),
		sq_mask: C.uint32_t(r.SQMask), sq_entries: C.uint32_t(r.SQEntries), cq_mask: C.uint32_t(r.CQMask), cq_entries: C.uint32_t(r.CQEntries),
		sqes: C.tfc_ptr(C.uintptr_t(r.SQEs)), cqes: C.tfc_ptr(C.uintptr_t(r.CQEs)),
		staging_user: C.uint64_t(r.StagingUser), staging_dev: C.tfc_ptr(C.uintptr_t(r.StagingDev)),
		slot_bytes: C.uint64_t(r.SlotBytes), slots: C.uint32_t(r.Slots), buf_index: C.uint32_t(r.BufIndex),
		timeout_ns: C.uint64_t(r.TimeoutNs),
	}
	if r.FixedFiles {
		cr.fixed_files = 1
	}
	return call(func(e *C.char) C.int {
		return C.c_uring_read(e, C.int(dev), &cr, C.uintptr_t(reads), C.int64_t(n), C.uintptr_t(pieces), C.uintptr_t(status),
			C.int(threads), C.uintptr_t(s))
	})
}

// CopyPieces enqueues the completion kernel over n pieces at the device-accessible address pieces.
func CopyPieces(dev int, pieces uintptr, n int64, maxBlocks int, s Stream) error {
	return call(func(e *C.char) C.int {
		return C.c_copy_pieces(e, C.int(dev), C.uintptr_t(pieces), C.int64_t(n), C.int(maxBlocks), C.uintptr_t(s))
	})
}

// SampleDegrees enqueues deg[i] = indptr[nodes[i]+1] - indptr[nodes[i]] for i < n.
func SampleDegrees(dev int, indptr, nodes uintptr, n int64, deg uintptr, maxBlocks int, s Stream) error {
	return call(func(e *C.char) C.int {
		return C.c_sample_degrees(e, C.int(dev), C.uintptr_t(indptr), C.uintptr_t(nodes), C.int64_t(n), C.uintptr_t(deg), C.int(maxBlocks), C.uintptr_t(s))
	})
}

// HopArgs are the arguments of SampleHop; all addresses device-accessible.
type HopArgs struct {
	Indptr, Indices uintptr
	IndexBytes      int // 4 or 8
	Nodes, Deg, Off uintptr
	N               int64
	Fanout          int
	Replace         bool
	Seed            uint64
	Hop             int
	Pos, Out        uintptr
}

// SampleHop enqueues one hop of neighbor sampling, drawn exactly as topology.SampleNeighbors does.
func SampleHop(dev int, a HopArgs, maxBlocks int, s Stream) error {
	replace := 0
	if a.Replace {
		replace = 1
	}
	return call(func(e *C.char) C.int {
		return C.c_sample_hop(e, C.int(dev), C.uintptr_t(a.Indptr), C.uintptr_t(a.Indices), C.int(a.IndexBytes), C.uintptr_t(a.Nodes),
			C.uintptr_t(a.Deg), C.uintptr_t(a.Off), C.int64_t(a.N), C.int(a.Fanout), C.int(replace), C.uint64_t(a.Seed), C.int(a.Hop),
			C.uintptr_t(a.Pos), C.uintptr_t(a.Out), C.int(maxBlocks), C.uintptr_t(s))
	})
}

// TierIndex is a memory tier's index in device-accessible memory: the ids held, ascending, the
// open-addressing table of positions into them, and the tier's rows. It is tfc_tier_index of
// tierfs_cuda.h, the one definition of the layout: the checks below fail the build when the two
// differ in a field's offset or in size, and SplitGather hands the kernel Go's array as is.
type TierIndex struct {
	IDs   uintptr // int64[Count]
	Table uintptr // int32[Mask+1]
	Mask  uint64
	Count int64
	Rows  uintptr
}

// MaxSplitTiers is how many tier indexes SplitGather takes.
const MaxSplitTiers = C.TFC_MAX_SPLIT_TIERS

// SplitArgs are the arguments of SplitGather; every address is device-accessible.
type SplitArgs struct {
	IDs      uintptr
	N        int64
	NumNodes int64
	Tiers    []TierIndex
	RowBytes uint64
	Dst      uintptr
	// MissIDs and MissPos (N int64 each) get the ids no tier holds and their positions;
	// HostCounts (SplitCounts uint64, device-accessible) has the kernel's counts added once it
	// ends (see tfc_split_gather). Scratch is device memory of SplitScratch uint64, zero before
	// the first call and left zero by each (one per stream of calls).
	MissIDs, MissPos, Scratch, HostCounts uintptr
}

// SplitScratch is the size of SplitArgs.Scratch in uint64.
const SplitScratch = C.TFC_SPLIT_SCRATCH

// SplitCounts is the number of counters SplitGather writes: misses, N minus the first bad
// position (0: none), and the rows each tier served.
const SplitCounts = C.TFC_SPLIT_COUNTS

// SplitGather enqueues the one-pass split and gather of tfc_split_gather.
func SplitGather(dev int, a SplitArgs, maxBlocks int, s Stream) error {
	if len(a.Tiers) > MaxSplitTiers {
		return fmt.Errorf("cuda: split over %d tiers, at most %d", len(a.Tiers), MaxSplitTiers)
	}
	// TierIndex is tfc_tier_index (the layout checks) and holds no Go pointer: the kernel's
	// arguments are read at the call, from Go's array.
	var t [MaxSplitTiers]TierIndex
	copy(t[:], a.Tiers)
	return call(func(e *C.char) C.int {
		return C.c_split_gather(e, C.int(dev), C.uintptr_t(a.IDs), C.int64_t(a.N), C.int64_t(a.NumNodes), (*C.tfc_tier_index)(unsafe.Pointer(&t[0])), C.int(len(a.Tiers)),
			C.uint64_t(a.RowBytes), C.uintptr_t(a.Dst), C.uintptr_t(a.MissIDs), C.uintptr_t(a.MissPos), C.uintptr_t(a.Scratch),
			C.uintptr_t(a.HostCounts), C.int(maxBlocks), C.uintptr_t(s))
	})
}

// Mirror is pinned host memory and device memory of the same size, for data staged on the host
// and copied to the device or back. It grows on demand and keeps no contents across growth.
// Outgrown buffers are kept until Free, not freed when it grows: cudaFree and cudaFreeHost
// synchronize the whole device, and on a per-batch path that wait can deadlock against a NCCL
// collective in flight whose peer rank waits on this process (NCCL's documented hazard). With
// growth by half again each time, the kept buffers total at most about twice the last size.
type Mirror struct {
	Host     []byte // pinned and mapped; C memory
	HostAddr uintptr
	Dev      uintptr
	outgrown []Mirror
}

// Ensure makes both buffers hold at least need bytes, reallocating them at size (>= need) when
// they are smaller (the old ones are kept until Free).
func (m *Mirror) Ensure(dev, need, size int) error {
	if need <= len(m.Host) {
		return nil
	}
	if m.HostAddr != 0 || m.Dev != 0 {
		m.outgrown = append(m.outgrown, Mirror{Host: m.Host, HostAddr: m.HostAddr, Dev: m.Dev})
		m.Host, m.HostAddr, m.Dev = nil, 0, 0
	}
	addr, buf, err := HostAlloc(dev, uint64(size))
	if err != nil {
		return err
	}
	m.HostAddr, m.Host = addr, buf
	if m.Dev, err = Malloc(dev, uint64(size)); err != nil {
		HostFree(dev, m.HostAddr)
		m.Host, m.HostAddr = nil, 0
		return err
	}
	return nil
}

// Free releases the buffers, outgrown ones included (it synchronizes the device: call it where
// no collective can be in flight, e.g. at close).
func (m *Mirror) Free(dev int) {
	for i := range m.outgrown {
		m.outgrown[i].Free(dev)
	}
	if m.HostAddr != 0 {
		HostFree(dev, m.HostAddr)
	}
	if m.Dev != 0 {
		Free(dev, m.Dev)
	}
	*m = Mirror{}
}

// Int64s views n int64 values of pinned host memory b.
func Int64s(b []byte, n int) []int64 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(&b[0])), n)[:n:n]
}
