// Command capi is the C ABI of tierfs (capi/tierfs.h), built with
// `go build -buildmode=c-shared -o build/libtierfs.so ./capi`.
//
// Layout: abi.c holds the public C symbols, each a thin wrapper that turns the opaque handle
// pointers into uintptr_t and calls the Go export tfsgo_<name> here; the thread-local last error
// lives in abi.c too. Every export runs its body through call (or on, for a call on a handle;
// errors.go), which recovers panics into TFS_EINTERNAL (guard) and maps core errors to statuses;
// it checks its handles against the registry (handles.go) so a closed handle gives TFS_ECLOSED,
// and checks every pointer argument for NULL. C buffers are used in place through unsafe.Slice
// and never kept after the call returns; no Go pointer goes to C.
package main

/*
#cgo CFLAGS: -Werror=return-type -Werror=implicit-function-declaration
#include <stddef.h>
#include <stdint.h>
#include "tierfs.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/gpuio"
)

func main() {}

// storeRec is what a tfs_store handle holds.
type storeRec struct {
	s      *featurestore.Store
	opened featurestore.Options // what the store was opened with (for the mount's placement.json)

	mu       sync.Mutex // guards the mount
	mount    unmounter
	mountDir string
	// kept holds the JSON answers ("advise", "place") kept for a retry; dropped with the handle.
	kept keptAnswers
}

// withStatus gives err a fixed status, keeping its message.
func withStatus(code status, err error) error {
	return &statusError{code: code, msg: err.Error(), err: err}
}

// readOptions copies a caller's option struct that starts with size_t struct_size into a zeroed
// Go copy of the full struct, reading only the struct_size bytes the caller has (older callers
// pass smaller structs; what they lack stays zero, i.e. default). firstEnd is where the struct's
// first field after struct_size ends: a struct must hold at least that.
func readOptions[T any](p *T, firstEnd uintptr, what string) (T, error) {
	var out T
	size := uintptr(*(*C.size_t)(unsafe.Pointer(p)))
	if full := unsafe.Sizeof(out); size < firstEnd || size > full {
		return out, fail(stEINVAL, "%s.struct_size is %d; want sizeof(%s) = %d (at least %d for older callers)", what, size, what, full, firstEnd)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&out)), size), unsafe.Slice((*byte)(unsafe.Pointer(p)), size))
	return out, nil
}

// writeOutStruct copies the first struct_size bytes of full (whose struct_size field is set to the
// caller's) to the caller's struct p, after the same size check as readOptions.
func writeOutStruct[T any](p *T, full *T, firstEnd uintptr, what string) error {
	size := uintptr(*(*C.size_t)(unsafe.Pointer(p)))
	if fullSize := unsafe.Sizeof(*full); size < firstEnd || size > fullSize {
		return fail(stEINVAL, "%s.struct_size is %d; want sizeof(%s) = %d (at least %d for older callers)", what, size, what, fullSize, firstEnd)
	}
	*(*C.size_t)(unsafe.Pointer(full)) = C.size_t(size)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(p)), size), unsafe.Slice((*byte)(unsafe.Pointer(full)), size))
	return nil
}

// ids64 views n int64s of C memory; the caller has checked p against NULL when n > 0.
func ids64(p *C.int64_t, n int64) []int64 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(p)), n)
}

// checkArray validates a (pointer, count) argument pair.
func checkArray(p unsafe.Pointer, pname string, n int64, nname string) error {
	if n < 0 {
		return fail(stEINVAL, "%s = %d is negative", nname, n)
	}
	if n > 0 && p == nil {
		return fail(stEINVAL, "%s is NULL (with %s = %d)", pname, nname, n)
	}
	return nil
}

// putString copies s into a fixed char array, NUL-terminated, truncated if it must be.
func putString(dst []C.char, s string) {
	n := min(len(s), len(dst)-1)
	for i := range n {
		dst[i] = C.char(s[i])
	}
	for i := n; i < len(dst); i++ {
		dst[i] = 0
	}
}

//export tfsgo_open
func tfsgo_open(path *C.char, opts *C.tfs_open_options, out unsafe.Pointer, h *C.uintptr_t) C.int {
	return call("tfs_open", stEIO, func() error { return open(path, opts, out, h) })
}

func open(path *C.char, opts *C.tfs_open_options, out unsafe.Pointer, h *C.uintptr_t) error {
	if path == nil {
		return fail(stEINVAL, "path is NULL")
	}
	if out == nil {
		return fail(stEINVAL, "out is NULL")
	}
	var o C.tfs_open_options
	if opts != nil {
		var err error
		if o, err = readOptions(opts, unsafe.Offsetof(o.feature)+unsafe.Sizeof(o.feature), "tfs_open_options"); err != nil {
			return err
		}
	}
	err := openStore(C.GoString(path), storeOptions(&o), h)
	var oe *featurestore.OptionError
	if errors.As(err, &oe) && cOpenOptionNames[oe.Option] != "" {
		oe.Option = cOpenOptionNames[oe.Option] // name the field the caller set
	}
	return err
}

// openStore opens the store of dir with fo and the fault injector of FaultsEnv, and sets *h to
// its handle: tfs_open and tfs_open_json after converting their options.
func openStore(dir string, fo featurestore.Options, h *C.uintptr_t) error {
	faults, err := envFaults()
	if err != nil {
		return err
	}
	fo.Faults = faults
	s, err := featurestore.Open(dir, fo)
	if err != nil {
		return err
	}
	*h = C.uintptr_t(register(kindStore, &storeRec{s: s, opened: fo}))
	return nil
}

// FaultsEnv is the environment variable whose rules (gpuio.ParseFaults) inject IO faults under
// every store tfs_open opens (its planned epochs' packed files included) and every tfs_io
// tfs_io_open opens: the C ABI is the outermost front end of C and Python programs, so it, not
// the core, reads the environment (featurestore.Options.Faults, gpuio.Options.Faults).
const FaultsEnv = "TIERFS_FAULTS"

// envFaults is the injector of FaultsEnv, nil when it is unset or empty; a bad value is
// TFS_EINVAL naming the variable. The Go runtime took its copy of the environment when the
// library loaded.
func envFaults() (gpuio.Injector, error) {
	f, err := gpuio.ParseFaults(os.Getenv(FaultsEnv))
	if err != nil {
		return nil, failWrap(stEINVAL, err, "%s", FaultsEnv)
	}
	if f == nil {
		return nil, nil // not a nil *Faults in a non-nil interface
	}
	return f, nil
}

// cOpenOptionNames names the tfs_open_options fields whose names differ from the JSON names of
// featurestore.Options, so that an option error names what the caller set.
var cOpenOptionNames = map[string]string{
	"host_cache":      "host_cache_bytes",
	"gpu_cache":       "gpu_cache_bytes",
	"topology_memory": "topology_memory_bytes",
	"gpu_device":      "device",
}

// storeOptions converts tfs_open_options to the core's options, unchecked: featurestore.Open
// validates them.
func storeOptions(o *C.tfs_open_options) featurestore.Options {
	str := func(p *C.char) string {
		if p == nil {
			return ""
		}
		return C.GoString(p)
	}
	fo := featurestore.Options{
		Feature:             str(o.feature),
		HostCacheBytes:      int64(o.host_cache_bytes),
		HostPolicy:          str(o.host_policy),
		TopologyMemoryBytes: int64(o.topology_memory_bytes),
		IOBackend:           gpuio.Backend(str(o.io_backend)),
		QueueDepth:          int(o.queue_depth),
		MaxConcurrentIO:     int(o.max_concurrent_io),
		UnverifiedReads:     o.unverified_reads != 0,
		GPUDevice:           int(o.device),
		GPUCacheBytes:       int64(o.gpu_cache_bytes),
		GPUTopology:         str(o.gpu_topology),
		CoalesceGap:         int(o.coalesce_gap),
		ReadAlign:           int(o.read_align),
	}
	if o.device == -1 { // the C API's "default device"
		fo.GPUDevice = 0
	}
	return fo
}

//export tfsgo_close
func tfsgo_close(store C.uintptr_t) C.int {
	return call("tfs_close", stEIO, func() error { return closeStore(uintptr(store)) })
}

func closeStore(h uintptr) error {
	rec, err := release[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	rec.kept.drop() // answers kept for a retry go with the handle
	rec.mu.Lock()
	var uerr error
	if rec.mount != nil {
		if err := rec.mount.Unmount(); err != nil {
			uerr = fmt.Errorf("unmount %s (the store is closed regardless): %w", rec.mountDir, err)
		}
		rec.mount = nil
	}
	rec.mu.Unlock()
	if err := rec.s.Close(); err != nil {
		return err
	}
	return uerr
}

//export tfsgo_store_info_get
func tfsgo_store_info_get(store C.uintptr_t, nodeType *C.char, out *C.tfs_store_info) C.int {
	return on("tfs_store_info_get", stEIO, store, kindStore, func(rec *storeRec) error { return storeInfo(rec, nodeType, out) })
}

func storeInfo(rec *storeRec, nodeType *C.char, out *C.tfs_store_info) error {
	if out == nil {
		return fail(stEINVAL, "out is NULL")
	}
	ss := rec.s.Session()
	t, err := nodeTypeInfo(ss, cString(nodeType))
	if err != nil {
		return err
	}
	var info C.tfs_store_info
	info.num_nodes = C.int64_t(t.Count)
	for _, e := range ss.EdgeTypes() {
		if e.Dst == t.Name {
			info.num_edges += C.int64_t(e.Count)
		}
	}
	for _, f := range t.Features {
		if f.Default {
			info.dim, info.row_bytes = C.int64_t(f.Dim), C.int64_t(f.RowBytes)
			putString(info.dtype[:], string(f.DType))
		}
	}
	info.num_classes = C.int64_t(t.NumClasses)
	putString(info.io_backend[:], string(rec.s.IOBackend()))
	return writeOutStruct(out, &info, unsafe.Offsetof(info.num_nodes)+unsafe.Sizeof(info.num_nodes), "tfs_store_info")
}

// nodeTypeInfo describes node type name of ss ("" for the only one).
func nodeTypeInfo(ss *featurestore.Session, name string) (featurestore.NodeTypeInfo, error) {
	nt, err := ss.Internals().NodeTypeIndex(name)
	if err != nil {
		return featurestore.NodeTypeInfo{}, err
	}
	return ss.NodeTypes()[nt], nil
}

//export tfsgo_gather
func tfsgo_gather(store C.uintptr_t, nodeType, feature *C.char, ids *C.int64_t, n C.int64_t, dst unsafe.Pointer, dstBytes C.int64_t) C.int {
	return call("tfs_gather", stEIO, func() error { return gather(uintptr(store), nodeType, feature, ids, int64(n), dst, int64(dstBytes)) })
}

// gather reads the rows of a node type's feature: through the type's tier stack for its served
// feature, else from disk. Rows land directly in the caller's buffer: no copy through Go memory.
func gather(h uintptr, nodeType, feature *C.char, ids *C.int64_t, n int64, dst unsafe.Pointer, dstBytes int64) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	ss, nt, name := rec.s.Session(), cString(nodeType), cString(feature)
	if s, err := ss.Stack(nt); err == nil && (name == "" || name == s.Feature().Name) {
		// The type's served feature, through its tiers.
		if err := checkGatherArgs(s, ids, n, dst, "dst", dstBytes); err != nil || n == 0 {
			return err
		}
		return s.Gather(ids64(ids, n), unsafe.Slice((*byte)(dst), dstBytes))
	}
	if err := checkArray(unsafe.Pointer(ids), "ids", n, "n"); err != nil {
		return err
	}
	if err := checkArray(dst, "dst", n, "n"); err != nil {
		return err
	}
	if n > math.MaxInt64>>33 { // rows are under 2^33 bytes (dim <= 2^30 of <= 8 bytes): n*row_bytes fits
		return fail(stEINVAL, "n = %d ids is more than one gather takes (2^30)", n)
	}
	// Another feature, from disk (or the type's error): the session checks dst_bytes against the
	// feature's row size and the ids against its rows.
	return ss.Gather(nt, name, ids64(ids, n), hostBytes(dst, dstBytes))
}

// checkGatherArgs checks a gather of n ids into dst (dst_bytes) of the tier stack s.
func checkGatherArgs(s *featurestore.Store, ids *C.int64_t, n int64, dst unsafe.Pointer, dstName string, dstBytes int64) error {
	if err := checkArray(unsafe.Pointer(ids), "ids", n, "n"); err != nil {
		return err
	}
	if err := checkArray(dst, dstName, n, "n"); err != nil {
		return err
	}
	rb := s.RowBytes()
	if n > math.MaxInt64/rb {
		return fail(stEINVAL, "n = %d rows of %d bytes overflow int64", n, rb)
	}
	if dstBytes != n*rb {
		return fail(stEINVAL, "%s_bytes = %d; %d ids of %d bytes per row need %d", strings.TrimSuffix(dstName, "_device"), dstBytes, n, rb, n*rb)
	}
	return nil
}

//export tfsgo_gather_device
func tfsgo_gather_device(store C.uintptr_t, nodeType *C.char, ids *C.int64_t, n C.int64_t, dst unsafe.Pointer, dstBytes C.int64_t, stream unsafe.Pointer) C.int {
	return call("tfs_gather_device", stEIO, func() error {
		return gatherDevice(uintptr(store), nodeType, ids, int64(n), dst, int64(dstBytes), stream, false)
	})
}

//export tfsgo_gather_device_ids
func tfsgo_gather_device_ids(store C.uintptr_t, nodeType *C.char, ids *C.int64_t, n C.int64_t, dst unsafe.Pointer, dstBytes C.int64_t, stream unsafe.Pointer) C.int {
	return call("tfs_gather_device_ids", stEIO, func() error {
		return gatherDevice(uintptr(store), nodeType, ids, int64(n), dst, int64(dstBytes), stream, true)
	})
}

// gatherDevice serves tfs_gather_device and, with idsOnDevice, tfs_gather_device_ids (ids is then
// a device address Go never reads), through node_type's tier stack.
func gatherDevice(h uintptr, nodeType *C.char, ids *C.int64_t, n int64, dst unsafe.Pointer, dstBytes int64, stream unsafe.Pointer, idsOnDevice bool) error {
	s, err := storeStack(h, nodeType)
	if err != nil {
		return err
	}
	if err := checkGatherArgs(s, ids, n, dst, "dst_device", dstBytes); err != nil {
		return err
	}
	if idsOnDevice {
		return s.GatherDeviceIDs(uintptr(unsafe.Pointer(ids)), int(n), uintptr(dst), uintptr(stream))
	}
	return s.GatherDevice(ids64(ids, n), uintptr(dst), uintptr(stream))
}

// storeStack is the tier stack of node_type (NULL or "": the only node type) of the store h.
func storeStack(h uintptr, nodeType *C.char) (*featurestore.Store, error) {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return nil, err
	}
	return rec.s.Session().Stack(cString(nodeType))
}

//export tfsgo_labels
func tfsgo_labels(store C.uintptr_t, nodeType *C.char, ids *C.int64_t, n C.int64_t, out *C.int64_t) C.int {
	return call("tfs_labels", stEIO, func() error { return labels(uintptr(store), nodeType, ids, int64(n), out) })
}

func labels(h uintptr, nodeType *C.char, ids *C.int64_t, n int64, out *C.int64_t) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	if err := checkArray(unsafe.Pointer(ids), "ids", n, "n"); err != nil {
		return err
	}
	if err := checkArray(unsafe.Pointer(out), "out", n, "n"); err != nil {
		return err
	}
	return rec.s.Session().Labels(cString(nodeType), ids64(ids, n), ids64(out, n))
}

//export tfsgo_split
func tfsgo_split(store C.uintptr_t, nodeType, name *C.char, out *C.int64_t, capacity C.int64_t, count *C.int64_t) C.int {
	return call("tfs_split", stEIO, func() error { return split(uintptr(store), nodeType, name, out, int64(capacity), count) })
}

// split reads the split's ids straight into the caller's buffer (only the cap it asked for); a
// size query (cap 0) reads nothing.
func split(h uintptr, nodeType, name *C.char, out *C.int64_t, capacity int64, count *C.int64_t) error {
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	if name == nil {
		return fail(stEINVAL, "name is NULL")
	}
	if count == nil {
		return fail(stEINVAL, "count is NULL")
	}
	if err := checkArray(unsafe.Pointer(out), "out", capacity, "cap"); err != nil {
		return err
	}
	size, err := rec.s.Session().ReadSplit(cString(nodeType), C.GoString(name), ids64(out, capacity))
	if err != nil {
		return err
	}
	*count = C.int64_t(size)
	return nil
}

//export tfsgo_place
func tfsgo_place(store C.uintptr_t, nodeType *C.char, hotness *C.uint32_t, n C.int64_t) C.int {
	return call("tfs_place", stEIO, func() error { return place(uintptr(store), nodeType, hotness, int64(n)) })
}

func place(h uintptr, nodeType *C.char, hotness *C.uint32_t, n int64) error {
	s, err := storeStack(h, nodeType)
	if err != nil {
		return err
	}
	if hotness == nil {
		return s.Place(nil)
	}
	if nodes := s.NumNodes(); n != nodes {
		return fail(stEINVAL, "hotness has n = %d counts; node type %q has %d nodes (pass NULL to rank by in-degree)", n, s.NodeType(), nodes)
	}
	if n == 0 {
		return s.Place([]uint32{})
	}
	return s.Place(unsafe.Slice((*uint32)(unsafe.Pointer(hotness)), n))
}

//export tfsgo_hottest
func tfsgo_hottest(store C.uintptr_t, nodeType *C.char, hotness *C.uint32_t, n C.int64_t, k C.int64_t, out *C.int64_t, count *C.int64_t) C.int {
	return call("tfs_hottest", stEIO, func() error { return hottest(uintptr(store), nodeType, hotness, int64(n), int64(k), out, count) })
}

func hottest(h uintptr, nodeType *C.char, hotness *C.uint32_t, n, k int64, out, count *C.int64_t) error {
	if count == nil {
		return fail(stEINVAL, "count is NULL")
	}
	if err := checkArray(unsafe.Pointer(out), "out", k, "k"); err != nil {
		return err
	}
	rec, err := lookup[*storeRec](h, kindStore)
	if err != nil {
		return err
	}
	var hot []uint32
	if hotness != nil {
		if err := checkArray(unsafe.Pointer(hotness), "hotness", n, "n"); err != nil {
			return err
		}
		hot = unsafe.Slice((*uint32)(unsafe.Pointer(hotness)), n)
	}
	// A type without features (no tier stack) is ranked too: the learned tables' memory tiers
	// (tierfs.Embedding) are placed by this ranking.
	ids, err := rec.s.Session().HottestIDs(cString(nodeType), hot, k)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		copy(unsafe.Slice((*int64)(unsafe.Pointer(out)), len(ids)), ids)
	}
	*count = C.int64_t(len(ids))
	return nil
}

//export tfsgo_place_ids
func tfsgo_place_ids(store C.uintptr_t, nodeType *C.char, ids *C.int64_t, n C.int64_t) C.int {
	return call("tfs_place_ids", stEINVAL, func() error { return placeIDs(uintptr(store), nodeType, ids, int64(n)) })
}

func placeIDs(h uintptr, nodeType *C.char, ids *C.int64_t, n int64) error {
	if err := checkArray(unsafe.Pointer(ids), "ids", n, "n"); err != nil {
		return err
	}
	s, err := storeStack(h, nodeType)
	if err != nil {
		return err
	}
	return s.PlaceIDs(ids64(ids, n))
}

//export tfsgo_stats_json
func tfsgo_stats_json(store C.uintptr_t, buf *C.char, capacity C.size_t, needed *C.size_t) C.int {
	return on("tfs_stats_json", stEINTERNAL, store, kindStore, func(rec *storeRec) error {
		return writeJSON(buf, capacity, needed, copyJSON, func() (any, error) { return rec.s.Stats(), nil })
	})
}

//export tfsgo_mount
func tfsgo_mount(store C.uintptr_t, dir *C.char) C.int {
	// Mount's own errors that are not errno or missing paths are about dir (not a directory).
	return on("tfs_mount", stEINVAL, store, kindStore, func(rec *storeRec) error {
		if dir == nil {
			return fail(stEINVAL, "dir is NULL")
		}
		d := C.GoString(dir)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if rec.mount != nil {
			return fail(stEINVAL, "the store is already mounted at %s", rec.mountDir)
		}
		m, err := mountStore(rec, d)
		if err != nil {
			return err
		}
		rec.mount, rec.mountDir = m, d
		return nil
	})
}

//export tfsgo_unmount
func tfsgo_unmount(store C.uintptr_t) C.int {
	return on("tfs_unmount", stEIO, store, kindStore, func(rec *storeRec) error {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if rec.mount == nil {
			return fail(stEINVAL, "the store is not mounted")
		}
		if err := rec.mount.Unmount(); err != nil {
			return fmt.Errorf("unmount %s: %w", rec.mountDir, err)
		}
		rec.mount, rec.mountDir = nil, ""
		return nil
	})
}
