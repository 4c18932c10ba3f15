package dataset

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/internal/wfs"
)

// upgradeSuffix names the bound sidecar Upgrade writes beside an old one (<sidecar>.upgrade),
// which the manifest names until the bound sums have taken the old sidecar's name.
const upgradeSuffix = ".upgrade"

// Upgrade rewrites the dataset in dir, of a format version before Version, to Version (the
// version Commit writes) in place, and returns the version it had (Version when it was current:
// then it only finishes an upgrade that was killed, and removes what one left).
//
// Every block of every file is checked against its old checksum, and the labels against their
// num_classes, first (progress gets the bytes checked and their total): a damaged dataset is
// refused as ErrCorrupt naming the file and block (or node), and nothing is written. The new
// checksums are the verified old ones bound to their place and layout (bind.go), under a new
// DatasetID where the dataset had none (before version 7; from 7 it keeps its own); the data
// files are not touched. An old version binds no layout, so the dtype, dims and counts its
// manifest gives are bound as they are: an edit made to them before the upgrade is not found by
// it. The dataset changes by renames of fsynced files, the manifest last of each step, so a
// process killed at any point leaves the old dataset or the new one, each whole and readable; the
// next Upgrade finishes or redoes the work and removes what was left. Readers may hold the
// dataset open meanwhile (a store keeps the checksums it loaded); a second Upgrade of dir is
// refused with ErrUpgradeRunning; no writer of dir may be at work.
func Upgrade(dir string, progress func(done, total int64)) (from int, err error) {
	return upgrade(wfs.OS, dir, progress, nil)
}

// upgrade is Upgrade writing through fsys and calling step, when set, after each change on disk
// with its name (tests kill the process there, or fail a call of fsys).
func upgrade(fsys wfs.FS, dir string, progress func(done, total int64), step func(string)) (int, error) {
	if step == nil {
		step = func(string) {}
	}
	unlock, err := lockUpgrade(dir)
	if err != nil {
		return 0, err
	}
	defer unlock()
	m, err := Load(dir)
	if err != nil {
		return 0, err
	}
	m.fs = fsys
	from := m.Version
	if from >= Version {
		return from, m.finishUpgrade(step)
	}
	problems, err := m.Verify(1, progress)
	if err != nil {
		return from, err
	}
	if len(problems) > 0 {
		shown := problems[:min(len(problems), 5)]
		what := make([]string, len(shown))
		for i, p := range shown {
			what[i] = p.String()
		}
		more := ""
		if len(problems) > len(shown) {
			more = fmt.Sprintf(" (and %d more files)", len(problems)-len(shown))
		}
		return from, fmt.Errorf("dataset: %s (format version %d) is damaged, so it was not upgraded: %s%s; restore it or ingest it again: %w",
			dir, from, strings.Join(what, "; "), more, ErrCorrupt)
	}
	// The new manifest: the old one's content (under a new id when it had none), each sidecar
	// unbound from the old keys, bound with the new ones and written beside the old one, which
	// stays as it was until the new manifest is in place.
	nm := *m
	nm.Files = append([]File(nil), m.Files...)
	if nm.DatasetID == "" {
		if nm.DatasetID, err = newDatasetID(); err != nil {
			return from, err
		}
	}
	nm.Version = nm.minVersion()
	oldKeys, keys := m.bindKeys(), nm.bindKeys()
	dirs := map[string]bool{dir: true}
	for i := range nm.Files {
		f := &nm.Files[i]
		side, err := m.readSidecar(&m.Files[i])
		if err != nil {
			return from, err
		}
		for k := 0; k+8 <= len(side); k += 8 {
			mix := blockMix(oldKeys[f.Path], int64(k/8)) ^ blockMix(keys[f.Path], int64(k/8))
			binary.LittleEndian.PutUint64(side[k:], binary.LittleEndian.Uint64(side[k:])^mix)
		}
		f.Checksums += upgradeSuffix
		if err := writeSynced(fsys, nm.Path(f.Checksums), side); err != nil {
			return from, err
		}
		f.ChecksumsHash = hashHex(side)
		dirs[filepath.Dir(nm.Path(f.Checksums))] = true
		step("bound " + f.Path)
	}
	if err := nm.Validate(); err != nil {
		return from, fmt.Errorf("dataset: the upgraded manifest of %s: %w", dir, err)
	}
	for d := range dirs {
		if err := syncDir(fsys, d); err != nil {
			return from, err
		}
	}
	if err := nm.writeManifest(); err != nil {
		return from, err
	}
	step("manifest bound")
	return from, nm.finishUpgrade(step)
}

// ErrUpgradeRunning is wrapped by Upgrade's error when another upgrade of the dataset is at work.
var ErrUpgradeRunning = errors.New("another upgrade of the dataset is at work")

// lockUpgrade takes the upgrade lock of dir, an flock on the directory itself (no file is added
// to the dataset; the kernel drops it when the process dies), and returns its release.
func lockUpgrade(dir string) (func(), error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if _, lerr := Load(dir); lerr != nil { // its error says what dir is instead
			return nil, lerr
		}
		return nil, fmt.Errorf("dataset: %w", &os.PathError{Op: "open", Path: dir, Err: err})
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("dataset: %s: %w; wait for it to end", dir, ErrUpgradeRunning)
		}
		return nil, fmt.Errorf("dataset: lock %s: %w", dir, err)
	}
	return func() { unix.Close(fd) }, nil
}

// finishUpgrade moves the sidecars m names <sidecar>.upgrade to their own names (each written
// under a temporary name, fsynced and renamed over the old one, which m no longer names), then
// writes m naming them, and removes what an upgrade leaves beside them.
func (m *Manifest) finishUpgrade(step func(string)) error {
	var moved []*File
	dirs := map[string]bool{}
	for i := range m.Files {
		f := &m.Files[i]
		final, ok := strings.CutSuffix(f.Checksums, upgradeSuffix)
		if !ok {
			continue
		}
		side, err := m.readSidecar(f)
		if err != nil {
			return err
		}
		tmp := m.Path(final + upgradeSuffix + ".tmp")
		if err := writeSynced(m.fsys(), tmp, side); err != nil {
			return err
		}
		if err := m.fsys().Rename(tmp, m.Path(final)); err != nil {
			return fmt.Errorf("dataset: %w", err)
		}
		dirs[filepath.Dir(m.Path(final))] = true
		moved = append(moved, f)
		step("moved " + f.Path)
	}
	if len(moved) > 0 {
		for d := range dirs {
			if err := syncDir(m.fsys(), d); err != nil {
				return err
			}
		}
		for _, f := range moved {
			f.Checksums = strings.TrimSuffix(f.Checksums, upgradeSuffix)
		}
		if err := m.writeManifest(); err != nil {
			return err
		}
		step("manifest final")
	}
	for i := range m.Files {
		for _, left := range []string{upgradeSuffix, upgradeSuffix + ".tmp"} {
			if err := m.fsys().Remove(m.Path(m.Files[i].Checksums + left)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("dataset: remove what an upgrade left: %w", err)
			}
		}
	}
	return nil
}

// readSidecar is file f's sidecar as written, checked against the manifest's hash of it.
func (m *Manifest) readSidecar(f *File) ([]byte, error) {
	sums, err := m.LoadChecksums(f)
	if err != nil {
		return nil, err
	}
	side := make([]byte, 8*len(sums.Sums))
	for i, s := range sums.Sums {
		binary.LittleEndian.PutUint64(side[8*i:], s)
	}
	return side, nil
}
