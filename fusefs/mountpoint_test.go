package fusefs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
)

// An empty mountpoint (the working directory, once made absolute) and one that is already a
// mount (mounts would stack) are refused, naming the directory.
func TestCheckMountpoint(t *testing.T) {
	if _, err := CheckMountpoint(""); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty mountpoint: %v", err)
	}
	if _, err := CheckMountpoint("/proc"); err == nil || !strings.Contains(err.Error(), "/proc is already a mountpoint") || !strings.Contains(err.Error(), "proc") {
		t.Errorf("/proc: %v", err)
	}
	// Through a symlink, too.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink("/proc", link); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckMountpoint(link); err == nil || !strings.Contains(err.Error(), link+" is already a mountpoint") {
		t.Errorf("a symlink to /proc: %v", err)
	}
	dir := t.TempDir()
	if abs, err := CheckMountpoint(dir); err != nil || abs != dir {
		t.Errorf("a fresh directory: %q, %v", abs, err)
	}
}

// Mounting a second view on a mounted directory is refused; the first mount stays alone there.
func TestMountTwiceRefused(t *testing.T) {
	d := writeDataset(t, 200, 4, dataset.Float32, 3, newRand(t))
	s := openStore(t, d, featurestore.Options{})
	v := mount(t, s, Options{})
	v2, err := Mount(s, v.Dir(), Options{})
	if err == nil {
		v2.Unmount()
	}
	if err == nil || !strings.Contains(err.Error(), v.Dir()+" is already a tierfs mount") {
		t.Fatalf("a second mount at %s: %v", v.Dir(), err)
	}
}
