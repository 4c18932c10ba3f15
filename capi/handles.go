package main

import (
	"runtime/cgo"
	"sync"
)

// kind says what a handle refers to.
type kind uint8

const (
	kindStore kind = iota + 1
	kindSampler
	kindSample
	kindIO
	kindEpochs
	kindTable
)

func (k kind) String() string {
	switch k {
	case kindStore:
		return "store"
	case kindSampler:
		return "sampler"
	case kindSample:
		return "sample"
	case kindIO:
		return "io"
	case kindEpochs:
		return "epochs"
	case kindTable:
		return "table"
	}
	return "unknown"
}

// registry holds the live handles. cgo.Handle.Value panics on a deleted handle, so every Value
// and Delete happens under the registry's lock, after the handle was found live: a closed or
// freed handle gives TFS_ECLOSED, never a panic. Handles are never reused (cgo.NewHandle counts
// up), so a handle at or below the largest issued one that is not live was closed or freed.
var registry struct {
	mu        sync.RWMutex
	live      map[uintptr]kind
	maxIssued uintptr
}

// register wraps v in a new handle of kind k.
func register(k kind, v any) uintptr {
	h := uintptr(cgo.NewHandle(v))
	registry.mu.Lock()
	if registry.live == nil {
		registry.live = map[uintptr]kind{}
	}
	registry.live[h] = k
	registry.maxIssued = max(registry.maxIssued, h)
	registry.mu.Unlock()
	return h
}

// checkLive reports why h is not a live handle of kind want; the caller holds the lock.
func checkLive(h uintptr, want kind) error {
	if h == 0 {
		return fail(stEINVAL, "%s is NULL", want)
	}
	got, ok := registry.live[h]
	switch {
	case !ok && h <= registry.maxIssued:
		return fail(stECLOSED, "the %s handle %#x was already closed or freed", want, h)
	case !ok:
		return fail(stEINVAL, "%#x is not a tierfs handle", h)
	case got != want:
		return fail(stEINVAL, "handle %#x is a %s, not a %s", h, got, want)
	}
	return nil
}

// lookup returns the value behind a live handle of kind want.
func lookup[T any](h uintptr, want kind) (T, error) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	return valueOf[T](h, want)
}

// release deletes a live handle of kind want and returns its value. Of two racing releases of
// one handle, exactly one gets the value; the other gets TFS_ECLOSED.
func release[T any](h uintptr, want kind) (T, error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	v, err := valueOf[T](h, want)
	if err != nil {
		return v, err
	}
	delete(registry.live, h)
	cgo.Handle(h).Delete()
	return v, nil
}

// valueOf is the value behind a live handle of kind want; the caller holds registry.mu.
func valueOf[T any](h uintptr, want kind) (T, error) {
	var zero T
	if err := checkLive(h, want); err != nil {
		return zero, err
	}
	v, ok := cgo.Handle(h).Value().(T)
	if !ok {
		return zero, fail(stEINTERNAL, "handle %#x of kind %s holds a %T", h, want, cgo.Handle(h).Value())
	}
	return v, nil
}
