package ingest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// textEdgeExts are the extensions read as text edge lists (CSV, TSV, whitespace-separated).
var textEdgeExts = []string{".csv", ".tsv", ".txt", ".edges", ".el"}

func isTextEdges(path string) bool {
	return slices.Contains(textEdgeExts, strings.ToLower(filepath.Ext(path)))
}

// textEdges reads a text edge list: one edge a line, fields separated by commas, tabs or spaces;
// lines starting with # or % (SNAP, Matrix Market comments) and blank lines skipped. A first line
// whose fields are not all integers is a header naming the columns.
type textEdges struct {
	path     string
	header   bool
	src, dst int // field indexes
	fields   int // fields a line must have at least
}

// openTextEdges reads the header (if any) and picks the columns: columns[0] and [1] by header
// name or by 0-based index; by default the columns named src and dst (or source and target),
// else the first two.
func openTextEdges(path string, columns [2]string) (*textEdges, error) {
	f, err := openInput(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: edges: %w", err)
	}
	defer f.Close()
	sc := newLineScanner(f)
	e := &textEdges{path: path}
	var first []string
	for sc.Scan() {
		if fields := splitFields(sc.Text()); fields != nil {
			first = fields
			break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ingest: read %s: %w", path, err)
	}
	if first == nil {
		return nil, fmt.Errorf("ingest: edges file %s has no edges (only comments or blank lines)", path)
	}
	for _, f := range first {
		if _, err := strconv.ParseInt(f, 10, 64); err != nil {
			e.header = true
			break
		}
	}
	var names []string
	if e.header {
		names = first
	}
	if e.src, e.dst, err = pickColumns(path, names, len(first), columns); err != nil {
		return nil, err
	}
	e.fields = max(e.src, e.dst) + 1
	return e, nil
}

// pickColumns resolves the source and destination columns of an edges file with ncols columns
// (names may be nil): columns given by name or 0-based index, else src/dst or source/target by
// name, else the first two.
func pickColumns(path string, names []string, ncols int, columns [2]string) (src, dst int, err error) {
	find := func(want string) int {
		if i, err := strconv.Atoi(want); err == nil && i >= 0 && i < ncols {
			return i
		}
		return slices.Index(names, want)
	}
	switch {
	case columns[0] != "" || columns[1] != "":
		src, dst = find(columns[0]), find(columns[1])
		for k, c := range []int{src, dst} {
			if c < 0 {
				return 0, 0, fmt.Errorf("ingest: edges file %s has no column %q (columns: %s)", path, columns[k], describeColumns(names, ncols))
			}
		}
	case slices.Contains(names, "src") && slices.Contains(names, "dst"):
		src, dst = find("src"), find("dst")
	case slices.Contains(names, "source") && slices.Contains(names, "target"):
		src, dst = find("source"), find("target")
	case ncols < 2:
		return 0, 0, fmt.Errorf("ingest: edges file %s has %d column(s); want two (source, destination)", path, ncols)
	default:
		src, dst = 0, 1
	}
	if src == dst {
		return 0, 0, fmt.Errorf("ingest: edges file %s: source and destination are the same column %d", path, src)
	}
	return src, dst, nil
}

func describeColumns(names []string, ncols int) string {
	if names != nil {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%d unnamed, by index 0..%d", ncols, ncols-1)
}

func (e *textEdges) name() string { return e.path }
func (e *textEdges) count() int64 { return -1 }

func (e *textEdges) scan(fn func(first int64, src, dst []int64) error) error {
	f, err := openInput(e.path)
	if err != nil {
		return fmt.Errorf("ingest: edges: %w", err)
	}
	defer f.Close()
	sc := newLineScanner(f)
	srcBuf, dstBuf := make([]int64, 0, edgeChunk), make([]int64, 0, edgeChunk)
	var first int64
	line, skippedHeader := 0, !e.header
	for sc.Scan() {
		line++
		fields := splitFields(sc.Text())
		if fields == nil {
			continue
		}
		if !skippedHeader {
			skippedHeader = true
			continue
		}
		if len(fields) < e.fields {
			return fmt.Errorf("ingest: edges file %s line %d has %d field(s); want at least %d", e.path, line, len(fields), e.fields)
		}
		var ids [2]int64
		for k, c := range []int{e.src, e.dst} {
			v, err := strconv.ParseInt(fields[c], 10, 64)
			if err != nil {
				return fmt.Errorf("ingest: edges file %s line %d: field %d %q is not an integer node id", e.path, line, c, fields[c])
			}
			ids[k] = v
		}
		srcBuf, dstBuf = append(srcBuf, ids[0]), append(dstBuf, ids[1])
		if len(srcBuf) == edgeChunk {
			if err := fn(first, srcBuf, dstBuf); err != nil {
				return err
			}
			first += int64(len(srcBuf))
			srcBuf, dstBuf = srcBuf[:0], dstBuf[:0]
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("ingest: read %s line %d: %w", e.path, line+1, err)
	}
	if len(srcBuf) > 0 {
		return fn(first, srcBuf, dstBuf)
	}
	return nil
}

func newLineScanner(f *os.File) *bufio.Scanner {
	sc := bufio.NewScanner(bufio.NewReaderSize(f, 1<<20))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return sc
}

// splitFields splits a line at commas, tabs and spaces; nil for a blank or comment line.
func splitFields(line string) []string {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' || line[0] == '%' {
		return nil
	}
	fields := strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == '\t' || r == ' ' || r == ';' })
	for i, f := range fields {
		fields[i] = strings.Trim(f, `"'`)
	}
	return fields
}
