package embedding

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
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
// pages.rows (two places a page, see pageOffset), map-<G> (generation G's page map: which place
// holds each page, and the generation it was written in), and while the table is open lock
// (flocked by the opener). Version 1 kept gen-<G>.rows, one whole copy a checkpoint.

const (
	manifestName    = "manifest.json"
	manifestVersion = 2
	pagesName       = "pages.rows"
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

func mapName(gen uint64) string { return "map-" + strconv.FormatUint(gen, 10) }

// A page map has one entry a page, little-endian uint32: the generation the page was last written
// in, shifted left by one, and the place (0 or 1) that holds it; then a trailer of a crc32c of
// the table id, the map's generation and every entry, and 4 zero bytes.

// maxGeneration is the last generation a map entry holds.
const maxGeneration = 1<<31 - 1

func entry(gen uint64, place int) uint32 { return uint32(gen)<<1 | uint32(place) }
func entryGen(e uint32) uint64           { return uint64(e >> 1) }
func entryPlace(e uint32) int            { return int(e & 1) }

// mapSeal is the checksum of entries as generation gen's map of table id.
func mapSeal(id [16]byte, gen uint64, entries []byte) uint32 {
	var hdr [24]byte
	copy(hdr[:16], id[:])
	binary.LittleEndian.PutUint64(hdr[16:], gen)
	return crc32.Update(crc32.Update(0, castagnoli, hdr[:]), castagnoli, entries)
}

// writeMap writes loc as generation gen's map in dir and fsyncs it.
func writeMap(fsys wfs.FS, dir string, id [16]byte, gen uint64, loc []uint32) error {
	b := make([]byte, 4*len(loc)+trailerBytes)
	for i, e := range loc {
		binary.LittleEndian.PutUint32(b[4*i:], e)
	}
	binary.LittleEndian.PutUint32(b[4*len(loc):], mapSeal(id, gen, b[:4*len(loc)]))
	path := filepath.Join(dir, mapName(gen))
	if err := wfs.WriteSynced(fsys, path, b); err != nil {
		return fmt.Errorf("embedding: writing %s: %w", path, err)
	}
	return nil
}

// readMap reads generation gen's map of a table of pages pages, checking its seal and that no
// entry is of a later generation.
func readMap(dir string, id [16]byte, gen uint64, pages int64) ([]uint32, error) {
	path := filepath.Join(dir, mapName(gen))
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("embedding: opening table: %w", err)
	}
	n := 4 * pages
	if int64(len(b)) != n+trailerBytes {
		return nil, fmt.Errorf("%w: %s: %d bytes, want %d (a map of %d pages)", ErrCorrupt, path, len(b), n+trailerBytes, pages)
	}
	t := b[n:]
	if got, want := binary.LittleEndian.Uint32(t), mapSeal(id, gen, b[:n]); got != want || binary.LittleEndian.Uint32(t[4:]) != 0 {
		return nil, fmt.Errorf("%w: %s: checksum %08x, want %08x (damaged, or another generation's or table's map)", ErrCorrupt, path, got, want)
	}
	loc := make([]uint32, pages)
	for i := range loc {
		loc[i] = binary.LittleEndian.Uint32(b[4*i:])
		if g := entryGen(loc[i]); g == 0 || g > gen {
			return nil, fmt.Errorf("%w: %s: page %d of generation %d in generation %d's map", ErrCorrupt, path, i, g, gen)
		}
	}
	return loc, nil
}

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
	if m.Version != 1 && m.Version != manifestVersion {
		return nil, fmt.Errorf("embedding: %s: version %d, this library reads 1 and %d", filepath.Join(dir, manifestName), m.Version, manifestVersion)
	}
	if m.Generation > maxGeneration {
		return nil, fmt.Errorf("embedding: %s: generation %d, past the last a map holds (%d)", filepath.Join(dir, manifestName), m.Generation, maxGeneration)
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

// removeStale removes what an interrupted checkpoint, Create or conversion left in dir, and what
// version 1 kept that version 2 does not: every map but m's generation's, a manifest never
// published; of version 1 (before its conversion) the pages file and every generation's file but
// m's; of version 2 version 1's files.
func removeStale(fsys wfs.FS, dir string, m *manifest) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("embedding: %w", err)
	}
	v1 := m.Version == 1
	for _, e := range ents {
		n := e.Name()
		var stale bool
		switch {
		case n == manifestName+".tmp" || n == v1WorkName:
			stale = true
		case strings.HasPrefix(n, "map-"):
			stale = v1 || n != mapName(m.Generation)
		case strings.HasPrefix(n, "gen-") && strings.HasSuffix(n, ".rows"):
			stale = !v1 || n != v1GenName(m.Generation)
		case n == pagesName:
			stale = v1
		}
		if stale {
			if err := fsys.Remove(filepath.Join(dir, n)); err != nil {
				return fmt.Errorf("embedding: removing a stale file: %w", err)
			}
		}
	}
	return nil
}

// Version 1's files: gen-<G>.rows, every page sealed as G, and the working copy.
const v1WorkName = "work.rows"

func v1GenName(gen uint64) string { return "gen-" + strconv.FormatUint(gen, 10) + ".rows" }

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
