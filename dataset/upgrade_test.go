package dataset

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierfs/tierfs/internal/wfs"
)

// downgrade rewrites the dataset in dir (as Commit writes it: version 7) as the writers before
// version 7 wrote it: sidecars unbound, no dataset id, the lowest version that describes it
// without one. It stands for datasets older tierfs wrote, of any size and layout.
func downgrade(t *testing.T, dir string) *Manifest {
	t.Helper()
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	keys := m.bindKeys()
	for i := range m.Files {
		f := &m.Files[i]
		side := mustRead(t, m.Path(f.Checksums))
		for k := 0; k+8 <= len(side); k += 8 {
			binary.LittleEndian.PutUint64(side[k:], binary.LittleEndian.Uint64(side[k:])^blockMix(keys[f.Path], int64(k/8)))
		}
		if err := os.WriteFile(m.Path(f.Checksums), side, 0o644); err != nil {
			t.Fatal(err)
		}
		f.ChecksumsHash = hashHex(side)
	}
	m.DatasetID = ""
	m.Version = m.minVersion()
	if err := m.writeManifest(); err != nil {
		t.Fatal(err)
	}
	if m, err = Load(dir); err != nil || m.Version >= VersionBound {
		t.Fatalf("the downgraded dataset: version %v, %v", m, err)
	}
	return m
}

// writeOldDataset writes, with a version 6 writer's layout (downgrade), a dataset of count rows
// whose feature has two stripes, the second in stripes (an absolute path, as on another device),
// a ring topology and labels.
func writeOldDataset(t *testing.T, dir, stripes string, count int64, r *rand.Rand) *Manifest {
	t.Helper()
	spec, err := NewFeatureSpec("x", Float32, 24, count, 2, DefaultBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	spec.Files = []string{"features.x.0.bin", filepath.Join(stripes, "x.1.bin")}
	w, err := NewFeatureWriter(nil, dir, &spec)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]byte, count*spec.RowBytes)
	for i := range rows {
		rows[i] = byte(r.UintN(256))
	}
	if err := w.WriteRows(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	indptr, indices, labels := make([]int64, count+1), make([]int64, count), make([]int64, count)
	for v := range count {
		indptr[v+1], indices[v], labels[v] = v+1, (v+count-1)%count, r.Int64N(7)
	}
	for name, vals := range map[string][]int64{"indptr.bin": indptr, "indices.bin": indices, "labels.bin": labels, "train.ids": indices[:count/2]} {
		if err := WriteInt64s(nil, filepath.Join(dir, name), vals); err != nil {
			t.Fatal(err)
		}
	}
	m := &Manifest{
		NodeTypes: []NodeType{{Name: "node", Count: count, Features: []FeatureSpec{spec}, Labels: &LabelSpec{ArraySpec{"labels.bin", Int64}, 7},
			Splits: map[string]IDsSpec{"train": {ArraySpec{"train.ids", Int64}, count / 2}}}},
		EdgeTypes: []EdgeType{{Src: "node", Rel: "to", Dst: "node", Count: count, Layout: "csc",
			Indptr: ArraySpec{"indptr.bin", Int64}, Indices: ArraySpec{"indices.bin", Int64}}},
	}
	m.SetDir(dir)
	if err := Commit(m, append(slices.Clone(spec.Files), "indptr.bin", "indices.bin", "labels.bin", "train.ids"), "upgrade_test.go", nil); err != nil {
		t.Fatal(err)
	}
	return downgrade(t, dir)
}

// copyDir copies the regular files under src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dataFiles is the content of every data file m lists, by path.
func dataFiles(t *testing.T, m *Manifest) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range m.Files {
		out[f.Path] = mustRead(t, m.Path(f.Path))
	}
	return out
}

// upgradeLeftovers lists the files an upgrade writes beside sidecars that are still there.
func upgradeLeftovers(t *testing.T, dirs ...string) []string {
	t.Helper()
	var left []string
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, _ fs.DirEntry, _ error) error {
			if strings.Contains(filepath.Base(p), upgradeSuffix) {
				left = append(left, p)
			}
			return nil
		})
	}
	return left
}

// checkUpgraded checks that dir holds old (a dataset of an older version) upgraded: the current
// version, a dataset id, every block verified, the data files byte for byte and the manifest's content as
// they were, nothing of the upgrade left — and that its checksums are now bound (a block
// moved within a file fails).
func checkUpgraded(t *testing.T, dir string, old *Manifest, data map[string][]byte, dirs ...string) *Manifest {
	t.Helper()
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != Version || m.DatasetID == "" {
		t.Fatalf("upgraded: version %d, dataset id %q", m.Version, m.DatasetID)
	}
	if problems, err := m.Verify(0, nil); err != nil || len(problems) > 0 {
		t.Fatalf("the upgraded dataset: Verify %v %v", problems, err)
	}
	if got := dataFiles(t, m); !reflect.DeepEqual(got, data) {
		t.Fatal("the upgrade changed data files")
	}
	if !reflect.DeepEqual(m.NodeTypes, old.NodeTypes) || !reflect.DeepEqual(m.EdgeTypes, old.EdgeTypes) || m.BlockSize != old.BlockSize || !reflect.DeepEqual(m.Created, old.Created) {
		t.Fatalf("the upgrade changed the manifest's content:\n%+v\n%+v", m.NodeTypes, old.NodeTypes)
	}
	for i, f := range m.Files {
		o := old.Files[i]
		if f.Path != o.Path || f.Checksums != o.Checksums || f.Bytes != o.Bytes || f.ContentBytes != o.ContentBytes || f.ChecksumsHash == o.ChecksumsHash && f.Bytes > 0 {
			t.Fatalf("files[%d]: %+v, was %+v (want the same file and sidecar name, a new sidecar)", i, f, o)
		}
	}
	if left := upgradeLeftovers(t, append(dirs, dir)...); len(left) > 0 {
		t.Fatalf("the upgrade left %v", left)
	}
	return m
}

// TestUpgradeGolden: every golden dataset of an older version (testdata/golden, versions 1 to 8)
// upgrades to the current version — verified, its data and content unchanged, its dataset id
// kept where it had one, its checksums now bound to their layout too — and a second Upgrade
// changes nothing.
func TestUpgradeGolden(t *testing.T) {
	for _, v := range []int{1, 2, 3, 5, 6, 7, 8} {
		t.Run(fmt.Sprint("v", v), func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, filepath.Join("testdata", "golden", fmt.Sprint("v", v)), dir)
			old, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			data := dataFiles(t, old)
			from, err := Upgrade(dir, nil)
			if err != nil || from != v {
				t.Fatalf("Upgrade: from %d, %v; want from %d", from, err, v)
			}
			m := checkUpgraded(t, dir, old, data)
			if v >= VersionBound && m.DatasetID != old.DatasetID || m.Typed != old.Typed {
				t.Fatalf("upgraded from version %d: dataset id %q typed %v, was %q %v", v, m.DatasetID, m.Typed, old.DatasetID, old.Typed)
			}
			before := mustRead(t, filepath.Join(dir, ManifestName))
			if from, err := Upgrade(dir, nil); err != nil || from != Version {
				t.Fatalf("Upgrade of an upgraded dataset: from %d, %v", from, err)
			}
			if after := mustRead(t, filepath.Join(dir, ManifestName)); string(after) != string(before) {
				t.Fatal("Upgrade of an upgraded dataset rewrote its manifest")
			}
		})
	}
}

// TestUpgradeRefusesDamage: a damaged old dataset is not upgraded — the error names the file
// and block — and nothing in it changes.
func TestUpgradeRefusesDamage(t *testing.T) {
	r := testRand(t)
	dir, stripes := t.TempDir(), t.TempDir()
	m := writeOldDataset(t, dir, stripes, 30000, r)
	f := m.File(m.Nodes().Features[0].Files[1]) // the stripe elsewhere
	block := 1 + r.Int64N(f.Bytes/int64(m.BlockSize)-1)
	raw := mustRead(t, f.Path)
	raw[block*int64(m.BlockSize)+r.Int64N(int64(m.BlockSize))] ^= 1 << r.UintN(8)
	if err := os.WriteFile(f.Path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := mustRead(t, filepath.Join(dir, ManifestName))
	_, err := Upgrade(dir, nil)
	if !IsCorrupt(err) || !strings.Contains(err.Error(), f.Path) || !strings.Contains(err.Error(), fmt.Sprintf("block %d ", block)) || !strings.Contains(err.Error(), "not upgraded") {
		t.Fatalf("Upgrade of a dataset with block %d of %s damaged: %v", block, f.Path, err)
	}
	if string(mustRead(t, filepath.Join(dir, ManifestName))) != string(manifest) {
		t.Fatal("a refused upgrade rewrote the manifest")
	}
	if left := upgradeLeftovers(t, dir, stripes); len(left) > 0 {
		t.Fatalf("a refused upgrade left %v", left)
	}
}

// testRand is a seeded generator, its seed logged.
func testRand(t *testing.T) *rand.Rand {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// TestKilledUpgradeHelper is the upgrade TestKilledUpgrade kills: it upgrades TIERFS_UPGRADE_DIR
// and, at its step number TIERFS_UPGRADE_STEP, prints "ready" and waits to be killed.
func TestKilledUpgradeHelper(t *testing.T) {
	dir := os.Getenv("TIERFS_UPGRADE_DIR")
	if dir == "" {
		t.Skip("run by TestKilledUpgrade")
	}
	at, _ := strconv.Atoi(os.Getenv("TIERFS_UPGRADE_STEP"))
	n := 0
	_, err := upgrade(wfs.OS, dir, nil, func(step string) {
		if n == at {
			os.Stdout.WriteString("ready " + step + "\n")
			time.Sleep(time.Hour)
		}
		n++
	})
	t.Fatalf("the upgrade ended (%v) before step %d", err, at)
}

// TestKilledUpgrade: an upgrade killed with SIGKILL after any of its steps leaves the old dataset
// or the new one, either loading and verifying with the data it had; the next Upgrade finishes
// the work and leaves nothing behind.
func TestKilledUpgrade(t *testing.T) {
	r := testRand(t)
	src, srcStripes := t.TempDir(), t.TempDir()
	old := writeOldDataset(t, src, srcStripes, 15000, r)
	fresh := func() (string, string) { // a copy of src, its stripe elsewhere in a new directory
		dir, stripes := t.TempDir(), t.TempDir()
		copyDir(t, src, dir)
		copyDir(t, srcStripes, stripes)
		text := strings.ReplaceAll(string(mustRead(t, filepath.Join(dir, ManifestName))), srcStripes, stripes)
		if err := os.WriteFile(filepath.Join(dir, ManifestName), rehashed(t, text), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir, stripes
	}
	// The steps, from an upgrade run here.
	var steps []string
	dir, stripes := fresh()
	m, _ := Load(dir)
	data := dataFiles(t, m)
	if _, err := upgrade(wfs.OS, dir, nil, func(s string) { steps = append(steps, s) }); err != nil {
		t.Fatal(err)
	}
	checkUpgraded(t, dir, m, data, stripes)
	if len(steps) < 2*len(old.Files)+2 {
		t.Fatalf("steps %v: want one per sidecar bound and moved and two manifests", steps)
	}
	for k, step := range steps {
		dir, stripes := fresh()
		m, _ := Load(dir)
		data := dataFiles(t, m)
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledUpgradeHelper$")
		cmd.Env = append(os.Environ(), "TIERFS_UPGRADE_DIR="+dir, "TIERFS_UPGRADE_STEP="+strconv.Itoa(k))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		kind, _, _ := strings.Cut(step, " ") // file paths differ from copy to copy
		if !sc.Scan() || !strings.HasPrefix(sc.Text(), "ready "+kind) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the upgrade to kill said %q, want ready at step %d (%s)", sc.Text(), k, step)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var exit *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &exit) {
			t.Fatalf("step %s: the killed upgrade ended with %v", step, err)
		}
		// Killed: the old dataset or the new one, whole.
		killed, err := Load(dir)
		if err != nil {
			t.Fatalf("killed after step %d (%s): %v", k, step, err)
		}
		bound := k >= slices.Index(steps, "manifest bound")
		if (killed.Version == Version) != bound {
			t.Fatalf("killed after step %d (%s): version %d", k, step, killed.Version)
		}
		if problems, err := killed.Verify(0, nil); err != nil || len(problems) > 0 {
			t.Fatalf("killed after step %d (%s): Verify %v %v", k, step, problems, err)
		}
		if !reflect.DeepEqual(dataFiles(t, killed), data) {
			t.Fatalf("killed after step %d (%s): data files changed", k, step)
		}
		// The next upgrade finishes it.
		from, err := Upgrade(dir, nil)
		if err != nil || (from == Version) != bound {
			t.Fatalf("the upgrade after one killed after step %d (%s): from %d, %v", k, step, from, err)
		}
		checkUpgraded(t, dir, m, data, stripes)
	}
}

// TestUpgradeLock: while one upgrade of a dataset is at work (its lock held), another is refused
// with ErrUpgradeRunning and changes nothing; once it is released the upgrade runs.
func TestUpgradeLock(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "golden", "v2"), dir)
	unlock, err := lockUpgrade(dir)
	if err != nil {
		t.Fatal(err)
	}
	manifest := mustRead(t, filepath.Join(dir, ManifestName))
	if _, err := Upgrade(dir, nil); !errors.Is(err, ErrUpgradeRunning) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Upgrade while another holds the lock: %v", err)
	}
	if string(mustRead(t, filepath.Join(dir, ManifestName))) != string(manifest) {
		t.Fatal("a refused upgrade rewrote the manifest")
	}
	unlock()
	if from, err := Upgrade(dir, nil); err != nil || from != 2 {
		t.Fatalf("Upgrade once the lock is released: from %d, %v", from, err)
	}
	if _, err := Upgrade(filepath.Join(dir, "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Upgrade of a missing directory: %v", err)
	}
	if _, err := Upgrade(filepath.Join(dir, ManifestName), nil); !errors.Is(err, ErrNotDataset) {
		t.Fatalf("Upgrade of a file: %v", err)
	}
}

// TestUpgradeInPlace: a version 4 dataset whose feature is read in place (the user's file, a
// partial last block, its sidecar in the dataset) upgrades without the user's file changing.
func TestUpgradeInPlace(t *testing.T) {
	r := testRand(t)
	user := filepath.Join(t.TempDir(), "x.npy")
	const rows = 3000 // 36,010 bytes: 9 blocks, the last partial
	raw := make([]byte, 10+rows*12)
	for i := range raw {
		raw[i] = byte(r.UintN(256))
	}
	if err := os.WriteFile(user, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spec, err := NewInPlaceFeatureSpec("x", Float32, 3, rows, user, 10, DefaultBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	m := &Manifest{NodeTypes: []NodeType{{Name: "node", Count: rows, Features: []FeatureSpec{spec}}}}
	m.SetDir(dir)
	if err := Commit(m, []string{user}, "test", nil); err != nil {
		t.Fatal(err)
	}
	old := downgrade(t, dir)
	if old.Version != 4 {
		t.Fatalf("downgraded to version %d, want 4", old.Version)
	}
	st, _ := os.Stat(user)
	data := dataFiles(t, old)
	if from, err := Upgrade(dir, nil); err != nil || from != 4 {
		t.Fatalf("Upgrade: from %d, %v", from, err)
	}
	checkUpgraded(t, dir, old, data)
	if after, _ := os.Stat(user); !after.ModTime().Equal(st.ModTime()) || after.Size() != st.Size() {
		t.Fatal("the upgrade touched the user's in-place file")
	}
}
