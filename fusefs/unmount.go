package fusefs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// unmountDir unmounts the FUSE mount at dir: with umount(2) as root, else with fusermount -u.
// A mount still busy after a few tries (files just closed may take a moment to let go) is
// detached lazily, and lazy says so. An error wrapping EINVAL means dir is not mounted.
func unmountDir(dir string) (lazy bool, err error) {
	delay := 5 * time.Millisecond
	for try := 0; ; try++ {
		err = unmountOnce(dir, false)
		if !errors.Is(err, syscall.EBUSY) || try == 3 {
			break
		}
		time.Sleep(delay)
		delay *= 3
	}
	if !errors.Is(err, syscall.EBUSY) {
		return false, err
	}
	return true, unmountOnce(dir, true)
}

func unmountOnce(dir string, lazy bool) error {
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = unix.MNT_DETACH
		}
		err := unix.Unmount(dir, flags)
		if !errors.Is(err, syscall.EPERM) {
			return err
		}
		// Root without CAP_SYS_ADMIN (a container): the helper may still be allowed to.
	}
	bin, err := fusermountBinary()
	if err != nil {
		return fmt.Errorf("not root, and neither fusermount3 nor fusermount is in PATH: %w", syscall.EPERM)
	}
	args := []string{"-u", dir}
	if lazy {
		args = []string{"-u", "-z", dir}
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(string(out))
	switch {
	case strings.Contains(msg, "busy"):
		return fmt.Errorf("%s: %w", msg, syscall.EBUSY)
	case strings.Contains(msg, "not found in"), strings.Contains(msg, "not mounted"), strings.Contains(msg, "Invalid argument"):
		return fmt.Errorf("%s: %w", msg, syscall.EINVAL)
	case msg == "":
		return fmt.Errorf("%s: %w", bin, err)
	}
	return errors.New(msg)
}

// fusermountBinary finds fusermount3, or else fusermount, as go-fuse does.
func fusermountBinary() (string, error) {
	var err error
	for _, name := range []string{"fusermount3", "fusermount"} {
		var path string
		if path, err = exec.LookPath(name); err == nil {
			return path, nil
		}
		if path, err = exec.LookPath(filepath.Join("/bin", name)); err == nil {
			return path, nil
		}
	}
	return "", err
}

// connectionName is the directory of dir's FUSE connection under /sys/fs/fuse/connections: the
// kernel's device number of the mount, or "" when dir cannot be stat'ed.
func connectionName(dir string) string {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return ""
	}
	return strconv.FormatUint(uint64(unix.Major(st.Dev))<<20|uint64(unix.Minor(st.Dev)), 10)
}

// abortConnection ends a FUSE connection through fusectl (mounted at /sys/fs/fuse/connections
// on most systems), so the server stops even while a detached mount still has open files.
func abortConnection(conn string) error {
	if conn == "" {
		return errors.New("fusefs: no connection to abort")
	}
	return os.WriteFile(filepath.Join("/sys/fs/fuse/connections", conn, "abort"), []byte("1"), 0)
}

// mountType is the file system type of the mount whose mountpoint is dir (the topmost when
// several are stacked), or "" when dir is no mountpoint.
func mountType(dir string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("fusefs: %w", err)
	}
	defer f.Close()
	fstype := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) {
			continue
		}
		if unescapeMountinfo(fields[4]) == dir {
			fstype = fields[sep+1]
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("fusefs: read /proc/self/mountinfo: %w", err)
	}
	return fstype, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for space, ...) of /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
