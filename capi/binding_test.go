package main

import (
	"os/exec"
	"testing"
)

// The Python binding's declarations (python/tierfs/_abi.py) are generated from the headers of
// this package by pybind/gen_binding.py: a header edited without `make binding` fails here, in
// `go test ./...`, as it does in python/tests/test_abi_layout.py.
func TestBindingIsGenerated(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH (python/tests/test_abi_layout.py checks the binding too)")
	}
	out, err := exec.Command(py, "../pybind/gen_binding.py", "--check").CombinedOutput()
	if err != nil {
		t.Fatalf("python/tierfs/_abi.py is not what capi/tierfs.h gives (run `make binding`): %v\n%s", err, out)
	}
}
