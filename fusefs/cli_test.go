package fusefs

import (
	"bytes"
	"errors"
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
	if err == nil || !strings.Contains(string(out), "tierfs mount: mountpoint "+filepath.Join(mp, "missing")) {
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

// TestCLIKilledServerAndVerifiedReads: a mount whose server was killed (SIGKILL) makes the next
// `tierfs mount` there fail naming `tierfs umount`, which clears it; and `tierfs mount`
// (reads verified by default) answers a read of a damaged row with EIO where a mount with
// --unverified-reads returns the damaged bytes.
func TestCLIKilledServerAndVerifiedReads(t *testing.T) {
	bin := buildCLI(t)
	d := writeDataset(t, 1000, 8, dataset.Float32, 3, newRand(t))
	mount := func(mp string, flags ...string) int {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"mount", d.dir, mp}, flags...)...).CombinedOutput()
		if err != nil && strings.Contains(string(out), "operation not permitted") {
			t.Skipf("mounting is not permitted here: %s", out)
		}
		if err != nil {
			t.Fatalf("tierfs mount %v: %v\n%s", flags, err, out)
		}
		match := regexp.MustCompile(`server pid (\d+)`).FindSubmatch(out)
		if match == nil {
			t.Fatalf("tierfs mount printed %q, want the server pid", out)
		}
		pid, _ := strconv.Atoi(string(match[1]))
		t.Cleanup(func() {
			if !exited(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			exec.Command(bin, "umount", mp).Run()
		})
		return pid
	}
	umount := func(mp string) {
		t.Helper()
		if out, err := exec.Command(bin, "umount", mp).CombinedOutput(); err != nil {
			t.Fatalf("tierfs umount %s: %v\n%s", mp, err, out)
		}
	}

	mp := t.TempDir()
	pid := mount(mp)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the killed server to exit", func() bool { return exited(pid) })
	out, err := exec.Command(bin, "mount", d.dir, mp).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "tierfs umount "+mp) {
		t.Fatalf("tierfs mount over a killed server's mount: %v\n%s; want a hint naming `tierfs umount %s`", err, out, mp)
	}
	umount(mp)
	mount(mp)
	if got := read(t, filepath.Join(mp, "nodes/17/feature.bin")); !bytes.Equal(got, d.row(17)) {
		t.Fatal("nodes/17/feature.bin after remounting differs from the dataset")
	}
	umount(mp)

	// Damage row 17 on disk.
	m, err := dataset.Load(d.dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := m.Feature("x")
	file, off := spec.Locate(17)
	f, err := os.OpenFile(m.Path(spec.Files[file]), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	f.ReadAt(b, off+3)
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, off+3); err != nil {
		t.Fatal(err)
	}
	f.Close()
	plain, verified := t.TempDir(), t.TempDir()
	mount(plain, "--unverified-reads")
	mount(verified)
	if got := read(t, filepath.Join(plain, "nodes/17/feature.bin")); bytes.Equal(got, d.row(17)) {
		t.Fatal("the unverified mount returned row 17 undamaged: the damage did not reach the disk")
	}
	if _, err := os.ReadFile(filepath.Join(verified, "nodes/17/feature.bin")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a damaged row through a default (verified) mount: %v, want EIO", err)
	}
	intact := int64(0) // a row in another block
	for f, o := spec.Locate(intact); f == file && o/int64(m.BlockSize) == off/int64(m.BlockSize); f, o = spec.Locate(intact) {
		intact++
	}
	if got := read(t, filepath.Join(verified, "nodes", strconv.FormatInt(intact, 10), "feature.bin")); !bytes.Equal(got, d.row(intact)) {
		t.Fatalf("row %d, intact, through the verified mount differs", intact)
	}
	umount(plain)
	umount(verified)
}

// TestCLIMountWithoutFusermount: a user who is not root, without fusermount, is told what is
// missing rather than a bare "operation not permitted" (run as nobody when the test is root).
func TestCLIMountWithoutFusermount(t *testing.T) {
	if helper, err := fusermountBinary(); err == nil {
		t.Skipf("%s is installed: mounting as a user goes through it", helper)
	}
	bin := buildCLI(t)
	d := writeDataset(t, 100, 4, dataset.Float32, 2, newRand(t))
	mp := t.TempDir()
	cmd := exec.Command(bin, "mount", "--foreground", d.dir, mp)
	cmd.Env = append(os.Environ(), "PATH=/nonexistent")
	if os.Geteuid() == 0 {
		// nobody must reach the binary and the dataset: open their directories up.
		for _, p := range []string{bin, d.dir, mp} {
			for dir := filepath.Dir(p); dir != "/" && strings.HasPrefix(dir, os.TempDir()) && dir != os.TempDir(); dir = filepath.Dir(dir) {
				os.Chmod(dir, 0o755)
			}
		}
		os.Chmod(d.dir, 0o755)
		os.Chmod(mp, 0o777)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	if err == nil {
		exec.Command(bin, "umount", mp).Run()
		t.Fatalf("a user without fusermount mounted %s:\n%s", mp, out)
	}
	if !strings.Contains(string(out), "neither fusermount3 nor fusermount is in PATH") {
		t.Fatalf("mount as a user without fusermount: %v\n%s; want the missing helper named", err, out)
	}
}
