package dataset

import (
	"errors"
	"fmt"
	"strings"
)

// MaxTypeNameBytes bounds node type names and relation names.
const MaxTypeNameBytes = 255

// ErrTypeNotFound is wrapped by NodeTypeNamed's and EdgeTypeNamed's errors for a type the
// dataset lacks.
var ErrTypeNotFound = errors.New("type not found")

// CheckTypeName refuses a name that cannot name a node type or relation: empty, over
// MaxTypeNameBytes bytes, "." or "..", or holding ':', '/' or NUL (what names an edge type,
// "src:rel:dst", and the dataset's per-type directories need). what names it in the error.
func CheckTypeName(what, name string) error {
	switch {
	case name == "" || len(name) > MaxTypeNameBytes:
		return fmt.Errorf("%s name %q: want 1 to %d bytes", what, name, MaxTypeNameBytes)
	case name == "." || name == "..":
		return fmt.Errorf("%s name %q is not allowed", what, name)
	case strings.ContainsAny(name, ":/\x00"):
		return fmt.Errorf("%s name %q holds ':', '/' or NUL, which type names may not", what, name)
	}
	return nil
}

// EdgeTypeKey is the one-string form of the edge type (src, rel, dst): "src:rel:dst".
func EdgeTypeKey(src, rel, dst string) string { return src + ":" + rel + ":" + dst }

// Key is the edge type's one-string form, "src:rel:dst".
func (et *EdgeType) Key() string { return EdgeTypeKey(et.Src, et.Rel, et.Dst) }

// ParseEdgeTypeKey splits "src:rel:dst" into its three names, each checked by CheckTypeName.
func ParseEdgeTypeKey(s string) (src, rel, dst string, err error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("edge type %q: want src:rel:dst (three names joined by ':')", s)
	}
	for i, what := range []string{"source node type", "relation", "destination node type"} {
		if err := CheckTypeName(what, parts[i]); err != nil {
			return "", "", "", fmt.Errorf("edge type %q: %w", s, err)
		}
	}
	return parts[0], parts[1], parts[2], nil
}

// NodeTypeNamed returns the node type name; the error (wrapping ErrTypeNotFound) lists the
// node types the dataset has.
func (m *Manifest) NodeTypeNamed(name string) (*NodeType, error) {
	for i := range m.NodeTypes {
		if m.NodeTypes[i].Name == name {
			return &m.NodeTypes[i], nil
		}
	}
	names := make([]string, len(m.NodeTypes))
	for i, nt := range m.NodeTypes {
		names[i] = nt.Name
	}
	return nil, fmt.Errorf("dataset %s has no node type %q (node types: %s): %w", m.dir, name, listOrNone(names), ErrTypeNotFound)
}

// EdgeTypeNamed returns the edge type of key "src:rel:dst"; the error (wrapping
// ErrTypeNotFound) lists the edge types the dataset has.
func (m *Manifest) EdgeTypeNamed(key string) (*EdgeType, error) {
	for i := range m.EdgeTypes {
		if m.EdgeTypes[i].Key() == key {
			return &m.EdgeTypes[i], nil
		}
	}
	keys := make([]string, len(m.EdgeTypes))
	for i := range m.EdgeTypes {
		keys[i] = m.EdgeTypes[i].Key()
	}
	return nil, fmt.Errorf("dataset %s has no edge type %q (edge types: %s): %w", m.dir, key, listOrNone(keys), ErrTypeNotFound)
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// NodeTypeDir and EdgeTypeDir are the directories, inside a dataset directory, that hold the
// files of one type of a version 5 dataset: nodes/<name>/ and edges/<src>/<rel>/<dst>/. Type
// names hold no '/' and are not "." or "..", so no two types share one. A one-type dataset keeps
// its files at the top level.
func NodeTypeDir(name string) string { return "nodes/" + name }

// EdgeTypeDir: see NodeTypeDir.
func EdgeTypeDir(src, rel, dst string) string { return "edges/" + src + "/" + rel + "/" + dst }
