package fusefs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierfs/tierfs/dataset"
)

// buildCLI builds cmd/tierfs into a temporary directory, skipping the test when it does not build.
func buildCLI(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE here: %v", err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build cmd/tierfs: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "tierfs")
	if out, err := exec.Command(goBin, "build", "-o", bin, "github.com/tierfs/tierfs/cmd/tierfs").CombinedOutput(); err != nil {
		t.Skipf("cmd/tierfs does not build, skipping the CLI test: %v\n%s", err, out)
	}
	return bin
}

// waitUntil polls cond every 10 ms for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// exited reports whether process pid is gone or a zombie (its new parent may not reap it).
func exited(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) == 0 || fields[0] == "Z" || fields[0] == "X"
}

func TestCLI(t *testing.T) {
	bin := buildCLI(t)
	d := writeDataset(t, 1000, 8, dataset.Float32, 3, newRand(t))

	// Background: mount returns once the mount is ready; umount stops the server.
	mp := t.TempDir()
	out, err := exec.Command(bin, "mount", d.dir, mp, "--host-cache", "8KB").CombinedOutput()
	if err != nil && strings.Contains(string(out), "operation not permitted") {
		t.Skipf("mounting is not permitted here: %s", out)
	}
	if err != nil {
		t.Fatalf("tierfs mount: %v\n%s", err, out)
	}
	match := regexp.MustCompile(`server pid (\d+)`).FindSubmatch(out)
	if match == nil {
		t.Fatalf("tierfs mount printed %q, want the server pid", out)
	}
	pid, _ := strconv.Atoi(string(match[1]))
	t.Cleanup(func() { // should the test fail before umount
		if !exited(pid) {
			syscall.Kill(pid, syscall.SIGTERM)
		}
	})
	if !mounted(t, mp) {
		t.Fatalf("tierfs mount returned before %s was mounted", mp)
	}
	if got := read(t, filepath.Join(mp, "nodes/17/feature.bin")); !bytes.Equal(got, d.row(17)) {
		t.Fatal("nodes/17/feature.bin differs from the dataset")
	}
	if out, err := exec.Command(bin, "umount", mp).CombinedOutput(); err != nil {
		t.Fatalf("tierfs umount: %v\n%s", err, out)
	}
	if mounted(t, mp) {
		t.Fatalf("%s still mounted after tierfs umount", mp)
	}
	waitUntil(t, "the background server to exit", func() bool { return exited(pid) })
	if out, err := exec.Command(bin, "umount", mp).CombinedOutput(); err == nil || !strings.Contains(string(out), "is not a mountpoint") {
		t.Fatalf("tierfs umount of an unmounted directory: %v\n%s", err, out)
	}

	// A failure in the background server is reported by the command that started it.
	out, err = exec.Command(bin, "mount", d.dir, filepath.Join(mp, "missing")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "fusefs: mountpoint") {
		t.Fatalf("tierfs mount on a missing directory: %v\n%s", err, out)
	}

	// Foreground: SIGTERM unmounts and exits 0.
	mp = t.TempDir()
	fg := exec.Command(bin, "mount", "--foreground", d.dir, mp)
	if err := fg.Start(); err != nil {
		t.Fatal(err)
	}
	defer fg.Process.Kill()
	waitUntil(t, "the foreground mount", func() bool { return mounted(t, mp) })
	if got := string(read(t, filepath.Join(mp, "nodes/3/tier"))); got != "ssd\n" {
		t.Fatalf("nodes/3/tier with no host cache: %q", got)
	}
	fg.Process.Signal(syscall.SIGTERM)
	if err := fg.Wait(); err != nil {
		t.Fatalf("foreground server after SIGTERM: %v", err)
	}
	if mounted(t, mp) {
		t.Fatalf("%s still mounted after SIGTERM", mp)
	}
}
