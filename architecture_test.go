// Package tierfs_test checks that ARCHITECTURE.md describes the code: its import table lists every
// package's imports of the module exactly, every import goes to a lower layer, and the layers
// diagram puts every package in its table layer.
package tierfs_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/tierfs/tierfs"

// archRow is one row of ARCHITECTURE.md's import table.
type archRow struct {
	layer   int
	imports []string // module-relative, sorted
}

var (
	// | 5 | `featurestore` | `cuda` `dataset` ... |
	tableRow = regexp.MustCompile("^\\|\\s*(\\d+)\\s*\\|\\s*`([^`]+)`\\s*\\|(.*)\\|\\s*$")
	backtick = regexp.MustCompile("`([^`]+)`")
	// " 5   featurestore/ (Session, ...)" inside the Layers code block.
	diagramRow = regexp.MustCompile(`^\s*(\d+)\s{2,}(.*)$`)
)

// readArchitecture parses the "## Imports" table and the layer rows of the "## Layers" diagram.
func readArchitecture(t *testing.T) (table map[string]archRow, diagram map[string]int) {
	t.Helper()
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	table = map[string]archRow{}
	var diagramLines []string
	section, inCode := "", false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode && strings.HasPrefix(line, "## ") {
			section = strings.TrimPrefix(line, "## ")
			continue
		}
		switch {
		case section == "Layers" && inCode:
			diagramLines = append(diagramLines, line)
		case section == "Imports" && !inCode:
			m := tableRow.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			layer, _ := strconv.Atoi(m[1])
			if _, dup := table[m[2]]; dup {
				t.Errorf("ARCHITECTURE.md: two import-table rows for %s", m[2])
			}
			var imps []string
			for _, im := range backtick.FindAllStringSubmatch(m[3], -1) {
				imps = append(imps, im[1])
			}
			slices.Sort(imps)
			table[m[2]] = archRow{layer: layer, imports: imps}
		}
	}
	if len(table) == 0 {
		t.Fatal("ARCHITECTURE.md: no rows in the table of section \"## Imports\" (| layer | `package` | `import` ... |)")
	}
	diagram = map[string]int{}
	for _, line := range diagramLines {
		m := diagramRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		layer, _ := strconv.Atoi(m[1])
		for _, word := range strings.Fields(m[2]) {
			name := strings.TrimSuffix(word, "/")
			if _, ok := table[name]; ok {
				diagram[name] = layer
			}
		}
	}
	return table, diagram
}

// moduleImports lists, with go list, every package of the module that has non-test Go files and
// the module packages those files import (module-relative, sorted).
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,GoFiles,CgoFiles,Imports", "./...")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOOS=linux")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.String())
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath        string
			GoFiles, CgoFiles []string
			Imports           []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if len(p.GoFiles)+len(p.CgoFiles) == 0 {
			continue // this test's own package
		}
		name := strings.TrimPrefix(p.ImportPath, modulePath+"/")
		var imps []string
		for _, im := range p.Imports {
			if rel, ok := strings.CutPrefix(im, modulePath+"/"); ok {
				imps = append(imps, rel)
			}
		}
		slices.Sort(imps)
		pkgs[name] = imps
	}
	return pkgs
}

// TestImportsMatchArchitecture fails when ARCHITECTURE.md's import table and the code disagree:
// a package without a row, a row without a package, an import missing from its row or listed
// there but gone, an import that does not go to a lower layer, or a diagram layer that is not the
// table's.
func TestImportsMatchArchitecture(t *testing.T) {
	table, diagram := readArchitecture(t)
	code := moduleImports(t)
	fix := "update the table in ARCHITECTURE.md \"## Imports\" (and the diagram) or the imports"

	for _, pkg := range sortedKeys(code) {
		row, ok := table[pkg]
		if !ok {
			t.Errorf("package %s (imports %v) has no row in ARCHITECTURE.md's import table: add one with its layer", pkg, code[pkg])
			continue
		}
		if missing := minus(code[pkg], row.imports); len(missing) > 0 {
			t.Errorf("%s imports %v, which its ARCHITECTURE.md row does not list: %s", pkg, missing, fix)
		}
		if gone := minus(row.imports, code[pkg]); len(gone) > 0 {
			t.Errorf("ARCHITECTURE.md says %s imports %v, which it no longer does: %s", pkg, gone, fix)
		}
		for _, im := range code[pkg] {
			if dep, ok := table[im]; ok && dep.layer >= row.layer {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only from lower layers", pkg, row.layer, im, dep.layer)
			}
		}
		if layer, ok := diagram[pkg]; !ok {
			t.Errorf("package %s is not drawn in ARCHITECTURE.md's Layers diagram (a row \"%d   %s ...\")", pkg, row.layer, pkg)
		} else if layer != row.layer {
			t.Errorf("ARCHITECTURE.md draws %s in layer %d, its import-table row says %d", pkg, layer, row.layer)
		}
	}
	for _, pkg := range sortedKeys(table) {
		if _, ok := code[pkg]; !ok {
			t.Errorf("ARCHITECTURE.md's import table has a row for %s, which is not a package of the module (go list ./...)", pkg)
		}
	}
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestCLibraryLinksNoCLI: libtierfs.so (package capi) links neither the command line (cli, its
// cobra) nor its plotting (gonum/plot); the tierfs program carries those.
func TestCLibraryLinksNoCLI(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./capi")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOOS=linux")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./capi: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, modulePath+"/featurestore") {
		t.Fatalf("go list -deps ./capi lists no featurestore: %q", deps)
	}
	for _, dep := range deps {
		for _, banned := range []string{modulePath + "/cli", "github.com/spf13/", "gonum.org/v1/plot"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("capi (libtierfs.so) links %s", dep)
			}
		}
	}
}
