package main

import (
	"errors"
	"os"
	"runtime/cgo"
	"syscall"

	"github.com/tierfs/tierfs/embedding"
	"github.com/tierfs/tierfs/fusefs"
)

// unmounter is a mounted view of a store (a *fusefs.View).
type unmounter interface{ Unmount() error }

// mountStore mounts a read-only FUSE view of the store at dir. fusefs.Mount also registers the
// unmount with the store's OnClose; tfs_close unmounts explicitly first all the same (Unmount is
// idempotent), so it can report an unmount error.
func mountStore(rec *storeRec, dir string) (unmounter, error) {
	if _, err := fusefs.CheckMountpoint(dir); err != nil {
		return nil, err // TFS_EINVAL (tfs_mount's default), or the errno of a missing dir
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, failWrap(stENOTSUP, err, "FUSE is not available on this machine (/dev/fuse)")
	}
	v, err := fusefs.Mount(rec.s, dir, fusefs.Options{Placement: fusefs.PlacementOf(rec.s, rec.opened), Tables: openTables})
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			// Neither root nor a fusermount helper: this machine cannot mount for us.
			return nil, withStatus(stENOTSUP, err)
		}
		return nil, err
	}
	return v, nil
}

// openTables lists the embedding tables open now (tfs_table_open's handles), for the mount's
// embeddings/.
func openTables() []*embedding.Table {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	var tables []*embedding.Table
	for h, k := range registry.live {
		if k == kindTable {
			if t, ok := cgo.Handle(h).Value().(*embedding.Table); ok {
				tables = append(tables, t)
			}
		}
	}
	return tables
}
