// Package sysinfo answers what the machine has: the memory available and the free bytes of a
// file system, for the checks that refuse a size option before anything is allocated or written.
package sysinfo

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MemAvailable is MemAvailable of /proc/meminfo in bytes.
func MemAvailable() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			if fields := strings.Fields(rest); len(fields) > 0 {
				kb, err := strconv.ParseInt(fields[0], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("/proc/meminfo: MemAvailable %q: %w", rest, err)
				}
				return kb << 10, nil
			}
		}
	}
	return 0, errors.New("/proc/meminfo has no MemAvailable line")
}

// FreeBytes is what an unprivileged writer may still write to the file system holding path (or,
// when path does not exist yet, its nearest existing parent).
func FreeBytes(path string) (int64, error) {
	for {
		var st unix.Statfs_t
		err := unix.Statfs(path, &st)
		if err == nil {
			return int64(st.Bavail) * st.Bsize, nil
		}
		parent := filepath.Dir(path)
		if !errors.Is(err, unix.ENOENT) || parent == path {
			return 0, fmt.Errorf("statfs %s: %w", path, err)
		}
		path = parent
	}
}
