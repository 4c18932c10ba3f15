// Package dataset is tierfs's on-disk dataset format: a directory holding manifest.json, raw
// little-endian array files and one xxhash64 checksum sidecar per file.
//
// Invariants of a valid dataset (format versions 1 to 9):
//   - manifest.json is written last, by rename after fsync; a directory without it is no dataset;
//   - every data file the dataset owns is padded with zeros to a multiple of BlockSize, so every
//     O_DIRECT read of whole blocks stays inside the file;
//   - every BlockSize block of every data file has its xxhash64 in the file's sidecar
//     (<file>.xxh64, little-endian uint64s), and the manifest holds the xxhash64 of each sidecar;
//   - feature rows never straddle a block when a row fits in one (RowsPerBlock > 0), so a row
//     costs one block read — except in an in-place feature.
//
// An in-place feature (version 4, FeatureSpec.InPlace) is the user's own row-packed .npy file,
// named by its absolute path and read where it is: rows start at DataOffset (the .npy header's
// length, no block multiple), lie back to back and may straddle blocks, and the file's last
// block is partial (its checksum covers the bytes there are). The manifest records the file's
// size and modification time (File.InPlace, MTimeNS); OpenFD refuses a file that no longer has
// them, and nothing in tierfs writes, moves or removes it (it is not the dataset's: its sidecar
// lives in the dataset directory).
//
// Versions 1 to 4 hold one node type and at most one edge type. Version 2 added the manifest
// hash and one role per file; version 3 edge features and scalar features (one value a row,
// gathered as a 1-D array); version 4 in-place features; version 5 several node types and edge
// types (a heterogeneous graph); version 6 edge splits (EdgeSplit: seed edges of link prediction
// per split, with labels and negatives); version 7 checksums bound to their place (bind.go: a
// block's checksum covers its file's role and its index, keyed by a random DatasetID); version 8
// a dataset of one node type whose types its maker named (Typed: a one-type HeteroData or
// GraphBolt dataset); version 9 checksums bound to how their file is read too (its layout: the
// dtype, dims, counts and num_classes the manifest reads it by), so an edit of one with the
// manifest's hash recomputed is corruption at Load; a version 9 manifest may also give a
// feature's row shape (bound with its layout), metadata and sampling_graph mark, the task's
// metadata, the dataset's name, and a one-type dataset's node and edge feature one name
// (docs/format.md). Commit
// writes version 9, typed or not. Older versions are read as they are — Load holds a manifest
// of one to what such a dataset is (its sidecars unbound, or bound to place alone), so a newer
// dataset's manifest edited down is corruption; their layouts cannot be bound and are trusted as
// given — and Upgrade rewrites them to version 9 in place (`tierfs upgrade`). Labels are class ids below num_classes or -1
// (unlabelled): Commit refuses others, Verify reports them, a store refuses them at open.
//
// A dataset is typed (IsTyped) when its types are the maker's: several node or edge types, or
// one of each marked Typed. Front ends present a typed dataset by its type names (PyG's
// HeteroData, GraphBolt's typed keys) and an untyped one as a homogeneous graph (PyG's Data).
//
// Types (version 5): a node type is a name, an edge type the triple (src, rel, dst) of node type
// names and a relation, written "src:rel:dst" (EdgeType.Key); names follow CheckTypeName. Node
// type names are unique, every node type has at least one node, edge types are unique by their
// key and join node types of the manifest. Ids are per type: the topology of (src, rel, dst) is
// CSC over the dst nodes (indptr of count(dst)+1 entries) whose indices are src ids; every
// feature has its type's count rows, and feature names are unique within a type (from version 9
// in a one-type dataset too: its node and edge feature may share a name, a node feature's where
// a name stands alone, as AnyFeature; before, unique across both). The files of a
// type lie in its own directory (NodeTypeDir, EdgeTypeDir) and are listed, checksummed and
// verified like every other; a one-type dataset keeps its files at the top level.
package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tierfs/tierfs/internal/strictjson"
	"github.com/tierfs/tierfs/internal/wfs"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// FormatName is the "format" field of every manifest.
const FormatName = "tierfs-dataset"

// Version is the newest format version this package reads and writes.
const Version = 9

// ManifestName is the manifest's file name inside a dataset directory.
const ManifestName = "manifest.json"

// ChecksumSuffix is appended to a data file's path to name its checksum sidecar.
const ChecksumSuffix = ".xxh64"

// DefaultBlockSize is the block size new datasets use: the O_DIRECT alignment of every read.
const DefaultBlockSize = 4096

// Manifest describes a dataset. Paths in it are relative to the dataset directory and stay inside
// it; only feature stripes on other devices (and their sidecars, <stripe>.xxh64) may be absolute.
// Every file is opened through OpenFD, which refuses anything but a regular file.
type Manifest struct {
	Format    string     `json:"format"`
	Version   int        `json:"version"`
	BlockSize int        `json:"block_size"`
	Checksum  string     `json:"checksum"` // "xxhash64", one per block
	NodeTypes []NodeType `json:"node_types"`
	EdgeTypes []EdgeType `json:"edge_types"`
	Files     []File     `json:"files"`
	Created   Created    `json:"created"`
	// ManifestHash is xxhash64 of the manifest's content (its canonical JSON with this field
	// empty), written by Commit: an edit that changes any value is caught by Parse. Version 2
	// manifests must have it; version 1 manifests (older writers) have none and are read as they
	// are.
	ManifestHash string `json:"manifest_hash,omitempty"`
	// DatasetID is random per dataset (version 7, set by Commit): with each file's role it keys
	// the binding of its checksums to their place (bind.go).
	DatasetID string `json:"dataset_id,omitempty"`
	// Typed (version 8) marks a dataset of one node type and at most one edge type whose types
	// were named by its maker (a HeteroData, a GraphBolt dataset with types, an ingest spec): it
	// is a typed dataset of one type, not a homogeneous graph. A dataset of several types is typed
	// without it, and never sets it.
	Typed bool `json:"typed,omitempty"`
	// TaskMetadata (version 9, optional) is the metadata of the task whose splits the dataset
	// holds, as its maker gave it (GraphBolt's task: its name, num_classes, a user's keys); tierfs
	// does not read it.
	TaskMetadata map[string]json.RawMessage `json:"task_metadata,omitempty"`
	// DatasetName (version 9, optional) is the name its maker gave the dataset (GraphBolt's
	// metadata.yaml dataset_name), given back as it came; tierfs does not read it, and a dataset
	// without one is known by its directory's name.
	DatasetName string `json:"dataset_name,omitempty"`

	dir string // directory the manifest was loaded from or will be saved to
	fs  wfs.FS // what its files are written through (nil: the operating system's)
}

// fsys is what m's files are written through.
func (m *Manifest) fsys() wfs.FS { return wfs.Or(m.fs) }

// contentHash is the ManifestHash of m's content.
func (m *Manifest) contentHash() (string, error) {
	c := *m
	c.ManifestHash = ""
	data, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	return hashHex(data), nil
}

// NodeType is one kind of node: its count, features, labels and splits.
type NodeType struct {
	Name     string             `json:"name"`
	Count    int64              `json:"count"`
	Features []FeatureSpec      `json:"features,omitempty"`
	Labels   *LabelSpec         `json:"labels,omitempty"`
	Splits   map[string]IDsSpec `json:"splits,omitempty"` // "train", "val", "test" → node ids
}

// EdgeType is one kind of edge, stored as CSC: for each destination node its source nodes. An
// edge's id is its position in the CSC (Indices), the id samplers report; row e of an edge
// feature belongs to edge id e.
type EdgeType struct {
	Src     string    `json:"src"`
	Rel     string    `json:"rel"`
	Dst     string    `json:"dst"`
	Count   int64     `json:"count"`
	Layout  string    `json:"layout"`  // "csc"
	Indptr  ArraySpec `json:"indptr"`  // int64, Count(dst)+1 entries
	Indices ArraySpec `json:"indices"` // int32 or int64, Count entries
	// Features are the edge features (version 3), Count rows each, in edge id order.
	Features []FeatureSpec `json:"features,omitempty"`
	// Splits are the seed edges of link prediction (version 6) by split name ("train", "val",
	// "test"; see EdgeSplit).
	Splits map[string]EdgeSplit `json:"splits,omitempty"`
}

// ArraySpec is a flat array in one file.
type ArraySpec struct {
	File  string `json:"file"`
	DType DType  `json:"dtype"`
}

// LabelSpec is one int64 label per node (-1 where unlabelled).
type LabelSpec struct {
	ArraySpec
	NumClasses int64 `json:"num_classes"`
}

// IDsSpec is a list of int64 node ids.
type IDsSpec struct {
	ArraySpec
	Count int64 `json:"count"`
}

// FeatureSpec is a dense [Count, Dim] feature matrix striped over Files. See Locate for the layout.
type FeatureSpec struct {
	Name         string   `json:"name"`
	DType        DType    `json:"dtype"`
	Dim          int64    `json:"dim"`
	RowBytes     int64    `json:"row_bytes"`      // Dim * DType.Size()
	RowsPerBlock int64    `json:"rows_per_block"` // BlockSize / RowBytes when a row fits a block, else 0 (rows packed back to back)
	StripeRows   int64    `json:"stripe_rows"`    // rows per stripe unit; stripe s lives in Files[s % len(Files)]
	Files        []string `json:"files"`
	// Scalar (version 3) marks a feature of one value a row given as a 1-D array (edge
	// weights): Dim is 1 and readers return a 1-D array.
	Scalar bool `json:"scalar,omitempty"`
	// InPlace (version 4) marks a feature read from the user's own file, Files[0] (absolute,
	// a files-list entry with InPlace set): rows packed back to back from byte DataOffset
	// (RowsPerBlock 0), straddling blocks. See the package doc.
	InPlace    bool  `json:"in_place,omitempty"`
	DataOffset int64 `json:"data_offset,omitempty"` // byte offset of row 0 in Files[0]; 0 unless InPlace
	// Shape (version 9, optional) is a row's shape when it has more than one dimension
	// (GraphBolt's (N, a, b) feature): two or more positive sizes whose product is Dim. Rows are
	// stored flat, Dim values each; readers give them this shape. Bound into the checksums with
	// the rest of the layout (bind.go).
	Shape []int64 `json:"shape,omitempty"`
	// Metadata (version 9, optional) is what the feature's maker said of it that tierfs does not
	// read (GraphBolt's feature metadata: num_categories, a user's keys), given back as it came.
	Metadata map[string]json.RawMessage `json:"metadata,omitempty"`
	// SamplingGraph (version 9, optional) marks a feature its maker made an attribute of the
	// graph for sampling (GraphBolt's graph.feature_data): a front end that builds the graph in
	// memory attaches it. tierfs does not read it.
	SamplingGraph bool `json:"sampling_graph,omitempty"`

	blockSize int64
	count     int64
	// inPlaceSize and inPlaceMTimeNS, when set, are what the in-place file must still have when
	// it is checksummed (ExpectInPlaceFile).
	inPlaceSize, inPlaceMTimeNS int64
}

// File is one data file with its checksum sidecar.
type File struct {
	Path          string `json:"path"`
	Bytes         int64  `json:"bytes"`           // size on disk, a multiple of BlockSize (unless InPlace)
	ContentBytes  int64  `json:"content_bytes"`   // bytes before the zero padding (== Bytes when InPlace)
	Checksums     string `json:"checksums"`       // sidecar path
	ChecksumsHash string `json:"checksums_xxh64"` // hex xxhash64 of the sidecar
	// InPlace (version 4) marks the user's file of an in-place feature: not the dataset's, never
	// padded, written or removed; Bytes is its size as checksummed and MTimeNS its modification
	// time (ns since the epoch) then. OpenFD refuses it once either differs.
	InPlace bool  `json:"in_place,omitempty"`
	MTimeNS int64 `json:"mtime_ns,omitempty"`
}

// Blocks is the number of blockSize blocks of f, a partial last block (InPlace files) counted.
func (f *File) Blocks(blockSize int64) int64 { return (f.Bytes + blockSize - 1) / blockSize }

// Created records how a dataset was made.
type Created struct {
	By      string   `json:"by"`
	Args    []string `json:"args,omitempty"`
	Time    string   `json:"time,omitempty"`
	Version string   `json:"tierfs_version,omitempty"`
}

// ErrNotDataset is wrapped by Load's error when the directory has no manifest.
var ErrNotDataset = errors.New("not a tierfs dataset")

// ErrCorrupt is wrapped by every error that reports data not matching its checksum or manifest.
var ErrCorrupt = errors.New("tierfs dataset corrupt")

// ErrVersionTooNew is wrapped by Load's and Parse's error for a manifest of a format version newer
// than this tierfs reads.
var ErrVersionTooNew = errors.New("dataset format version not supported")

// ErrFeatureNotFound is wrapped by Manifest.Feature's error for a feature the dataset lacks.
var ErrFeatureNotFound = errors.New("feature not found")

// IsCorrupt reports whether err reports corrupt data.
func IsCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }

// Load reads and validates dir/manifest.json.
func Load(dir string) (*Manifest, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if lock, pid, ok := writeInProgress(dir); ok {
			return nil, fmt.Errorf("dataset: %s is being written (a write by pid %s holds %s); open it once that write finishes: %w", dir, pid, lock, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("dataset: %s is not a directory: %w", dir, ErrNotDataset)
	}
	data, err := ReadManifest(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("dataset: %s has no %s (a dataset is complete only once its manifest is written): %w", dir, ManifestName, ErrNotDataset)
	}
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("dataset: %s: %w", filepath.Join(dir, ManifestName), err)
	}
	m.dir = dir
	if err := m.checkBinding(); err != nil {
		return nil, err
	}
	return m, nil
}

// Parse decodes and validates a manifest. It never panics, whatever the input. Its errors wrap
// ErrNotDataset (another format), ErrVersionTooNew, or ErrCorrupt (anything else).
func Parse(data []byte) (*Manifest, error) {
	var probe struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("manifest is not valid JSON: %v: %w", err, ErrCorrupt)
	}
	if probe.Format != FormatName {
		return nil, fmt.Errorf("manifest format is %q, want %q: %w", probe.Format, FormatName, ErrNotDataset)
	}
	if probe.Version > Version {
		return nil, fmt.Errorf("manifest version %d is newer than this tierfs reads (up to %d); upgrade tierfs: %w", probe.Version, Version, ErrVersionTooNew)
	}
	if probe.Version < 1 {
		return nil, fmt.Errorf("manifest version %d is not a valid version: %w", probe.Version, ErrCorrupt)
	}
	var m Manifest
	if err := strictjson.Decode(data, &m); err != nil {
		return nil, fmt.Errorf("manifest version %d: %v: %w", probe.Version, err, ErrCorrupt)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrCorrupt)
	}
	if m.ManifestHash == "" && m.Version >= 2 {
		return nil, fmt.Errorf("manifest version %d has no manifest_hash (every version 2 manifest is written with one): %w", m.Version, ErrCorrupt)
	}
	if m.ManifestHash != "" {
		if h, err := m.contentHash(); err != nil || h != m.ManifestHash {
			return nil, fmt.Errorf("manifest content hashes to %s, not the %s it was written with: it was edited after it was written: %w", h, m.ManifestHash, ErrCorrupt)
		}
	}
	return &m, nil
}

// Validate checks the manifest's internal consistency: counts, dtypes, layouts and that every
// referenced file is listed with the size its contents need.
func (m *Manifest) Validate() error {
	if err := m.validateHeader(); err != nil {
		return err
	}
	if m.TaskMetadata != nil && m.Version < VersionBoundLayout {
		return fmt.Errorf("manifest has task_metadata, which format version %d introduced (version %d)", VersionBoundLayout, m.Version)
	}
	if m.DatasetName != "" && m.Version < VersionBoundLayout {
		return fmt.Errorf("manifest has dataset_name %q, which format version %d introduced (version %d)", m.DatasetName, VersionBoundLayout, m.Version)
	}
	v := &validation{m: m, role: map[string]string{}, names: map[string]string{},
		// Several types (version 5 on): names checked, features named per type. Version 7
		// describes one-type datasets too, which keep the one-type rules of versions 1 to 4
		// unless Typed.
		typed: m.Version >= 5 && !(m.Version >= VersionBound && !m.IsTyped())}
	if err := v.listFiles(); err != nil {
		return err
	}
	if err := m.checkPaths(); err != nil {
		return err
	}
	nodeTypes, err := v.nodeTypes()
	if err != nil {
		return err
	}
	edgeTypes := make(map[string]bool, len(m.EdgeTypes))
	for i := range m.EdgeTypes {
		if err := v.edgeType(&m.EdgeTypes[i], nodeTypes, edgeTypes); err != nil {
			return err
		}
	}
	return nil
}

// validateHeader checks the manifest's own fields: block size, checksum, version against what
// the version can hold.
func (m *Manifest) validateHeader() error {
	if m.BlockSize < 512 || m.BlockSize > 1<<20 || m.BlockSize&(m.BlockSize-1) != 0 {
		return fmt.Errorf("manifest block_size %d is not a power of two in [512, 1 MiB]", m.BlockSize)
	}
	if m.Checksum != "xxhash64" {
		return fmt.Errorf("manifest checksum %q is not supported (want xxhash64)", m.Checksum)
	}
	if len(m.NodeTypes) < 1 {
		return fmt.Errorf("manifest has no node type; a dataset has at least one")
	}
	if (m.Version >= VersionBound) != (m.DatasetID != "") {
		return fmt.Errorf("manifest version %d with dataset_id %q: versions from %d bind checksums with a dataset id, older ones have none", m.Version, m.DatasetID, VersionBound)
	}
	if m.Typed && (m.Version < 8 || len(m.NodeTypes) != 1 || len(m.EdgeTypes) > 1) {
		return fmt.Errorf("manifest version %d with %d node types and %d edge types is marked typed; only a dataset of version 8 or later of one node type and at most one edge type is (several types are typed without the mark)", m.Version, len(m.NodeTypes), len(m.EdgeTypes))
	}
	if m.Version < 5 && (len(m.NodeTypes) != 1 || len(m.EdgeTypes) > 1) {
		return fmt.Errorf("manifest has %d node types and %d edge types; format versions 1 to 4 hold exactly one node type and at most one edge type (several need version 5, have %d)", len(m.NodeTypes), len(m.EdgeTypes), m.Version)
	}
	return nil
}

// validation is Validate's state past the header: the files listed, which role refers to each,
// and the feature names seen.
type validation struct {
	m     *Manifest
	typed bool             // the rules of several types (names checked, feature names per type)
	files map[string]*File // by path
	role  map[string]string
	// names: feature name -> "node" or "edge"; one namespace for both before version 9, per type
	// when typed or from version 9.
	names map[string]string
}

// listFiles checks the files list: paths, sizes, in-place marks; each path once.
func (v *validation) listFiles() error {
	m := v.m
	v.files = make(map[string]*File, len(m.Files))
	for i := range m.Files {
		f := &m.Files[i]
		if f.Path == "" || f.Checksums == "" {
			return fmt.Errorf("manifest files[%d] has an empty path or checksums path", i)
		}
		if _, dup := v.files[f.Path]; dup {
			return fmt.Errorf("manifest lists file %q twice", f.Path)
		}
		if f.InPlace {
			if m.Version < 4 || !filepath.IsAbs(f.Path) || f.Bytes < 0 || f.ContentBytes != f.Bytes {
				return fmt.Errorf("manifest file %q: an in-place file needs format version 4 (have %d), an absolute path and content_bytes == bytes (%d, %d)", f.Path, m.Version, f.ContentBytes, f.Bytes)
			}
		} else if f.MTimeNS != 0 || f.Bytes < 0 || f.Bytes%int64(m.BlockSize) != 0 || f.ContentBytes < 0 || f.ContentBytes > f.Bytes || f.Bytes-f.ContentBytes >= int64(m.BlockSize) {
			return fmt.Errorf("manifest file %q: bytes %d / content_bytes %d are not content padded to a multiple of block_size %d", f.Path, f.Bytes, f.ContentBytes, m.BlockSize)
		}
		v.files[f.Path] = f
	}
	return nil
}

// need checks that what refers to a listed file path, no other role refers to it, and it holds
// at least minContent bytes.
func (v *validation) need(what, path string, minContent int64) error {
	f, ok := v.files[path]
	if !ok {
		return fmt.Errorf("manifest %s refers to file %q, which is not in the files list", what, path)
	}
	if other, dup := v.role[path]; dup {
		return fmt.Errorf("manifest %s and %s both refer to file %q", other, what, path)
	}
	v.role[path] = what
	if f.ContentBytes < minContent {
		return fmt.Errorf("manifest %s: file %q holds %d bytes, needs %d", what, path, f.ContentBytes, minContent)
	}
	return nil
}

// features checks list, the features of one type (of names it) of count rows, and their files.
func (v *validation) features(of string, list []FeatureSpec, count int64) error {
	m := v.m
	if v.typed || m.Version >= VersionBoundLayout {
		// Names unique within a type: from version 9 a one-type dataset's node and edge feature
		// may share one (GraphBolt's feat of both); before, one namespace held both.
		clear(v.names)
	}
	for i := range list {
		f := &list[i]
		if f.Name == "" {
			return fmt.Errorf("manifest %s feature %d has no name", of, i)
		}
		if prev, dup := v.names[f.Name]; dup {
			return fmt.Errorf("manifest names two features %q (a %s and an %s feature); feature names must be unique", f.Name, prev, of)
		}
		v.names[f.Name] = of
		if f.Scalar && (f.Dim != 1 || m.Version < 3) {
			return fmt.Errorf("manifest %s feature %q: scalar needs dim 1 and format version 3 (dim %d, version %d)", of, f.Name, f.Dim, m.Version)
		}
		if f.InPlace && m.Version < 4 {
			return fmt.Errorf("manifest %s feature %q is in place, which format version 4 introduced (version %d)", of, f.Name, m.Version)
		}
		if (f.Shape != nil || f.Metadata != nil || f.SamplingGraph) && m.Version < VersionBoundLayout {
			return fmt.Errorf("manifest %s feature %q has a shape, metadata or sampling_graph, which format version %d introduced (version %d)", of, f.Name, VersionBoundLayout, m.Version)
		}
		if err := f.validate(int64(m.BlockSize), count); err != nil {
			return err
		}
		for k, path := range f.Files {
			if err := v.need(fmt.Sprintf("%s feature %q stripe %d", of, f.Name, k), path, f.ContentBytesOfFile(k)); err != nil {
				return err
			}
			if v.files[path].InPlace != f.InPlace {
				return fmt.Errorf("manifest %s feature %q (in_place %v) has file %q with in_place %v; an in-place feature and its one file are both marked", of, f.Name, f.InPlace, path, v.files[path].InPlace)
			}
		}
	}
	return nil
}

// nodeTypes checks every node type (name, count, features, labels, splits) and returns them by name.
func (v *validation) nodeTypes() (map[string]*NodeType, error) {
	m := v.m
	nodeTypes := make(map[string]*NodeType, len(m.NodeTypes))
	for i := range m.NodeTypes {
		nt := &m.NodeTypes[i]
		if v.typed {
			if err := CheckTypeName("manifest node type", nt.Name); err != nil {
				return nil, err
			}
		}
		if _, dup := nodeTypes[nt.Name]; dup {
			return nil, fmt.Errorf("manifest names two node types %q; node type names must be unique", nt.Name)
		}
		nodeTypes[nt.Name] = nt
		if nt.Name == "" || nt.Count < 0 || nt.Count > math.MaxInt64/16 || (v.typed && nt.Count < 1) {
			return nil, fmt.Errorf("manifest node type %q has invalid count %d", nt.Name, nt.Count)
		}
	}
	for i := range m.NodeTypes {
		if err := v.nodeTypeFiles(&m.NodeTypes[i]); err != nil {
			return nil, err
		}
	}
	return nodeTypes, nil
}

// nodeTypeFiles checks node type nt's features, labels and splits.
func (v *validation) nodeTypeFiles(nt *NodeType) error {
	// of prefixes what is checked: "node" and "" for the one type of versions 1 to 4, the
	// type's name when typed.
	nodeOf, of := "node", ""
	if v.typed {
		nodeOf = fmt.Sprintf("node type %q", nt.Name)
		of = nodeOf + " "
	}
	if err := v.features(nodeOf, nt.Features, nt.Count); err != nil {
		return err
	}
	if l := nt.Labels; l != nil {
		if l.DType != Int64 || l.NumClasses < 0 {
			return fmt.Errorf("manifest %slabels: dtype %q num_classes %d; want int64 and >= 0", of, l.DType, l.NumClasses)
		}
		if err := v.need(of+"labels", l.File, nt.Count*8); err != nil {
			return err
		}
		if v.files[l.File].InPlace {
			return fmt.Errorf("manifest %slabels file %q is marked in_place; only feature files may be", of, l.File)
		}
	}
	for name, s := range nt.Splits {
		if s.DType != Int64 || s.Count < 0 || s.Count > math.MaxInt64/8 {
			return fmt.Errorf("manifest %ssplit %q: dtype %q count %d; want int64 and a count >= 0", of, name, s.DType, s.Count)
		}
		if err := v.need(of+"split "+name, s.File, s.Count*8); err != nil {
			return err
		}
		if v.files[s.File].InPlace {
			return fmt.Errorf("manifest %ssplit %q file %q is marked in_place; only feature files may be", of, name, s.File)
		}
	}
	return nil
}

// edgeType checks edge type et (its names, unique among seen, joining nodeTypes), its topology
// files, features and edge splits.
func (v *validation) edgeType(et *EdgeType, nodeTypes map[string]*NodeType, seen map[string]bool) error {
	m := v.m
	key := et.Key()
	if v.typed {
		for _, n := range []struct{ what, name string }{{"source node type", et.Src}, {"relation", et.Rel}, {"destination node type", et.Dst}} {
			if err := CheckTypeName("manifest edge type "+n.what, n.name); err != nil {
				return err
			}
		}
	}
	if seen[key] {
		return fmt.Errorf("manifest names two edge types %q; (src, rel, dst) must be unique", key)
	}
	seen[key] = true
	src, dst := nodeTypes[et.Src], nodeTypes[et.Dst]
	if src == nil || dst == nil {
		return fmt.Errorf("manifest edge type (%s, %s, %s) joins unknown node types", et.Src, et.Rel, et.Dst)
	}
	name, of, edgeOf := et.Rel, "", "edge"
	if v.typed {
		name = key
		of = fmt.Sprintf("edge type %q ", key)
		edgeOf = fmt.Sprintf("edge type %q", key)
	}
	if et.Layout != "csc" || et.Indptr.DType != Int64 || (et.Indices.DType != Int32 && et.Indices.DType != Int64) {
		return fmt.Errorf("manifest edge type %q: layout %q indptr %q indices %q; want csc, int64, int32|int64", name, et.Layout, et.Indptr.DType, et.Indices.DType)
	}
	if et.Count < 0 || et.Count > math.MaxInt64/8 {
		return fmt.Errorf("manifest edge type %q has invalid count %d", name, et.Count)
	}
	if et.Indices.DType == Int32 && src.Count > math.MaxInt32 {
		return fmt.Errorf("manifest edge type %q: int32 indices cannot name %d nodes", name, src.Count)
	}
	if err := v.need(of+"indptr", et.Indptr.File, (dst.Count+1)*8); err != nil {
		return err
	}
	if err := v.need(of+"indices", et.Indices.File, et.Count*int64(et.Indices.DType.Size())); err != nil {
		return err
	}
	if v.files[et.Indptr.File].InPlace || v.files[et.Indices.File].InPlace {
		return fmt.Errorf("manifest edge type %q: topology files are marked in_place; only feature files may be", name)
	}
	if len(et.Features) > 0 && m.Version < 3 {
		return fmt.Errorf("manifest version %d has edge features, which format version 3 introduced", m.Version)
	}
	if err := v.features(edgeOf, et.Features, et.Count); err != nil {
		return err
	}
	return m.validateEdgeSplits(et, of, v.need, v.files)
}

// minVersion is the lowest format version that describes m: 9 when its checksums are bound (a
// DatasetID: every dataset Commit writes and Upgrade rewrites; their layouts are bound too) or
// it is Typed, 6 with edge splits, 5 with more than one node type or more than one edge type, 4
// with an in-place feature, 3 with edge or scalar features, else 2.
func (m *Manifest) minVersion() int {
	if m.Typed || m.DatasetID != "" {
		return VersionBoundLayout
	}
	for _, et := range m.EdgeTypes {
		if len(et.Splits) > 0 {
			return 6
		}
	}
	if len(m.NodeTypes) > 1 || len(m.EdgeTypes) > 1 {
		return 5
	}
	for _, f := range m.allFeatures() {
		if f.InPlace {
			return 4
		}
	}
	for _, nt := range m.NodeTypes {
		for _, f := range nt.Features {
			if f.Scalar {
				return 3
			}
		}
	}
	for _, et := range m.EdgeTypes {
		if len(et.Features) > 0 {
			return 3
		}
	}
	return 2
}

// validateShape checks the optional row shape: two or more positive sizes of product Dim, on a
// feature that is not scalar.
func (f *FeatureSpec) validateShape() error {
	if f.Shape == nil {
		return nil
	}
	product := int64(1)
	for _, d := range f.Shape {
		if d <= 0 || d > f.Dim {
			product = -1
			break
		}
		product *= d
	}
	if len(f.Shape) < 2 || product != f.Dim || f.Scalar {
		return fmt.Errorf("manifest feature %q: shape %v does not fit dim %d (scalar %v); a shape has two or more positive sizes whose product is dim, on a feature that is not scalar", f.Name, f.Shape, f.Dim, f.Scalar)
	}
	return nil
}

func (f *FeatureSpec) validate(blockSize, count int64) error {
	size := f.DType.Size()
	if size == 0 {
		return fmt.Errorf("manifest feature %q: unknown dtype %q", f.Name, f.DType)
	}
	if f.Dim <= 0 || f.Dim > 1<<30 || f.RowBytes != f.Dim*int64(size) {
		return fmt.Errorf("manifest feature %q: dim %d and row_bytes %d do not agree with dtype %s", f.Name, f.Dim, f.RowBytes, f.DType)
	}
	if count > math.MaxInt64/2/f.RowBytes {
		return fmt.Errorf("manifest feature %q: %d rows of %d bytes overflow a file offset", f.Name, count, f.RowBytes)
	}
	want := int64(0)
	if f.RowBytes <= blockSize && !f.InPlace {
		want = blockSize / f.RowBytes
	}
	if f.InPlace && len(f.Files) != 1 || f.DataOffset < 0 || f.DataOffset > 1<<40 || (f.DataOffset != 0 && !f.InPlace) {
		return fmt.Errorf("manifest feature %q: in_place %v with %d files and data_offset %d; an in-place feature has one file, and only it a data offset >= 0", f.Name, f.InPlace, len(f.Files), f.DataOffset)
	}
	if f.RowsPerBlock != want {
		return fmt.Errorf("manifest feature %q: rows_per_block %d, want %d for %d-byte rows in %d-byte blocks", f.Name, f.RowsPerBlock, want, f.RowBytes, blockSize)
	}
	if len(f.Files) == 0 || len(f.Files) > 1024 {
		return fmt.Errorf("manifest feature %q lists %d files, want 1 to 1024", f.Name, len(f.Files))
	}
	if f.StripeRows <= 0 || (f.RowsPerBlock > 0 && f.StripeRows%f.RowsPerBlock != 0) {
		return fmt.Errorf("manifest feature %q: stripe_rows %d must be positive and a multiple of rows_per_block %d", f.Name, f.StripeRows, f.RowsPerBlock)
	}
	if err := f.validateShape(); err != nil {
		return err
	}
	for k := range f.Metadata {
		if k == "" {
			return fmt.Errorf("manifest feature %q: metadata has an empty key", f.Name)
		}
	}
	f.blockSize, f.count = blockSize, count
	return nil
}

// TotalBytes is the size of every data file the manifest lists, in-place files included.
func (m *Manifest) TotalBytes() int64 {
	var total int64
	for _, f := range m.Files {
		total += f.Bytes
	}
	return total
}

// Dir is the directory the manifest belongs to.
func (m *Manifest) Dir() string { return m.dir }

// SetDir sets the directory relative paths resolve against.
func (m *Manifest) SetDir(dir string) { m.dir = dir }

// Path resolves a path of the manifest: absolute paths stay, relative ones join Dir.
func (m *Manifest) Path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(m.dir, p)
}

// File returns the files-list entry for path, or nil.
func (m *Manifest) File(path string) *File {
	for i := range m.Files {
		if m.Files[i].Path == path {
			return &m.Files[i]
		}
	}
	return nil
}

// Nodes is the one node type of a one-type dataset (every version 1 to 4 dataset); of a dataset
// with several (version 5) it is the first listed. Code that serves several types names them
// (NodeTypeNamed).
func (m *Manifest) Nodes() *NodeType { return &m.NodeTypes[0] }

// IsTyped reports whether the dataset's types are its maker's: several node or edge types, or one
// of each marked Typed. An untyped dataset is a homogeneous graph (its type is named "node").
func (m *Manifest) IsTyped() bool { return m.Typed || len(m.NodeTypes) > 1 || len(m.EdgeTypes) > 1 }

// Edges is the one edge type of a one-type dataset, or nil when it has no topology; of a dataset
// with several edge types (version 5) it is the first listed (EdgeTypeNamed names one).
func (m *Manifest) Edges() *EdgeType {
	if len(m.EdgeTypes) == 0 {
		return nil
	}
	return &m.EdgeTypes[0]
}

// Feature returns the node feature named name, or the first node feature when name is "", of
// the node type Nodes returns.
func (m *Manifest) Feature(name string) (*FeatureSpec, error) {
	nt := m.Nodes()
	if len(nt.Features) == 0 {
		return nil, fmt.Errorf("dataset %s has no node features: %w", m.dir, ErrFeatureNotFound)
	}
	if name == "" {
		return &nt.Features[0], nil
	}
	for i := range nt.Features {
		if nt.Features[i].Name == name {
			return &nt.Features[i], nil
		}
	}
	if f, _, _ := m.AnyFeature(name); f != nil {
		return nil, fmt.Errorf("dataset %s: %q is an edge feature, not a node feature (node features: %s): %w", m.dir, name, m.featureNames(false), ErrFeatureNotFound)
	}
	return nil, fmt.Errorf("dataset %s has no feature %q (it has %s): %w", m.dir, name, m.featureNames(true), ErrFeatureNotFound)
}

// AnyFeature returns the node or edge feature named name of Nodes and Edges — the node
// feature where both have one of that name (version 9 allows it) — and whether it is an edge
// feature; its rows are node ids or edge ids.
func (m *Manifest) AnyFeature(name string) (*FeatureSpec, bool, error) {
	nt := m.Nodes()
	for i := range nt.Features {
		if nt.Features[i].Name == name {
			return &nt.Features[i], false, nil
		}
	}
	if et := m.Edges(); et != nil {
		for i := range et.Features {
			if et.Features[i].Name == name {
				return &et.Features[i], true, nil
			}
		}
	}
	return nil, false, fmt.Errorf("dataset %s has no feature %q (it has %s): %w", m.dir, name, m.featureNames(true), ErrFeatureNotFound)
}

// featureNames lists the node features (and, with edges, the edge features) for errors.
func (m *Manifest) featureNames(edges bool) string {
	var names []string
	for _, f := range m.Nodes().Features {
		names = append(names, f.Name)
	}
	if et := m.Edges(); et != nil && edges {
		for _, f := range et.Features {
			names = append(names, f.Name+" (edge)")
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
