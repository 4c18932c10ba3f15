package placement

import (
	"path/filepath"
)

// Saved returns the inputs of the placement saved in dir (its profile's fanouts and batch size,
// its plan's budget and policy) without checking that it still applies; Load with these inputs,
// or with some of them changed, does that. A missing file gives an error wrapping
// os.ErrNotExist; a damaged one an error wrapping dataset.ErrCorrupt that names the file.
func Saved(dir string) (Inputs, error) {
	path := filepath.Join(dir, FileName)
	data, err := readFile(dir)
	if err != nil {
		return Inputs{}, err
	}
	h, p, _, err := decode(data)
	if err != nil {
		return Inputs{}, &corruptError{path, err}
	}
	return InputsOf(h, p), nil
}
