package dataset

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// prompt runs fn and fails the test when it takes more than 5 s (a blocked open of a FIFO, an
// endless read of a device) or allocates more than maxAlloc bytes.
func prompt(t *testing.T, what string, maxAlloc uint64, fn func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still running after 5 s", what)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > maxAlloc {
		t.Fatalf("%s: allocated %d bytes, more than %d", what, got, maxAlloc)
	}
}

func newPathsDataset(t *testing.T) (string, *Manifest) {
	t.Helper()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	dir := t.TempDir()
	m, _ := writeTestDataset(t, dir, 1000, 8, Float32, 2, rand.New(rand.NewPCG(seed, 3)))
	return dir, m
}

func wantErr(t *testing.T, what string, err error, mention string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), mention) || !IsCorrupt(err) {
		t.Fatalf("%s: error %v, want ErrCorrupt naming %q", what, err, mention)
	}
}

// wantProblem checks Verify reported a problem for file naming mention.
func wantProblem(t *testing.T, m *Manifest, file, mention string) {
	t.Helper()
	var problems []Problem
	var err error
	prompt(t, "verify", 8<<20, func() { problems, err = m.Verify(0, nil) })
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if p.File == file && strings.Contains(p.What, mention) {
			return
		}
	}
	t.Fatalf("verify: problems %v, want one for %s mentioning %q", problems, file, mention)
}

func TestManifestNotRegular(t *testing.T) {
	dir, _ := newPathsDataset(t)
	path := filepath.Join(dir, ManifestName)
	os.Remove(path)
	for _, tc := range []struct {
		name string
		make func() error
	}{
		{"symlink to /dev/zero", func() error { return os.Symlink("/dev/zero", path) }},
		{"FIFO", func() error { return syscall.Mkfifo(path, 0o644) }},
		{"directory", func() error { return os.Mkdir(path, 0o755) }},
	} {
		if err := tc.make(); err != nil {
			t.Fatal(err)
		}
		var err error
		prompt(t, tc.name, 1<<20, func() { _, err = Load(dir) })
		wantErr(t, tc.name, err, path)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	// A sparse manifest past the cap is refused before it is read.
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(MaxManifestBytes + 1)
	f.Close()
	prompt(t, "huge manifest", 1<<20, func() { _, err = Load(dir) })
	wantErr(t, "huge manifest", err, "more than")
}

func TestFIFODataFile(t *testing.T) {
	dir, m := newPathsDataset(t)
	labels := filepath.Join(dir, "labels.bin")
	os.Remove(labels)
	if err := syscall.Mkfifo(labels, 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	prompt(t, "open FIFO", 1<<20, func() { _, _, err = m.OpenFD("labels.bin", 0) })
	wantErr(t, "open FIFO", err, labels)
	if !strings.Contains(err.Error(), "FIFO") {
		t.Fatalf("open FIFO: %v does not say FIFO", err)
	}
	wantProblem(t, m, "labels.bin", "FIFO")
}

func TestDeviceSidecar(t *testing.T) {
	dir, m := newPathsDataset(t)
	for _, dev := range []string{"/dev/urandom", "/dev/zero"} {
		side := filepath.Join(dir, "labels.bin"+ChecksumSuffix)
		os.Remove(side)
		if err := os.Symlink(dev, side); err != nil {
			t.Fatal(err)
		}
		var err error
		prompt(t, "sidecar "+dev, 1<<20, func() { _, err = m.LoadChecksums(m.File("labels.bin")) })
		wantErr(t, "sidecar "+dev, err, side)
		wantProblem(t, m, "labels.bin", "character device")
	}
	// A sidecar longer than the manifest implies is refused before it is read.
	side := filepath.Join(dir, "indptr.bin"+ChecksumSuffix)
	f, err := os.OpenFile(side, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 8))
	f.Close()
	prompt(t, "long sidecar", 1<<20, func() { _, err = m.LoadChecksums(m.File("indptr.bin")) })
	wantErr(t, "long sidecar", err, side)
}

func TestManifestPathEscapes(t *testing.T) {
	dir, _ := newPathsDataset(t)
	raw, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	for _, tc := range []struct{ from, to, mention string }{
		{`"labels.bin"`, `"../labels.bin"`, "escapes"},
		{`"checksums": "labels.bin.xxh64"`, `"checksums": "../../labels.bin.xxh64"`, "escapes"},
		{`"labels.bin"`, `"` + filepath.Join(outside, "labels.bin") + `"`, "absolute"},
		{`"checksums": "labels.bin.xxh64"`, `"checksums": "/dev/urandom"`, "absolute"},
		{`"checksums": "features.x.0.bin.xxh64"`, `"checksums": "/dev/urandom"`, "absolute"},
	} {
		bad := strings.ReplaceAll(string(raw), tc.from, tc.to)
		if bad == string(raw) {
			t.Fatalf("%s does not apply", tc.from)
		}
		if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		prompt(t, tc.to, 1<<20, func() { _, err = Load(dir) })
		wantErr(t, tc.from+" -> "+tc.to, err, strings.Trim(strings.TrimPrefix(tc.to, `"checksums": `), `"`))
		if !strings.Contains(err.Error(), tc.mention) {
			t.Fatalf("%s: %v does not say %q", tc.to, err, tc.mention)
		}
	}
	// A feature stripe on another device (an absolute path, as ingest --device-path writes)
	// stays allowed, with its sidecar beside it.
	for _, name := range []string{"features.x.1.bin", "features.x.1.bin" + ChecksumSuffix} {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(outside, name)); err != nil {
			t.Fatal(err)
		}
	}
	good := strings.ReplaceAll(string(raw), `"features.x.1.bin`, `"`+filepath.Join(outside, "features.x.1.bin"))
	if err := os.WriteFile(filepath.Join(dir, ManifestName), rehashed(t, good), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(dir)
	if err != nil {
		t.Fatalf("absolute stripe: %v", err)
	}
	if problems, err := m.Verify(0, nil); err != nil || len(problems) != 0 {
		t.Fatalf("absolute stripe: verify %v %v", problems, err)
	}
}

// rehashed is manifest JSON text with its manifest_hash recomputed, as a writer would have
// written it.
func rehashed(t *testing.T, text string) []byte {
	t.Helper()
	var m Manifest
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	h, err := m.contentHash()
	if err != nil {
		t.Fatal(err)
	}
	m.ManifestHash = h
	data, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestManifestEditsAreCaught: any edit of a value in a written manifest is corruption; layout
// (whitespace) is not; a manifest edited down to version 1 (an older writer's, without a hash)
// does not make its dataset's blocks pass their checks; two roles never share a file, even in a
// manifest whose hash was recomputed.
func TestManifestEditsAreCaught(t *testing.T) {
	dir, _ := newPathsDataset(t)
	path := filepath.Join(dir, ManifestName)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"manifest_hash"`) {
		t.Fatal("Commit wrote no manifest_hash")
	}
	for _, tc := range []struct{ from, to string }{
		{`"num_classes": 16`, `"num_classes": 17`},
		{`"count": 4`, `"count": 3`},
		{`"by": "`, `"by": "x`},
	} {
		bad := strings.Replace(string(raw), tc.from, tc.to, 1)
		if bad == string(raw) {
			continue // this dataset has no such value
		}
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := Load(dir); !IsCorrupt(err) || !strings.Contains(err.Error(), "edited after it was written") {
			t.Errorf("%s -> %s: %v, want the edit caught", tc.from, tc.to, err)
		}
	}
	os.WriteFile(path, []byte(strings.ReplaceAll(string(raw), "\n  ", "\n    ")), 0o644)
	if _, err := Load(dir); err != nil {
		t.Errorf("re-indented manifest: %v", err)
	}
	// A key given twice is refused even when the last value is the hashed one (issue 43: the
	// last wins in encoding/json, and other readers may take the first).
	dup := strings.Replace(string(raw), `"version":`, `"version": 1, "version":`, 1)
	os.WriteFile(path, []byte(dup), 0o644)
	if _, err := Load(dir); !IsCorrupt(err) || !strings.Contains(err.Error(), `key "version" appears twice`) {
		t.Errorf("a manifest with a key twice: %v, want it refused as corrupt", err)
	}
	var obj map[string]any
	json.Unmarshal(raw, &obj)
	delete(obj, "manifest_hash")
	stripped, _ := json.Marshal(obj)
	os.WriteFile(path, stripped, 0o644)
	if _, err := Load(dir); !IsCorrupt(err) || !strings.Contains(err.Error(), "no manifest_hash") {
		t.Errorf("a version 2 manifest without its hash: %v", err)
	}
	// An edit down to version 1 (no hash, read as it is) is no downgrade: with the dataset id
	// kept the manifest is inconsistent; without it, Load finds the sidecars bound to their place
	// (version 7) where an old dataset's are not, and refuses it as corruption. So does an edit
	// down to version 6 whose hash was recomputed.
	obj["version"] = 1
	old, _ := json.Marshal(obj)
	os.WriteFile(path, old, 0o644)
	if _, err := Load(dir); !IsCorrupt(err) || !strings.Contains(err.Error(), "dataset_id") {
		t.Errorf("a version 7 manifest edited to version 1, its dataset id kept: %v", err)
	}
	delete(obj, "dataset_id")
	old, _ = json.Marshal(obj)
	os.WriteFile(path, old, 0o644)
	if _, err := Load(dir); !IsCorrupt(err) || !strings.Contains(err.Error(), "edited down to an older version") {
		t.Errorf("a version 7 dataset whose manifest says version 1 without a hash or dataset id: %v, want corruption", err)
	}
	obj["version"] = 6
	old, _ = json.Marshal(obj)
	os.WriteFile(path, rehashed(t, string(old)), 0o644)
	if _, err := Load(dir); !IsCorrupt(err) || !strings.Contains(err.Error(), "format version 6") {
		t.Errorf("a version 7 dataset whose manifest says version 6 with a recomputed hash: %v, want corruption", err)
	}
	var m Manifest
	json.Unmarshal(raw, &m)
	stripes := m.NodeTypes[0].Features[0].Files
	if len(stripes) < 2 {
		t.Fatalf("the test dataset has %d stripes, want 2 or more", len(stripes))
	}
	stripes[1] = stripes[0]
	twice, _ := json.Marshal(&m)
	os.WriteFile(path, rehashed(t, string(twice)), 0o644)
	if _, err := Load(dir); !IsCorrupt(err) || !strings.Contains(err.Error(), "both refer to file") {
		t.Errorf("two stripes naming one file: %v", err)
	}
}
