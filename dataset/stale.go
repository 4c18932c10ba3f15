package dataset

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/internal/wfs"
)

// A write to NAME keeps, beside NAME, until Publish succeeds or Abort returns:
//
//	.NAME.tierfs-lock-NONCE  the lock file, flocked by the writer; "pid N" then "stripe PATH" lines
//	.NAME.tierfs-new-NONCE   the staging directory (Writing.Dir)
//	.NAME.tierfs-old-NONCE   the replaced dataset, between Publish's two renames and its removal
//
// The lock file exists, under its name, only while it is flocked by its writer or by a cleaner:
// the writer creates and flocks it under a temporary name and renames it into place before it
// makes the staging directory, and unlinks it last. A lock file that can be flocked therefore
// belongs to a writer that died (SIGKILL, power loss), and CleanStale undoes what it left. A
// writer killed between creating the temporary file and its rename, or one whose removal of it
// failed, leaves that small file: CleanStale removes it too once it can flock it (nothing else
// of the write exists yet).

const (
	lockInfix  = ".tierfs-lock-"
	newInfix   = ".tierfs-new-"
	oldInfix   = ".tierfs-old-"
	nonceChars = 12 // hex digits of a Writing's Nonce
)

func (w *Writing) sibling(infix string) string {
	return filepath.Join(filepath.Dir(w.Dest), "."+filepath.Base(w.Dest)+infix+w.Nonce)
}

func (w *Writing) stagingDir() string { return w.sibling(newInfix) }
func (w *Writing) oldDir() string     { return w.sibling(oldInfix) }
func (w *Writing) lockPath() string   { return w.sibling(lockInfix) }

// takeLock creates the write's lock file, flocked, under its name.
func (w *Writing) takeLock() error {
	tmp := w.lockPath() + ".tmp"
	f, err := w.FS.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("dataset: create the write's lock file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		w.FS.Remove(tmp)
		return fmt.Errorf("dataset: lock %s: %w", tmp, err)
	}
	if _, err := fmt.Fprintf(f, "pid %d\n", os.Getpid()); err != nil {
		f.Close()
		w.FS.Remove(tmp)
		return fmt.Errorf("dataset: write %s: %w", tmp, err)
	}
	if err := w.FS.Rename(tmp, w.lockPath()); err != nil {
		f.Close()
		w.FS.Remove(tmp)
		return fmt.Errorf("dataset: %w", err)
	}
	w.lock = f
	return nil
}

// release drops the lock and unlinks the lock file, unless the write left a staging or an old
// directory beside the destination (a removal failed): then the lock file stays, unlocked, for
// CleanStale to undo what is left as it does a killed write's. Idempotent.
func (w *Writing) release() {
	if w.lock != nil {
		if !exists(w.Dir) && !exists(w.oldDir()) {
			_ = w.FS.Remove(w.lockPath())
		}
		_ = w.lock.Close()
		w.lock = nil
	}
}

// ownsStripe reports whether p names a stripe of this write: an absolute path with the Nonce
// in its name.
func (w *Writing) ownsStripe(p string) bool {
	return filepath.IsAbs(p) && strings.Contains(filepath.Base(p), w.Nonce)
}

// Claim records stripes on other devices (absolute paths with the Nonce in their name) in the
// lock file before they are created, so that CleanStale removes them if the writer is killed.
func (w *Writing) Claim(paths []string) error {
	if w.lock == nil {
		return fmt.Errorf("dataset: write to %s is finished; nothing to claim", w.Dest)
	}
	var b strings.Builder
	for _, p := range paths {
		if w.ownsStripe(p) {
			fmt.Fprintf(&b, "stripe %s\n", p)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	if _, err := io.WriteString(w.lock, b.String()); err != nil {
		return fmt.Errorf("dataset: write %s: %w", w.lockPath(), err)
	}
	if err := w.lock.Sync(); err != nil {
		return fmt.Errorf("dataset: fsync %s: %w", w.lockPath(), err)
	}
	return nil
}

// claimed is the stripes recorded in the lock file.
func (w *Writing) claimed() []string {
	if w.lock == nil {
		return nil
	}
	return readClaims(w.lockPath())
}

func readClaims(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "stripe "); ok {
			out = append(out, p)
		}
	}
	return out
}

// CleanStale undoes what writes to dest that were killed left beside it, and says what it did
// (one line each): a write killed before Publish leaves its staging directory and stripes, which
// are removed; one killed between Publish's two renames leaves no dest and the old dataset
// aside, which is put back; one killed after them leaves the old dataset aside, which is
// removed. A write whose writer is alive (its lock file is flocked) is left alone, as are
// staging directories without a lock file (left by versions before the lock). Begin calls it;
// so does `tierfs verify`.
func CleanStale(dest string) ([]string, error) { return cleanStale(wfs.OS, dest) }

// cleanStale is CleanStale removing and renaming through fsys (Begin's: its writer's).
func cleanStale(fsys wfs.FS, dest string) ([]string, error) {
	dest = filepath.Clean(dest)
	nonces, tmps, err := lockNonces(dest)
	if err != nil {
		return nil, fmt.Errorf("dataset: look for writes to %s that were killed: %w", dest, err)
	}
	var did []string
	var errs []error
	for _, nonce := range tmps {
		w := &Writing{Dest: dest, Nonce: nonce, FS: fsys}
		d, err := w.removeDeadTmpLock()
		did = append(did, d...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, nonce := range nonces {
		w := &Writing{Dest: dest, Nonce: nonce, FS: fsys}
		w.Dir = w.stagingDir()
		d, err := w.cleanIfDead()
		did = append(did, d...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return did, errors.Join(errs...)
}

// lockNonces lists the nonces of the lock files beside dest (writes to it, running or killed),
// and of the temporary lock files (tmps); none when dest's directory does not exist.
func lockNonces(dest string) (nonces, tmps []string, err error) {
	entries, err := os.ReadDir(filepath.Dir(dest))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		nonce, ok := strings.CutPrefix(e.Name(), "."+filepath.Base(dest)+lockInfix)
		if !ok {
			continue
		}
		if isNonce(nonce) {
			nonces = append(nonces, nonce)
		} else if n, ok := strings.CutSuffix(nonce, ".tmp"); ok && isNonce(n) {
			tmps = append(tmps, n)
		}
	}
	return nonces, tmps, nil
}

// removeDeadTmpLock removes w's temporary lock file if it can be flocked: its writer died, or
// failed, before renaming it into place, and made nothing else. (A writer caught between
// creating the file and flocking it then fails its Begin with an error: its flock or its rename
// of the removed file fails; nothing of a dataset is touched.)
func (w *Writing) removeDeadTmpLock() ([]string, error) {
	tmp := w.lockPath() + ".tmp"
	f, err := lockIfDead(tmp)
	if f == nil {
		return nil, err
	}
	defer f.Close()
	if err := w.FS.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("dataset: remove %s, the temporary lock file of a write that failed or was killed: %w", tmp, err)
	}
	return []string{"removed " + tmp + ", the temporary lock file of a write that failed or was killed"}, nil
}

func isNonce(s string) bool {
	if len(s) != nonceChars {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// lockIfDead opens the lock file path and flocks it without waiting: nil (and no error) when
// the file is gone (finished, or cleaned by someone else), its writer is alive (holds the flock)
// or another cleaner unlinked it before the flock was ours.
func lockIfDead(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dataset: open %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("dataset: lock %s: %w", path, err)
	}
	var held, named unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(path, &named) != nil || held.Ino != named.Ino || held.Dev != named.Dev {
		f.Close()
		return nil, nil
	}
	return f, nil
}

// cleanIfDead undoes w's leftovers if its lock file can be flocked (its writer is dead).
func (w *Writing) cleanIfDead() ([]string, error) {
	lockPath := w.lockPath()
	f, err := lockIfDead(lockPath)
	if f == nil {
		return nil, err
	}
	defer f.Close()
	var did []string
	var errs []error
	staged, old, hasDest := exists(w.Dir), exists(w.oldDir()), exists(w.Dest)
	if old && !hasDest {
		if err := w.FS.Rename(w.oldDir(), w.Dest); err != nil {
			errs = append(errs, fmt.Errorf("dataset: put back %s, which a killed write had moved aside, at %s: %w", w.oldDir(), w.Dest, err))
		} else {
			did = append(did, fmt.Sprintf("put back %s, which a killed write had moved aside, at %s", w.oldDir(), w.Dest))
		}
	}
	// The dataset in place once nothing is staged (nil where it cannot be read).
	var dest *Manifest
	if !staged {
		if m, err := Load(w.Dest); err == nil {
			dest = m
		}
	}
	if old && hasDest && !staged && dest != nil {
		// The new dataset is in place: the old one goes, as Publish would have removed it.
		if err := removeReplaced(w.FS, w.oldDir(), dest); err != nil {
			errs = append(errs, err)
		} else {
			did = append(did, "removed "+w.oldDir()+", the dataset a killed write had replaced")
		}
	}
	// Stripes outside the staging directory: those of a write that never published go; after
	// Publish's rename only those the dataset in place does not use (all are kept when it
	// cannot be read; none when there is no dataset in place, nor an old one aside).
	var keep map[string]bool
	if dest != nil || !exists(w.Dest) && !exists(w.oldDir()) {
		keep = map[string]bool{}
	}
	if dest != nil {
		for _, f := range dest.Files {
			keep[f.Path] = true
		}
	}
	for _, p := range readClaims(lockPath) {
		if !w.ownsStripe(p) || (!staged && (keep == nil || keep[p])) {
			continue
		}
		if err := w.FS.Remove(p); err == nil {
			did = append(did, "removed "+p+", a stripe of a killed write")
		} else if !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("dataset: remove %s, a stripe of a killed write: %w", p, err))
		}
		if err := w.FS.Remove(p + ChecksumSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("dataset: remove %s, a stripe's checksums of a killed write: %w", p+ChecksumSuffix, err))
		}
	}
	if staged {
		if err := w.FS.RemoveAll(w.Dir); err != nil {
			errs = append(errs, fmt.Errorf("dataset: remove %s, the staging directory of a killed write: %w", w.Dir, err))
		} else {
			did = append(did, "removed "+w.Dir+", the staging directory of a killed write")
		}
	}
	if err := errors.Join(errs...); err != nil {
		return did, err // keep the lock file: the next cleaner tries again
	}
	if err := w.FS.Remove(lockPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return did, fmt.Errorf("dataset: remove %s: %w", lockPath, err)
	}
	return did, nil
}

// writeInProgress names a live write to dest (its lock file is flocked by its writer): the lock
// file's path and the writer's pid as the file says, ok false when none is running.
func writeInProgress(dest string) (lockPath, pid string, ok bool) {
	dest = filepath.Clean(dest)
	nonces, _, _ := lockNonces(dest)
	for _, nonce := range nonces {
		path := (&Writing{Dest: dest, Nonce: nonce}).lockPath()
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		busy := errors.Is(unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB), unix.EWOULDBLOCK)
		if busy {
			line, _ := bufio.NewReader(f).ReadString('\n')
			pid = strings.TrimSpace(strings.TrimPrefix(line, "pid "))
		}
		f.Close()
		if busy {
			return path, pid, true
		}
	}
	return "", "", false
}
