package embedding

import "slices"

// The table's residency, for views of it (the FUSE mount's embeddings/): which pages the host
// cache holds now.

// CachedPages appends the indexes of the pages the host cache holds now to dst, ascending, and
// returns them with how many are dirty. A closed table holds none.
func (t *Table) CachedPages(dst []int64) ([]int64, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return dst, 0
	}
	var dirty int64
	start := len(dst)
	for _, f := range t.c.frames {
		if f.page >= 0 {
			dst = append(dst, f.page)
			if f.dirty {
				dirty++
			}
		}
	}
	slices.Sort(dst[start:])
	return dst, dirty
}

// RowCached reports whether the host cache holds the page of row id now.
func (t *Table) RowCached(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || id < 0 || id >= t.m.Spec.Rows {
		return false
	}
	_, ok := t.c.where[id/int64(t.l.rowsPerPage)]
	return ok
}

// Dir is the table's directory.
func (t *Table) Dir() string { return t.dir }
