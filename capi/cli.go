package main

/*
#include <stdio.h>
#include "tierfs.h"
*/
import "C"

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/tierfs/tierfs/cli"
)

// cliPanicked is tfs_cli_main's exit status when a command panicked (EX_SOFTWARE).
const cliPanicked = 70

//export tfsgo_cli_main
func tfsgo_cli_main(argc C.int, argv **C.char) (code C.int) {
	defer func() {
		if code == C.int(stEINTERNAL) { // set by guard: a command panicked
			fmt.Fprintln(os.Stderr, C.GoString(C.tfs_last_error()))
			code = cliPanicked
		}
	}()
	defer guard("tfs_cli_main", &code)
	if argc < 1 || argv == nil {
		fmt.Fprintln(os.Stderr, "tfs_cli_main: argv must hold at least the program's name")
		return 2
	}
	args := make([]string, argc)
	for i, p := range unsafe.Slice(argv, int(argc)) {
		if p == nil {
			fmt.Fprintf(os.Stderr, "tfs_cli_main: argv[%d] is NULL\n", i)
			return 2
		}
		args[i] = C.GoString(p)
	}
	// The process is the caller's (python, for the console script): commands that start this
	// CLI again (mount's background server) run argv[0].
	cli.Self = func() (string, error) { return programPath(args[0]) }
	code = C.int(cli.Main(args))
	C.fflush(nil) // C stdio of the caller before it goes on writing
	return code
}

// programPath resolves argv[0] as a shell would: a path if it has a slash, else found on PATH.
func programPath(arg0 string) (string, error) {
	if !strings.Contains(arg0, "/") {
		p, err := exec.LookPath(arg0)
		if err != nil {
			return "", fmt.Errorf("cannot run this command again: argv[0] %q: %w", arg0, err)
		}
		arg0 = p
	}
	return filepath.Abs(arg0)
}
