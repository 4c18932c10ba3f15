package featurestore

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/gpuio"
)

// loadLabels holds each node type's labels in memory (8 bytes per node) when they fit the
// topology budget; otherwise Labels reads the blocks it needs from disk per call. Either way a
// label that its num_classes does not hold is ErrCorrupt (dataset.CheckLabels): at open, or in
// the call that reads it.
func (ss *Session) loadLabels() error {
	ss.nodes = make([]nodeState, len(ss.m.NodeTypes))
	for i := range ss.m.NodeTypes {
		nt := &ss.m.NodeTypes[i]
		ss.nodes[i].spec = nt
		l, n := nt.Labels, nt.Count
		if l == nil || n == 0 || ss.opt.TopologyMemoryBytes < 0 || 8*n > ss.opt.TopologyMemoryBytes {
			continue
		}
		labels := make([]int64, n)
		if err := ss.readFile(l.File, dataset.BytesOf(labels)); err != nil {
			return err
		}
		if err := l.CheckLabels(0, labels); err != nil {
			return ss.badLabels(i, err)
		}
		ss.nodes[i].labels = labels
	}
	return nil
}

// labelsOf is Labels of node type nt; checkIDs checks ids once the call's shape is known good.
func (ss *Session) labelsOf(nt int, ids []int64, out []int64, checkIDs func([]int64) error) error {
	l := ss.nodes[nt].spec.Labels
	if l == nil {
		return fmt.Errorf("featurestore: dataset %s has no labels%s: %w", ss.m.Dir(), ss.ofType(nt), ErrNotFound)
	}
	if len(out) != len(ids) {
		return fmt.Errorf("featurestore: labels of %d ids need %d outputs, got %d", len(ids), len(ids), len(out))
	}
	if err := checkIDs(ids); err != nil {
		return err
	}
	if labels := ss.nodes[nt].labels; labels != nil {
		for i, id := range ids {
			out[i] = labels[id]
		}
		return nil
	}
	if err := ss.readArray(l.File, ids, dataset.BytesOf(out)); err != nil {
		return err
	}
	for i, id := range ids {
		if err := l.CheckLabels(id, out[i:i+1]); err != nil {
			return ss.badLabels(nt, err)
		}
	}
	return nil
}

// badLabels is the error for labels of node type nt that its num_classes does not hold (err
// names the node): corruption, as a manifest edited after it was written.
func (ss *Session) badLabels(nt int, err error) error {
	return fmt.Errorf("featurestore: dataset %s: labels %s%s: %w: %w", ss.m.Dir(), ss.nodes[nt].spec.Labels.File, ss.ofType(nt), err, dataset.ErrCorrupt)
}

// ofType is " of node type NAME" in a dataset of several node types, "" in a one-type one.
func (ss *Session) ofType(nt int) string {
	if len(ss.m.NodeTypes) == 1 {
		return ""
	}
	return fmt.Sprintf(" of node type %q", ss.m.NodeTypes[nt].Name)
}

// readSplit is ReadSplit of node type nt.
func (ss *Session) readSplit(nt int, name string, out []int64) (int64, error) {
	sp, ok := ss.nodes[nt].spec.Splits[name]
	if !ok {
		return 0, fmt.Errorf("featurestore: dataset %s has no split %q%s (it has %v): %w", ss.m.Dir(), name, ss.ofType(nt), ss.splitNames(nt), ErrNotFound)
	}
	if k := min(int64(len(out)), sp.Count); k > 0 {
		if err := ss.readFile(sp.File, dataset.BytesOf(out[:k])); err != nil {
			return 0, fmt.Errorf("featurestore: split %q: %w", name, err)
		}
	}
	return sp.Count, nil
}

// splitNames lists the splits of node type nt.
func (ss *Session) splitNames(nt int) []string {
	return slices.Sorted(maps.Keys(ss.nodes[nt].spec.Splits))
}

// readArray reads the 8-byte entries at positions ids of an array file of the dataset into out
// through the IO stacks.
func (ss *Session) readArray(file string, ids []int64, out []byte) error {
	leave, err := ss.enter()
	if err != nil {
		return err
	}
	defer leave()
	idx := ss.files.Index(file)
	if idx < 0 {
		return fmt.Errorf("featurestore: %s is not a file this store reads", file)
	}
	reqs := make([]gpuio.Request, len(ids))
	for i, id := range ids {
		reqs[i] = gpuio.Request{File: idx, Offset: 8 * id, Length: 8, Dst: out[8*i : 8*i+8]}
	}
	if err := ss.files.Read(reqs); err != nil {
		return fmt.Errorf("featurestore: read %s: %w", file, err)
	}
	return nil
}
