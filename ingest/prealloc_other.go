//go:build !linux

package ingest

import "os"

func allocate(f *os.File, size int64) error { return errUnsupported }
