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
// path (python/tierfs/benchtrain.py, docs/bench-train.md). It replaces this process with
// `$TIERFS_PYTHON -m tierfs.benchtrain args...` (default python3), with TIERFS_LIB set to the
// library next to this binary when there is one and TIERFS_BIN to this binary (the disk probe).
// A binary built in a source tree (build/tierfs) puts that tree's python/ first on PYTHONPATH.
func runBenchTrain(args []string) error {
	py := os.Getenv("TIERFS_PYTHON")
	if py == "" {
		py = "python3"
	}
	pyPath, err := exec.LookPath(py)
	if err != nil {
		return fmt.Errorf("it runs Python: %q not found (set TIERFS_PYTHON to a Python with torch, torch_geometric and tierfs): %w", py, err)
	}
	env := os.Environ()
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			dir := filepath.Dir(exe)
			if os.Getenv("TIERFS_LIB") == "" {
				if lib := filepath.Join(dir, "libtierfs.so"); fileExists(lib) {
					env = append(env, "TIERFS_LIB="+lib)
				}
			}
			if os.Getenv("TIERFS_BIN") == "" {
				env = append(env, "TIERFS_BIN="+exe)
			}
			// A CLI built in a source tree runs that tree's package, which matches its library.
			if src := filepath.Join(dir, "..", "python"); fileExists(filepath.Join(src, "tierfs", "benchtrain.py")) {
				env = appendPath(env, "PYTHONPATH", filepath.Clean(src))
			}
		}
	}
	check := exec.Command(pyPath, "-c", "import tierfs.benchtrain, torch, torch_geometric")
	check.Env = env
	if out, err := check.CombinedOutput(); err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("%s cannot import tierfs.benchtrain, torch and torch_geometric (install the tierfs package and PyG, or set TIERFS_PYTHON): %s",
			pyPath, lines[len(lines)-1])
	}
	argv := append([]string{pyPath, "-m", "tierfs.benchtrain"}, args...)
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
