package main

/*
#include <stddef.h>
#include "tierfs.h"
void tfs_set_error(const char *msg, size_t n);
*/
import "C"

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/embedding"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/planned"
	"github.com/tierfs/tierfs/topology"
)

// status is a tfs_status value.
type status int32

const (
	stOK        = status(C.TFS_OK)
	stEINVAL    = status(C.TFS_EINVAL)
	stENOENT    = status(C.TFS_ENOENT)
	stERANGE    = status(C.TFS_ERANGE)
	stECORRUPT  = status(C.TFS_ECORRUPT)
	stEIO       = status(C.TFS_EIO)
	stENOMEM    = status(C.TFS_ENOMEM)
	stECLOSED   = status(C.TFS_ECLOSED)
	stENOTSUP   = status(C.TFS_ENOTSUP)
	stEVERSION  = status(C.TFS_EVERSION)
	stEINTERNAL = status(C.TFS_EINTERNAL)
)

// statusError is an error whose status is decided where it is made (argument checks, handles).
type statusError struct {
	code status
	msg  string
	err  error // wrapped cause, if any
}

func (e *statusError) Error() string { return e.msg }
func (e *statusError) Unwrap() error { return e.err }

// fail makes an error with a fixed status.
func fail(code status, format string, args ...any) error {
	return &statusError{code: code, msg: fmt.Sprintf(format, args...)}
}

// failWrap makes an error with a fixed status that keeps err's message after prefix.
func failWrap(code status, err error, format string, args ...any) error {
	return &statusError{code: code, msg: fmt.Sprintf(format, args...) + ": " + err.Error(), err: err}
}

// statusOf is how the core's kinds of error become statuses: the first entry whose error
// errors.Is finds in the chain decides. Errors whose status is fixed where they are made
// (*statusError, argument checks) and errno values come before and after it (see classify).
var statusOf = []struct {
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
	// A sample past its edge bound: the fanouts and seeds asked for too much.
	{topology.ErrSampleTooLarge, stEINVAL},
	// A plan made for other inputs: the options (or the store) do not match it.
	{planned.ErrStalePlan, stEINVAL},
	{dataset.ErrVersionTooNew, stEVERSION},
	{dataset.ErrCorrupt, stECORRUPT},
	{dataset.ErrNotDataset, stENOENT},
	// An output that holds a dataset or other files, without force.
	{dataset.ErrExists, stEINVAL},
	{dataset.ErrFeatureNotFound, stENOENT},
	{featurestore.ErrNotFound, stENOENT},
	{dataset.ErrTypeNotFound, stENOENT},
	{os.ErrNotExist, stENOENT},
	{featurestore.ErrNoGPU, stENOTSUP},
	{cuda.ErrUnavailable, stENOTSUP},
	{errors.ErrUnsupported, stENOTSUP},
	// A data file shorter than its manifest says: the data does not match the manifest.
	{io.ErrUnexpectedEOF, stECORRUPT},
	{io.EOF, stECORRUPT},
}

// classify maps an error to a status: a *statusError's own, else statusOf's, else by errno,
// else def (what an unknown error most likely means for the call at hand).
func classify(err error, def status) status {
	if err == nil {
		return stOK
	}
	var se *statusError
	if errors.As(err, &se) {
		return se.code
	}
	for _, k := range statusOf {
		if errors.Is(err, k.kind) {
			return k.code
		}
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		switch errno {
		case unix.ENOMEM:
			return stENOMEM
		case unix.ENOSYS, unix.EOPNOTSUPP:
			return stENOTSUP
		}
		return stEIO
	}
	return def
}

// setError records msg as the calling thread's last error. It must be called from the goroutine
// of the export itself (which runs on the C caller's thread), never from one it started.
func setError(msg string) {
	if msg == "" {
		C.tfs_set_error(nil, 0)
		return
	}
	C.tfs_set_error((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
}

// finish turns the result of an export into its status, recording the message on failure.
func finish(fn string, err error, def status) C.int {
	if err == nil {
		return C.int(stOK)
	}
	setError(fn + ": " + err.Error())
	return C.int(classify(err, def))
}

// guard recovers a panic of the export fn into TFS_EINTERNAL with a message saying where. Use as
// `defer guard("tfs_x", &st)` with st the export's named result, as call does.
func guard(fn string, st *C.int) {
	r := recover()
	if r == nil {
		return
	}
	where := ""
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if f.Function != "" && !strings.HasPrefix(f.Function, "runtime.") {
			where = fmt.Sprintf(" at %s (%s:%d)", f.Function, filepath.Base(f.File), f.Line)
			break
		}
		if !more {
			break
		}
	}
	setError(fmt.Sprintf("%s: internal error (a bug in tierfs): panic: %v%s", fn, r, where))
	*st = C.int(stEINTERNAL)
}

// call runs the body of export fn on the caller's thread: do's error becomes the export's status
// (finish; def where neither the error nor its kind decides), a panic TFS_EINTERNAL naming where
// (guard).
func call(fn string, def status, do func() error) (st C.int) {
	defer guard(fn, &st)
	return finish(fn, do(), def)
}

// on is call for an export on the handle h of kind k: do gets the handle's value. A handle that
// is NULL, closed or of another kind fails first, before any other argument is checked.
func on[T any](fn string, def status, h C.uintptr_t, k kind, do func(T) error) C.int {
	return call(fn, def, func() error {
		v, err := lookup[T](uintptr(h), k)
		if err != nil {
			return err
		}
		return do(v)
	})
}
