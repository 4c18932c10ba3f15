//go:build !linux

package ingest

func allocate(fd uintptr, size int64) error { return errUnsupported }
