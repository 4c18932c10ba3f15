package embedding

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/internal/bytesize"
	"github.com/tierfs/tierfs/internal/strictjson"
	"github.com/tierfs/tierfs/internal/sysinfo"
	"github.com/tierfs/tierfs/internal/wfs"
)

// A table directory holds manifest.json (the last checkpoint: its generation and step),
// gen-<G>.rows (generation G's pages, never written once published), and while the table is
// open work.rows (the working copy, sealed as generation G+1) and lock (flocked by the opener).

const (
	manifestName    = "manifest.json"
	manifestVersion = 1
	workName        = "work.rows"
	lockName        = "lock"
)

// manifest is manifest.json.
type manifest struct {
	Version    int    `json:"version"`
	TableID    string `json:"table_id"`
	Generation uint64 `json:"generation"`
	Step       int64  `json:"step"`
	Spec       Spec   `json:"spec"`
}

func genName(gen uint64) string { return "gen-" + strconv.FormatUint(gen, 10) + ".rows" }

func (m *manifest) id() ([16]byte, error) {
	var id [16]byte
	b, err := hex.DecodeString(m.TableID)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("embedding: manifest table_id %q: want 32 hex digits", m.TableID)
	}
	copy(id[:], b)
	return id, nil
}

// publish writes m as dir's manifest: a temporary file, fsync, rename, directory fsync.
func publish(fsys wfs.FS, dir string, m *manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, manifestName+".tmp")
	if err := wfs.WriteSynced(fsys, tmp, append(data, '\n')); err != nil {
		return fmt.Errorf("embedding: writing %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, filepath.Join(dir, manifestName)); err != nil {
		return fmt.Errorf("embedding: publishing %s: %w", dir, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("embedding: publishing %s: %w", dir, err)
	}
	return nil
}

func readManifest(dir string) (*manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(dir); serr == nil {
			return nil, fmt.Errorf("embedding: %s has no %s: not a table, or a Create that did not finish (remove it)", dir, manifestName)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("embedding: opening table: %w", err)
	}
	m := &manifest{}
	if err := strictjson.Decode(data, m); err != nil {
		return nil, fmt.Errorf("embedding: %s: %w", filepath.Join(dir, manifestName), err)
	}
	if m.Version != manifestVersion {
		return nil, fmt.Errorf("embedding: %s: version %d, this library reads %d", filepath.Join(dir, manifestName), m.Version, manifestVersion)
	}
	if m.Generation == 0 {
		return nil, fmt.Errorf("embedding: %s: generation 0", filepath.Join(dir, manifestName))
	}
	spec, err := m.Spec.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("embedding: %s: %w", filepath.Join(dir, manifestName), err)
	}
	m.Spec = spec
	return m, nil
}

// removeStale removes what an interrupted checkpoint or a closed opener left in dir: every
// generation's file but keep's, the working copy, a manifest never published.
func removeStale(fsys wfs.FS, dir string, keep uint64) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("embedding: %w", err)
	}
	for _, e := range ents {
		n := e.Name()
		stale := n == workName || n == manifestName+".tmp" ||
			(strings.HasPrefix(n, "gen-") && strings.HasSuffix(n, ".rows") && n != genName(keep))
		if stale {
			if err := fsys.Remove(filepath.Join(dir, n)); err != nil {
				return fmt.Errorf("embedding: removing a stale file: %w", err)
			}
		}
	}
	return nil
}

// lockDir flocks dir's lock file (exclusive, not waiting): one opener per table.
func lockDir(fsys wfs.FS, dir string) (wfs.File, error) {
	f, err := fsys.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("embedding: locking %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, invalid("embedding: %s is open elsewhere (its lock is held)", dir)
		}
		return nil, fmt.Errorf("embedding: locking %s: %w", dir, err)
	}
	return f, nil
}

// openRows opens path for reading and writing pages: O_DIRECT where the file system has it (the
// page cache where it has not: tmpfs). create makes a new file (refusing an existing one).
func openRows(fsys wfs.FS, path string, create bool) (f wfs.File, direct bool, err error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE | os.O_EXCL
	}
	f, err = fsys.OpenFile(path, flag|unix.O_DIRECT, 0o644)
	if errors.Is(err, unix.EINVAL) {
		fsys.Remove(path) // O_CREAT may have made it before O_DIRECT was refused
		f, err = fsys.OpenFile(path, flag, 0o644)
		return f, false, err
	}
	return f, err == nil, err
}

func newTableID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// checkSpace refuses writing need bytes into dir when its file system has less free (where the
// free space cannot be read, the check passes).
func checkSpace(dir string, need int64, what string) error {
	free, err := sysinfo.FreeBytes(dir)
	if err != nil || need <= free {
		return nil
	}
	return fmt.Errorf("embedding: %s needs %s in %s, which has %s free", what, bytesize.Format(need), dir, bytesize.Format(free))
}
