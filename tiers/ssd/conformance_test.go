package ssd

import (
	"bytes"
	"testing"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers"
	"github.com/tierfs/tierfs/tiers/tierstest"
)

// The SSD tier over a dataset of the suite's rows in two stripes, read with verification by
// each IO backend there is; attached to GPU 0 where one is, for the device copies.
func TestConformance(t *testing.T) {
	backends := []gpuio.Backend{gpuio.BackendPread}
	if gpuio.Probe() == nil {
		backends = append(backends, gpuio.BackendIOUring)
	}
	for _, backend := range backends {
		t.Run(string(backend), func(t *testing.T) {
			tierstest.Run(t, func(t *testing.T, rows [][]byte) tiers.Tier {
				rb := int64(len(rows[0]))
				m := writeRows(t, bytes.Join(rows, nil), int64(len(rows)), rb/4, 2)
				spec, err := m.Feature("")
				if err != nil {
					t.Fatal(err)
				}
				f, err := OpenFiles(m, spec.Files, Options{Backend: backend, Stacks: 2, VerifyReads: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				if cuda.Load() == nil {
					if err := f.AttachDevice(0, 64); err != nil {
						t.Fatal(err)
					}
				}
				return NewTier(spec, int64(len(rows)), f)
			})
		})
	}
}
