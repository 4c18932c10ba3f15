package ingest

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/tierfs/tierfs/dataset"
)

// TestSynthHeteroPresets makes every heterogeneous preset at a small scale and checks the types,
// that every index names a node of its source type and every indptr ends at its edge count,
// and that the same seed gives the same bytes.
func TestSynthHeteroPresets(t *testing.T) {
	scales := map[string]float64{"ogbn-mag": 0.002, "igbh-small": 0.0005, "mag240m": 0.00001}
	for _, name := range SynthHeteroPresetNames() {
		t.Run(name, func(t *testing.T) {
			opt, err := SynthHeteroPreset(name, scales[name])
			if err != nil {
				t.Fatal(err)
			}
			opt.Seed, opt.Out = 7, filepath.Join(t.TempDir(), "a")
			if _, err := SynthHetero(opt); err != nil {
				t.Fatal(err)
			}
			m := loadVerified(t, opt.Out)
			if m.Version != dataset.Version || len(m.NodeTypes) != len(opt.NodeTypes) || len(m.EdgeTypes) != len(opt.EdgeTypes) {
				t.Fatalf("version %d, %d node types, %d edge types", m.Version, len(m.NodeTypes), len(m.EdgeTypes))
			}
			for _, n := range opt.NodeTypes {
				nt, err := m.NodeTypeNamed(n.Name)
				if err != nil || nt.Count != n.Nodes || (len(nt.Features) > 0) != (n.Dim > 0) || (nt.Labels != nil) != (n.Classes > 0) {
					t.Fatalf("node type %s: %+v %v", n.Name, nt, err)
				}
				want := n.DType
				if want == "" {
					want = dataset.Float32
				}
				if n.Dim > 0 && (nt.Features[0].Dim != n.Dim || nt.Features[0].DType != want) {
					t.Errorf("node type %s feature %+v", n.Name, nt.Features[0])
				}
			}
			for i := range m.EdgeTypes {
				et := &m.EdgeTypes[i]
				src, _ := m.NodeTypeNamed(et.Src)
				dst, _ := m.NodeTypeNamed(et.Dst)
				indptr := readInt64File(t, m.Path(et.Indptr.File), dst.Count+1)
				if indptr[dst.Count] != et.Count || et.Count == 0 {
					t.Errorf("%s: indptr ends at %d, %d edges", et.Key(), indptr[dst.Count], et.Count)
				}
				raw := mustReadFile(t, m.Path(et.Indices.File))
				for p := range et.Count {
					if s := int64(binary.LittleEndian.Uint32(raw[4*p:])); s >= src.Count {
						t.Fatalf("%s: edge %d has source %d of %d", et.Key(), p, s, src.Count)
					}
				}
			}
			again := opt
			again.Out = filepath.Join(t.TempDir(), "b")
			if _, err := SynthHetero(again); err != nil {
				t.Fatal(err)
			}
			for _, f := range m.Files {
				if !bytes.Equal(mustReadFile(t, filepath.Join(opt.Out, f.Path)), mustReadFile(t, filepath.Join(again.Out, f.Path))) {
					t.Errorf("%s differs between two runs of one seed", f.Path)
				}
			}
		})
	}
}
