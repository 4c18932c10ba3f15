package featurestore

import (
	"fmt"
	"slices"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
)

// NumClasses is the number of label classes, or 0 when the dataset has no labels.
func (s *Store) NumClasses() int64 {
	if l := s.m.Nodes().Labels; l != nil {
		return l.NumClasses
	}
	return 0
}

// loadLabels holds the labels in memory (8 bytes per node) when they fit the topology budget;
// otherwise Labels reads the blocks it needs from disk per call.
func (s *Store) loadLabels() error {
	l := s.m.Nodes().Labels
	n := s.NumNodes()
	if l == nil || n == 0 || s.opt.TopologyMemoryBytes < 0 || 8*n > s.opt.TopologyMemoryBytes {
		return nil
	}
	labels := make([]int64, n)
	if err := s.readFile(l.File, dataset.BytesOf(labels)); err != nil {
		return err
	}
	s.labels = labels
	return nil
}

// Labels sets out[i] to the label of ids[i] (-1 where unlabelled), reading only the blocks
// those labels are in. len(out) == len(ids).
func (s *Store) Labels(ids []int64, out []int64) error {
	leave, err := s.enter()
	if err != nil {
		return err
	}
	defer leave()
	l := s.m.Nodes().Labels
	if l == nil {
		return fmt.Errorf("featurestore: dataset %s has no labels: %w", s.m.Dir(), ErrNotFound)
	}
	if len(out) != len(ids) {
		return fmt.Errorf("featurestore: labels of %d ids need %d outputs, got %d", len(ids), len(ids), len(out))
	}
	if err := s.checkIDs(ids); err != nil {
		return err
	}
	if s.labels != nil {
		for i, id := range ids {
			out[i] = s.labels[id]
		}
		return nil
	}
	return s.readArray(l.File, ids, dataset.BytesOf(out))
}

// Split returns the node ids of a split ("train", "val", "test").
func (s *Store) Split(name string) ([]int64, error) {
	n, err := s.ReadSplit(name, nil)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, n)
	if _, err := s.ReadSplit(name, ids); err != nil {
		return nil, err
	}
	return ids, nil
}

// ReadSplit copies the first min(len(out), size) node ids of the split name into out and returns
// the split's size; it reads only the ids it copies, so an empty out asks the size. A split the
// dataset lacks is ErrNotFound.
func (s *Store) ReadSplit(name string, out []int64) (int64, error) {
	leave, err := s.enter()
	if err != nil {
		return 0, err
	}
	defer leave()
	sp, ok := s.m.Nodes().Splits[name]
	if !ok {
		return 0, fmt.Errorf("featurestore: dataset %s has no split %q (it has %v): %w", s.m.Dir(), name, s.SplitNames(), ErrNotFound)
	}
	if k := min(int64(len(out)), sp.Count); k > 0 {
		if err := s.readFile(sp.File, dataset.BytesOf(out[:k])); err != nil {
			return 0, fmt.Errorf("featurestore: split %q: %w", name, err)
		}
	}
	return sp.Count, nil
}

// SplitNames lists the dataset's splits.
func (s *Store) SplitNames() []string {
	var names []string
	for n := range s.m.Nodes().Splits {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// readArray reads the 8-byte entries at positions ids of an array file of the dataset into out
// through the IO stacks.
func (s *Store) readArray(file string, ids []int64, out []byte) error {
	leave, err := s.enter()
	if err != nil {
		return err
	}
	defer leave()
	idx := s.files.Index(file)
	if idx < 0 {
		return fmt.Errorf("featurestore: %s is not a file this store reads", file)
	}
	reqs := make([]gpuio.Request, len(ids))
	for i, id := range ids {
		reqs[i] = gpuio.Request{File: idx, Offset: 8 * id, Length: 8, Dst: out[8*i : 8*i+8]}
	}
	if err := s.read(reqs); err != nil {
		return fmt.Errorf("featurestore: read %s: %w", file, err)
	}
	return nil
}
