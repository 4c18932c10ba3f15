package dataset

import (
	"fmt"
	"os"
)

// CheckLabels checks labels, the labels of nodes first, first+1, ... of a node type whose labels
// l describes: each is a class id below l.NumClasses or -1 (unlabelled). Its error names the
// first node that holds neither, and its label; the caller says whose labels they are.
func (l *LabelSpec) CheckLabels(first int64, labels []int64) error {
	for i, v := range labels {
		if v < -1 || v >= l.NumClasses {
			return fmt.Errorf("node %d has label %d, neither a class id below num_classes %d nor -1 (unlabelled)", first+int64(i), v, l.NumClasses)
		}
	}
	return nil
}

// checkLabelFile reads the labels of node type nt from its file and checks them (CheckLabels):
// Commit refuses labels its num_classes does not hold, and Verify reports them. A file that does
// not open or read is left to the checksums (Verify names it).
func (m *Manifest) checkLabelFile(nt *NodeType) error {
	l := nt.Labels
	fd, _, err := m.OpenFD(l.File, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), m.Path(l.File))
	defer f.Close()
	buf := make([]int64, min(1<<17, nt.Count))
	for first := int64(0); first < nt.Count; first += int64(len(buf)) {
		chunk := buf[:min(int64(len(buf)), nt.Count-first)]
		if _, err := f.ReadAt(BytesOf(chunk), 8*first); err != nil {
			return nil
		}
		if err := l.CheckLabels(first, chunk); err != nil {
			return err
		}
	}
	return nil
}

// labelProblems checks the labels of every node type (checkLabelFile): one problem for each
// labels file holding a label its num_classes does not.
func (m *Manifest) labelProblems() []Problem {
	var problems []Problem
	for i := range m.NodeTypes {
		if nt := &m.NodeTypes[i]; nt.Labels != nil {
			if err := m.checkLabelFile(nt); err != nil {
				problems = append(problems, Problem{nt.Labels.File, -1, err.Error()})
			}
		}
	}
	return problems
}
