package ingest

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	pathpkg "path"
	"path/filepath"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/internal/wfs"
)

// File names of labels and splits inside a dataset directory.
const labelsFile = "labels.bin"

// splitNames are the splits Ingest looks for (<name>.npy) and writes (<name>.ids).
var splitNames = []string{"train", "val", "test"}

// int64Writer streams little-endian int64s to a file.
type int64Writer struct {
	path string
	f    wfs.File
	b    *bufio.Writer
	n    int64
	buf  [8]byte
}

func createInt64s(fsys wfs.FS, path string) (*int64Writer, error) {
	f, err := wfs.Create(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	return &int64Writer{path: path, f: f, b: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (w *int64Writer) put(v int64) error {
	binary.LittleEndian.PutUint64(w.buf[:], uint64(v))
	w.n++
	if _, err := w.b.Write(w.buf[:]); err != nil {
		return fmt.Errorf("ingest: write %s: %w", w.path, err)
	}
	return nil
}

// close flushes and closes; it reports the first write error.
func (w *int64Writer) close() error {
	if err := cmp.Or(w.b.Flush(), w.f.Close()); err != nil {
		return fmt.Errorf("ingest: write %s: %w", w.path, err)
	}
	return nil
}

// openLabels checks a labels file: a 1-D integer .npy; it returns the number of labels.
func openLabels(path string) (int64, error) {
	a, err := OpenNpy(path)
	if err != nil {
		return 0, fmt.Errorf("ingest: labels: %w", unwrapIngest(err))
	}
	defer a.Close()
	if a.Kind != 'i' && a.Kind != 'u' {
		return 0, fmt.Errorf("ingest: labels file %s has dtype %s; want integer class ids", path, a.Descr)
	}
	if len(a.Shape) != 1 {
		return 0, fmt.Errorf("ingest: labels file %s has shape %s; want 1-D (one label per node)", path, shapeString(a.Shape))
	}
	return a.Shape[0], nil
}

// intChunks streams the integer elements of a .npy file as int64s, in chunks.
func intChunks(a *Npy, fn func(first int64, vals []int64) error) error {
	const chunk = 1 << 16
	n := a.Len()
	raw := make([]byte, min(chunk, n)*int64(a.ItemSize)) // a chunk, or every entry of a small file
	vals := make([]int64, min(chunk, n))
	data := a.Data()
	for first := int64(0); first < n; first += chunk {
		k := min(chunk, n-first)
		if _, err := io.ReadFull(data, raw[:k*int64(a.ItemSize)]); err != nil {
			return readErr(a.Path, err)
		}
		if bad := decodeInts(vals[:k], raw[:k*int64(a.ItemSize)], a.Kind, a.ItemSize); bad >= 0 {
			return fmt.Errorf("ingest: %s: entry %d = %d does not fit in int64", a.Path, first+int64(bad), binary.LittleEndian.Uint64(raw[8*bad:]))
		}
		if err := fn(first, vals[:k]); err != nil {
			return err
		}
	}
	return nil
}

// writeLabels copies the labels of path into dir/typeDir/labels.bin and returns the label spec;
// numNodes is the expected count. -1 marks an unlabelled node; smaller values are errors.
func writeLabels(fsys wfs.FS, dir, typeDir, path string, numNodes int64, progress func(string, int64, int64)) (*dataset.LabelSpec, error) {
	a, err := OpenNpy(path)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	if len(a.Shape) != 1 || a.Shape[0] != numNodes {
		return nil, fmt.Errorf("ingest: labels file %s has shape %s; want (%d,), one label per node", path, shapeString(a.Shape), numNodes)
	}
	file := pathpkg.Join(typeDir, labelsFile)
	w, err := createInt64s(fsys, filepath.Join(dir, file))
	if err != nil {
		return nil, err
	}
	maxLabel := int64(-1)
	err = intChunks(a, func(first int64, vals []int64) error {
		for i, v := range vals {
			if v < -1 {
				return fmt.Errorf("ingest: labels file %s: node %d has label %d; labels are class ids >= 0, or -1 for unlabelled", path, first+int64(i), v)
			}
			maxLabel = max(maxLabel, v)
			if err := w.put(v); err != nil {
				return err
			}
		}
		report(progress, "labels", first+int64(len(vals)), numNodes)
		return nil
	})
	if cerr := w.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return &dataset.LabelSpec{ArraySpec: dataset.ArraySpec{File: file, DType: dataset.Int64}, NumClasses: maxLabel + 1}, nil
}

// splitInput is one split file found by splitInputs.
type splitInput struct {
	path   string
	mask   bool  // a bool mask, else node ids
	length int64 // entries
}

// splitInputs lists the split files present in dir (train.npy, val.npy, test.npy), checking
// each one's header: a 1-D integer array of node ids or a 1-D bool mask.
func splitInputs(dir string) (map[string]splitInput, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("ingest: splits: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("ingest: splits: %s is not a directory", dir)
	}
	found := map[string]splitInput{}
	for _, name := range splitNames {
		p := filepath.Join(dir, name+".npy")
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			continue
		}
		a, err := OpenNpy(p)
		if err != nil {
			return nil, fmt.Errorf("ingest: splits: %w", unwrapIngest(err))
		}
		a.Close()
		if a.Kind != 'i' && a.Kind != 'u' && a.Kind != 'b' {
			return nil, fmt.Errorf("ingest: split file %s has dtype %s; want integer node ids or a bool mask", p, a.Descr)
		}
		if len(a.Shape) != 1 {
			return nil, fmt.Errorf("ingest: split file %s has shape %s; want 1-D node ids or a 1-D bool mask", p, shapeString(a.Shape))
		}
		found[name] = splitInput{path: p, mask: a.Kind == 'b', length: a.Shape[0]}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("ingest: splits directory %s has none of train.npy, val.npy, test.npy", dir)
	}
	return found, nil
}

// writeSplit copies one split (ids or a mask of numNodes bools) into dir/typeDir/<name>.ids.
func writeSplit(fsys wfs.FS, dir, typeDir, name string, in splitInput, numNodes int64, progress func(string, int64, int64)) (dataset.IDsSpec, error) {
	path := in.path
	if err := in.checkMask(numNodes); err != nil {
		return dataset.IDsSpec{}, err
	}
	a, err := OpenNpy(path)
	if err != nil {
		return dataset.IDsSpec{}, err
	}
	defer a.Close()
	file := pathpkg.Join(typeDir, name+".ids")
	w, err := createInt64s(fsys, filepath.Join(dir, file))
	if err != nil {
		return dataset.IDsSpec{}, err
	}
	stage := "splits: " + name
	if a.Kind == 'b' {
		if a.Len() != numNodes {
			w.close()
			return dataset.IDsSpec{}, fmt.Errorf("ingest: split file %s changed while being read", path)
		}
		buf := make([]byte, 1<<20)
		data := a.Data()
		for first := int64(0); first < numNodes && err == nil; first += int64(len(buf)) {
			k := min(int64(len(buf)), numNodes-first)
			if _, rerr := io.ReadFull(data, buf[:k]); rerr != nil {
				err = readErr(path, rerr)
				break
			}
			for i, b := range buf[:k] {
				if b != 0 {
					if err = w.put(first + int64(i)); err != nil {
						break
					}
				}
			}
			report(progress, stage, first+k, numNodes)
		}
	} else {
		err = intChunks(a, func(first int64, vals []int64) error {
			for i, v := range vals {
				if v < 0 || v >= numNodes {
					return fmt.Errorf("ingest: split file %s: entry %d is node id %d, outside the %d nodes [0, %d)", path, first+int64(i), v, numNodes, numNodes)
				}
				if err := w.put(v); err != nil {
					return err
				}
			}
			report(progress, stage, first+int64(len(vals)), a.Len())
			return nil
		})
	}
	if cerr := w.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return dataset.IDsSpec{}, err
	}
	return dataset.IDsSpec{ArraySpec: dataset.ArraySpec{File: file, DType: dataset.Int64}, Count: w.n}, nil
}

// checkMask fails when the split is a mask of other than numNodes entries.
func (in splitInput) checkMask(numNodes int64) error {
	if in.mask && in.length != numNodes {
		return fmt.Errorf("ingest: split file %s is a bool mask of %d entries; want one per node (%d)", in.path, in.length, numNodes)
	}
	return nil
}
