package main

import (
	"strings"
	"testing"
)

// tfs_mount(s, "") is TFS_EINVAL (it used to mount over the working directory), as is a
// directory that is already a mountpoint; both are refused before FUSE is looked for.
func TestMountRefusesEmptyAndMountedDirs(t *testing.T) {
	for dir, want := range map[string]string{"": "mountpoint is empty", "/proc": "/proc is already a mountpoint"} {
		_, err := mountStore(&storeRec{}, dir)
		if err == nil || classify(err, stEINVAL) != stEINVAL || !strings.Contains(err.Error(), want) {
			t.Errorf("mount at %q: %v (status %d); want TFS_EINVAL saying %q", dir, err, classify(err, stEINVAL), want)
		}
	}
}
