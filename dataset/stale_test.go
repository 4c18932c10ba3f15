package dataset

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKilledWriterHelper is the writer that TestKilledWriters kills: with TIERFS_KILLED_WRITER
// set to a stage (staged, moved, replaced) it begins a write to TIERFS_DEST, gets as far as the
// stage, prints "ready" and waits to be killed.
func TestKilledWriterHelper(t *testing.T) {
	stage := os.Getenv("TIERFS_KILLED_WRITER")
	if stage == "" {
		t.Skip("run by TestKilledWriters")
	}
	dest := os.Getenv("TIERFS_DEST")
	w, err := Begin(nil, dest, true)
	if err != nil {
		t.Fatal(err)
	}
	switch stage {
	case "staged": // writing: a file in the staging directory, a claimed stripe elsewhere
		stripe := filepath.Join(os.Getenv("TIERFS_STRIPES"), "ds.x.0."+w.Nonce+".bin")
		if err := w.Claim([]string{stripe}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(stripe, []byte("rows"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w.Dir, "indptr.bin"), make([]byte, 808), 0o644); err != nil {
			t.Fatal(err)
		}
	case "moved", "replaced": // killed between Publish's two renames, or after them
		writeTestDataset(t, w.Dir, 50, 2, Float32, 1, rand.New(rand.NewPCG(1, 2)))
		if err := os.Rename(dest, w.oldDir()); err != nil {
			t.Fatal(err)
		}
		if stage == "replaced" {
			if err := os.Rename(w.Dir, dest); err != nil {
				t.Fatal(err)
			}
		}
	default:
		t.Fatalf("stage %q", stage)
	}
	os.Stdout.WriteString("ready\n")
	time.Sleep(time.Hour)
}

// startWriter runs TestKilledWriterHelper in a child process up to stage.
func startWriter(t *testing.T, stage, dest, stripes string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "TIERFS_KILLED_WRITER="+stage, "TIERFS_DEST="+dest, "TIERFS_STRIPES="+stripes)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	var seen []string
	for sc.Scan() {
		if sc.Text() == "ready" {
			return cmd
		}
		seen = append(seen, sc.Text())
	}
	t.Fatalf("writer (%s) ended before it was ready: %s", stage, strings.Join(seen, "\n"))
	return nil
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

// beside lists the hidden entries beside dest that writes leave.
func beside(t *testing.T, dest string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(filepath.Dir(dest), "."+filepath.Base(dest)+".tierfs-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestKilledWriters: writers killed with SIGKILL at each stage of a write leave what the next
// Begin (or CleanStale) undoes — while a live writer's staging directory is never touched.
func TestKilledWriters(t *testing.T) {
	t.Run("staged", func(t *testing.T) {
		dest, stripes := filepath.Join(t.TempDir(), "ds"), t.TempDir()
		writeTestDataset(t, mkdir(t, dest), 100, 4, Float32, 1, rand.New(rand.NewPCG(5, 6)))
		cmd := startWriter(t, "staged", dest, stripes)
		left := beside(t, dest)
		if len(left) != 2 { // lock file, staging directory
			t.Fatalf("a writer at work keeps %v beside %s, want its lock and staging directory", left, dest)
		}
		// Alive: another write to dest, and CleanStale, leave its work alone.
		if did, err := CleanStale(dest); err != nil || len(did) != 0 {
			t.Fatalf("CleanStale with the writer alive: did %v, %v", did, err)
		}
		w, err := Begin(nil, dest, true)
		if err != nil {
			t.Fatal(err)
		}
		w.Abort(nil)
		if got := beside(t, dest); strings.Join(got, " ") != strings.Join(left, " ") {
			t.Fatalf("a second write touched a live writer's files: %v, was %v", got, left)
		}
		stripe, _ := filepath.Glob(filepath.Join(stripes, "*"))
		if len(stripe) != 1 {
			t.Fatalf("stripes: %v", stripe)
		}
		kill(t, cmd)
		if got := beside(t, dest); len(got) != 2 {
			t.Fatalf("the killed writer left %v", got)
		}
		// Dead: the next Begin removes its staging directory and its stripe.
		w, err = Begin(nil, dest, true)
		if err != nil {
			t.Fatal(err)
		}
		w.Abort(nil)
		if got := beside(t, dest); len(got) != 0 {
			t.Fatalf("after the next write: %v left beside %s", got, dest)
		}
		if _, err := os.Stat(stripe[0]); !os.IsNotExist(err) {
			t.Fatalf("the killed write's stripe %s is still there: %v", stripe[0], err)
		}
		if m, err := Load(dest); err != nil || m.Nodes().Count != 100 {
			t.Fatalf("the old dataset: %v", err)
		}
	})
	for _, c := range []struct {
		stage string
		count int64 // nodes of the dataset at dest after cleaning
		did   string
	}{{"moved", 100, "put back"}, {"replaced", 50, "the dataset a killed write had replaced"}} {
		t.Run(c.stage, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "ds")
			writeTestDataset(t, mkdir(t, dest), 100, 4, Float32, 1, rand.New(rand.NewPCG(5, 6)))
			kill(t, startWriter(t, c.stage, dest, t.TempDir()))
			did, err := CleanStale(dest)
			if err != nil || !strings.Contains(strings.Join(did, "\n"), c.did) {
				t.Fatalf("CleanStale: did %q, %v; want %q", did, err, c.did)
			}
			if got := beside(t, dest); len(got) != 0 {
				t.Fatalf("left beside %s: %v", dest, got)
			}
			m, err := Load(dest)
			if err != nil || m.Nodes().Count != c.count {
				t.Fatalf("dataset at %s after cleaning: %v (want %d nodes)", dest, err, c.count)
			}
			if problems, err := m.Verify(0, nil); err != nil || len(problems) != 0 {
				t.Fatalf("verify after cleaning: %v %v", problems, err)
			}
		})
	}
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLoadDuringFirstWrite: opening a dataset whose first write is still running says so (the
// writer's pid and lock file), not only "no such file or directory"; once the write is given up
// the error is the plain one.
func TestLoadDuringFirstWrite(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "ds")
	w, err := Begin(nil, dest, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Load(dest)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "is being written") ||
		!strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(err.Error(), lockInfix) {
		t.Errorf("Load during the write: %v; want ErrNotExist naming the write in progress, its pid and lock file", err)
	}
	w.Abort(nil)
	if _, err = Load(dest); !errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "being written") {
		t.Errorf("Load after the write gave up: %v; want the plain ErrNotExist", err)
	}
}
