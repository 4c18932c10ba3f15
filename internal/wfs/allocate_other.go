//go:build !linux

package wfs

// Allocate is ErrUnsupported: no fallocate here.
func (f osFile) Allocate(size int64) error { return ErrUnsupported }
