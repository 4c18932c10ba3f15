package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// runBenchTrain is `tierfs bench train [args]`: end-to-end GNN training seeds/s of every feature
// path (python/bench/benchtrain.py, docs/bench-train.md). The benchmark is the source tree's, not
// the shipped package's: a binary built in a source tree (build/tierfs) replaces this process with
// `$TIERFS_PYTHON -m benchtrain args...` (default python3), the tree's python/ and python/bench
// first on PYTHONPATH, TIERFS_LIB set to the library next to this binary when there is one and
// TIERFS_BIN to this binary (the disk probe). Elsewhere (a wheel's binary) it says where to run it.
func runBenchTrain(args []string) error {
	py := os.Getenv("TIERFS_PYTHON")
	if py == "" {
		py = "python3"
	}
	pyPath, err := exec.LookPath(py)
	if err != nil {
		return fmt.Errorf("it runs Python: %q not found (set TIERFS_PYTHON to a Python with torch, torch_geometric and tierfs): %w", py, err)
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return fmt.Errorf("cannot find this program's path, next to which the source tree's python/bench lies: %w", err)
	}
	dir := filepath.Dir(exe)
	src := filepath.Clean(filepath.Join(dir, "..", "python"))
	if !fileExists(filepath.Join(src, "bench", "benchtrain.py")) {
		return fmt.Errorf("it is a benchmark of the source tree, not shipped with the package: run the tierfs built in a checkout (make build; build/tierfs bench train ...), which finds python/bench/benchtrain.py; %s has none", filepath.Join(src, "bench"))
	}
	env := appendPath(appendPath(os.Environ(), "PYTHONPATH", filepath.Join(src, "bench")), "PYTHONPATH", src)
	if os.Getenv("TIERFS_LIB") == "" {
		if lib := filepath.Join(dir, "libtierfs.so"); fileExists(lib) {
			env = append(env, "TIERFS_LIB="+lib)
		}
	}
	if os.Getenv("TIERFS_BIN") == "" {
		env = append(env, "TIERFS_BIN="+exe)
	}
	check := exec.Command(pyPath, "-c", "import benchtrain, torch, torch_geometric")
	check.Env = env
	if out, err := check.CombinedOutput(); err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("%s cannot import benchtrain (from %s), torch and torch_geometric (install PyG, or set TIERFS_PYTHON): %s",
			pyPath, filepath.Join(src, "bench"), lines[len(lines)-1])
	}
	argv := append([]string{pyPath, "-m", "benchtrain"}, args...)
	return syscall.Exec(pyPath, argv, env)
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// appendPath prepends dir to the list variable key of env.
func appendPath(env []string, key, dir string) []string {
	for i, kv := range env {
		if len(kv) > len(key) && kv[:len(key)+1] == key+"=" {
			env[i] = key + "=" + dir + string(os.PathListSeparator) + kv[len(key)+1:]
			return env
		}
	}
	return append(env, key+"="+dir)
}
