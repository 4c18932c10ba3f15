package embedding

import (
	"cmp"
	"fmt"
	"slices"
)

// checkIDs refuses an id out of range, or (unique) one given twice.
func (t *Table) checkIDs(what string, ids []int64, unique bool) error {
	for i, id := range ids {
		if id < 0 || id >= t.l.rows {
			return &argError{ErrIDOutOfRange, fmt.Sprintf("embedding: %s: ids[%d] = %d is out of range [0, %d)", what, i, id, t.l.rows)}
		}
	}
	if !unique || len(ids) < 2 {
		return nil
	}
	seen := make(map[int64]int, len(ids))
	for i, id := range ids {
		if j, ok := seen[id]; ok {
			return invalid("embedding: %s: ids[%d] and ids[%d] are both %d: %s takes a coalesced gradient, each id once (torch's coalesce sums duplicates)", what, j, i, id, t.m.Spec.Optimizer.Name)
		}
		seen[id] = i
	}
	return nil
}

func checkLen(what, name string, got, ids, width int) error {
	if got != ids*width {
		return invalid("embedding: %s: %s has %d floats, want %d ids × %d", what, name, got, ids, width)
	}
	return nil
}

// Gather copies the parameter rows of ids into out (len(ids) × Dim).
func (t *Table) Gather(ids []int64, out []float32) error {
	return t.rows("Gather", "out", ids, out, t.l.dim, false)
}

// ReadSlots copies whole slots (parameter, then the optimizer state) of ids into out
// (len(ids) × SlotFloats): what a front end that steps the optimizer itself reads.
func (t *Table) ReadSlots(ids []int64, out []float32) error {
	return t.rows("ReadSlots", "out", ids, out, t.l.slotFloats, false)
}

// Write sets the parameter rows of ids from rows (len(ids) × Dim), in order (a later duplicate
// wins); the optimizer state is left as it is.
func (t *Table) Write(ids []int64, rows []float32) error {
	return t.rows("Write", "rows", ids, rows, t.l.dim, true)
}

// WriteSlots sets whole slots of ids (each once) from slots (len(ids) × SlotFloats) and the
// step count to step (at least the table's): a front end's optimizer step written back.
func (t *Table) WriteSlots(ids []int64, slots []float32, step int64) error {
	if err := t.enter(); err != nil {
		return err
	}
	defer t.mu.Unlock()
	if step < t.m.Step {
		return invalid("embedding: WriteSlots: step %d is below the table's %d", step, t.m.Step)
	}
	if err := t.checkIDs("WriteSlots", ids, true); err != nil {
		return err
	}
	if err := checkLen("WriteSlots", "slots", len(slots), len(ids), t.l.slotFloats); err != nil {
		return err
	}
	t.m.Step = step
	return t.fail(t.each(ids, true, func(i int, s []float32) { copy(s, slots[i*len(s):(i+1)*len(s)]) }))
}

// rows copies width floats of each id's slot out of the table into buf (or, write, from buf
// into the table); what and name name the call and buf in errors.
func (t *Table) rows(what, name string, ids []int64, buf []float32, width int, write bool) error {
	if err := t.enter(); err != nil {
		return err
	}
	defer t.mu.Unlock()
	if err := t.checkIDs(what, ids, false); err != nil {
		return err
	}
	if err := checkLen(what, name, len(buf), len(ids), width); err != nil {
		return err
	}
	err := t.each(ids, write, func(i int, s []float32) {
		if write {
			copy(s[:width], buf[i*width:(i+1)*width])
		} else {
			copy(buf[i*width:(i+1)*width], s[:width])
		}
	})
	if write {
		return t.fail(err)
	}
	return err
}

// each calls fn with each id's slot in the cache; dirty marks the pages written. The ids are
// visited by page (a stable sort: ids of one page, repeats included, keep their order), their
// pages loaded a cache-full at a time, so a call reads each distinct page once however small the
// cache, with its reads and write-backs in flight together.
func (t *Table) each(ids []int64, dirty bool, fn func(i int, slot []float32)) error {
	per := int64(t.l.rowsPerPage)
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ids[a]/per, ids[b]/per) })
	group := len(t.c.frames)
	var pages []int64
	for start := 0; start < len(order); {
		pages = pages[:0]
		end := start
		for ; end < len(order); end++ {
			p := ids[order[end]] / per
			if len(pages) == 0 || pages[len(pages)-1] != p {
				if len(pages) == group {
					break
				}
				pages = append(pages, p)
			}
		}
		bufs, err := t.c.load(pages, dirty)
		if err != nil {
			return err
		}
		k := 0
		for _, i := range order[start:end] {
			for ids[i]/per != pages[k] {
				k++
			}
			fn(i, t.l.slot(bufs[k], ids[i]))
		}
		start = end
	}
	return nil
}

// Apply takes one optimizer step over the batch: grads (len(ids) × Dim) is the gradient of the
// rows of ids, uncoalesced for sgd (duplicates applied in order, as torch does), coalesced for
// adagrad and adam (each id once). The step count goes up by one.
func (t *Table) Apply(ids []int64, grads []float32) error {
	if err := t.enter(); err != nil {
		return err
	}
	defer t.mu.Unlock()
	o := t.m.Spec.Optimizer
	if err := t.checkIDs("Apply", ids, o.Name != "sgd"); err != nil {
		return err
	}
	if err := checkLen("Apply", "grads", len(grads), len(ids), t.l.dim); err != nil {
		return err
	}
	t.m.Step++
	step := newStepper(o, t.m.Step, t.l.dim)
	d := t.l.dim
	return t.fail(t.each(ids, true, func(i int, s []float32) { step(s, grads[i*d:(i+1)*d]) }))
}
