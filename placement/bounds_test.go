package placement

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierfs/tierfs/dataset"
)

// savedPlacement writes a fake dataset's manifest and a placement of smallGraph into dir.
func savedPlacement(t *testing.T, dir string) (Inputs, func() error) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"format":"tierfs-dataset","version":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	g := smallGraph(t)
	h, err := Profile(g, []int64{0, 1, 2, 3}, ProfileOptions{Fanouts: []int{2, 2}, BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	sizes, _ := SizesOf(g, 64, 4)
	p, err := Plan(h, sizes, Budget{HostBytes: 100}, Unified)
	if err != nil {
		t.Fatal(err)
	}
	return InputsOf(h, p), func() error { return Save(dir, h, p) }
}

// A placement file that is a FIFO, a symlink to a device or out of the dataset, or larger than
// its header says is refused at once, as corrupt, naming the file; none is read whole.
func TestSavedPlacementBounded(t *testing.T) {
	dir := t.TempDir()
	want, save := savedPlacement(t, dir)
	path := filepath.Join(dir, FileName)
	outside := filepath.Join(t.TempDir(), "elsewhere")
	for _, tc := range []struct {
		name string
		make func() error
	}{
		{"fifo", func() error { return syscall.Mkfifo(path, 0o644) }},
		{"/dev/zero", func() error { return os.Symlink("/dev/zero", path) }},
		{"outside", func() error {
			if err := save(); err != nil {
				return err
			}
			if err := os.Rename(path, outside); err != nil {
				return err
			}
			return os.Symlink(outside, path)
		}},
		{"sparse", func() error {
			if err := save(); err != nil {
				return err
			}
			return os.Truncate(path, 1<<40)
		}},
	} {
		os.Remove(path)
		if err := tc.make(); err != nil {
			t.Fatal(err)
		}
		for _, call := range []struct {
			name string
			fn   func() error
		}{
			{"Load", func() error { _, _, err := Load(dir, want); return err }},
			{"Saved", func() error { _, err := Saved(dir); return err }},
		} {
			done := make(chan error, 1)
			go func() { done <- call.fn() }()
			select {
			case err := <-done:
				if !errors.Is(err, dataset.ErrCorrupt) || !strings.Contains(err.Error(), path) {
					t.Errorf("%s of a %s placement file: %v; want a corruption error naming %s", call.name, tc.name, err, path)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s of a %s placement file still runs after 5 s", call.name, tc.name)
			}
		}
	}
}

// TestKilledSaveHelper is the Save that TestKilledSaveIsCleaned kills: it stops for good once
// its temporary file is created.
func TestKilledSaveHelper(t *testing.T) {
	dir := os.Getenv("TIERFS_KILLED_SAVE")
	if dir == "" {
		t.Skip("run by TestKilledSaveIsCleaned")
	}
	_, save := savedPlacement(t, dir)
	saveHook = func(string) { select {} }
	save()
}

// TestKilledSaveIsCleaned: a Save killed with SIGKILL leaves its temporary file; CleanStale
// leaves it alone while the Save lives, and the next Save (like CleanStale) removes it once it is
// dead.
func TestKilledSaveIsCleaned(t *testing.T) {
	dir := t.TempDir()
	_, save := savedPlacement(t, dir)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledSaveHelper$")
	cmd.Env = append(os.Environ(), "TIERFS_KILLED_SAVE="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	defer func() { cmd.Process.Kill(); <-ended }()
	temps := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*"))
		return m
	}
	for deadline := time.Now().Add(time.Minute); len(temps()) == 0; time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-ended:
			ended <- err
			t.Fatalf("the save ended (%v) before it created its temporary file", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the save created no temporary file within a minute")
		}
	}
	time.Sleep(50 * time.Millisecond) // past the create, into the hook
	if did, err := CleanStale(dir); err != nil || len(did) != 0 || len(temps()) != 1 {
		t.Fatalf("CleanStale during a live save: %v, %v; left %v", did, err, temps())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the save was not killed (it ended with %v)", err)
	}
	ended <- nil
	if len(temps()) != 1 {
		t.Fatalf("the killed save left %v, want its temporary file", temps())
	}
	if err := save(); err != nil {
		t.Fatal(err)
	}
	if left := temps(); len(left) != 0 {
		t.Fatalf("the next save left %v", left)
	}
}
