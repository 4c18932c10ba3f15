package placement

import (
	"fmt"
	"math"
	"math/bits"
)

// LinkTraffic is what serving a profile's reads moves, for one kind of item or both. In JSON
// (reports), the arrays are indexed by tier: ssd, host, gpu.
type LinkTraffic struct {
	Reads [NumTiers]uint64 `json:"reads"` // item reads served by each tier (indexed by Tier)
	// Transactions per tier: GPU, 64-byte device-memory transactions (ceil(h*b/64)); host,
	// 64-byte PCIe transactions (ceil(h*b/64)); SSD, blocks read (h*ceil(b/block)).
	Transactions [NumTiers]uint64 `json:"transactions"`
	PCIeBytes    uint64           `json:"pcie_bytes"` // to the GPU: host transactions × 64 plus SSD blocks × block size (staged)
	SSDBytes     uint64           `json:"ssd_bytes"`  // read from SSD: blocks × block size
}

// Traffic is the cost of a placement under a profile: per kind, summed, and the number of
// batches profiled. Counts saturate at math.MaxUint64.
type Traffic struct {
	Topology, Feature, Total LinkTraffic
	Batches                  int
}

// PerBatch divides every count by Batches (rounding down); with no batches it returns t.
func (t Traffic) PerBatch() Traffic {
	if t.Batches <= 0 {
		return t
	}
	d := uint64(t.Batches)
	div := func(l LinkTraffic) LinkTraffic {
		for i := range NumTiers {
			l.Reads[i] /= d
			l.Transactions[i] /= d
		}
		l.PCIeBytes /= d
		l.SSDBytes /= d
		return l
	}
	return Traffic{Topology: div(t.Topology), Feature: div(t.Feature), Total: div(t.Total), Batches: 1}
}

// Cost is the traffic of serving h's reads from placement p, with item sizes sizes (which must
// match the sizes p was planned with).
func Cost(p *Placement, h *Hotness, sizes Sizes) (Traffic, error) {
	if p == nil {
		return Traffic{}, fmt.Errorf("placement: placement is nil")
	}
	if err := h.validate(); err != nil {
		return Traffic{}, err
	}
	sizes = sizes.withDefaults()
	if err := sizes.validate(h.NumNodes()); err != nil {
		return Traffic{}, err
	}
	if p.NumNodes() != h.NumNodes() {
		return Traffic{}, fmt.Errorf("placement: placement of %d nodes but hotness of %d", p.NumNodes(), h.NumNodes())
	}
	if sizes.RowBytes != p.RowBytes || sizes.IndexBytes != p.IndexBytes || sizes.BlockSize != p.BlockSize {
		return Traffic{}, fmt.Errorf("placement: sizes (row %d, index %d, block %d bytes) differ from the plan's (row %d, index %d, block %d bytes)",
			sizes.RowBytes, sizes.IndexBytes, sizes.BlockSize, p.RowBytes, p.IndexBytes, p.BlockSize)
	}
	t := Traffic{Batches: h.Batches}
	block := uint64(sizes.BlockSize)
	for v := range h.NumNodes() {
		for _, k := range []Kind{KindTopology, KindFeature} {
			hot := uint64(h.Topology[v])
			l := &t.Topology
			if k == KindFeature {
				hot, l = uint64(h.Feature[v]), &t.Feature
			}
			if hot == 0 {
				continue
			}
			b := uint64(sizes.bytes(v, k))
			tier := p.Tier(v, k)
			l.Reads[tier] = satAdd(l.Reads[tier], hot)
			switch tier {
			case TierGPU, TierHost:
				tx := ceilDiv(satMul(hot, b), CacheLine)
				l.Transactions[tier] = satAdd(l.Transactions[tier], tx)
				if tier == TierHost {
					l.PCIeBytes = satAdd(l.PCIeBytes, satMul(tx, CacheLine))
				}
			case TierSSD:
				blocks := satMul(hot, ceilDiv(b, block))
				l.Transactions[tier] = satAdd(l.Transactions[tier], blocks)
				l.SSDBytes = satAdd(l.SSDBytes, satMul(blocks, block))
				l.PCIeBytes = satAdd(l.PCIeBytes, satMul(blocks, block))
			}
		}
	}
	for i := range NumTiers {
		t.Total.Reads[i] = satAdd(t.Topology.Reads[i], t.Feature.Reads[i])
		t.Total.Transactions[i] = satAdd(t.Topology.Transactions[i], t.Feature.Transactions[i])
	}
	t.Total.PCIeBytes = satAdd(t.Topology.PCIeBytes, t.Feature.PCIeBytes)
	t.Total.SSDBytes = satAdd(t.Topology.SSDBytes, t.Feature.SSDBytes)
	return t, nil
}

func ceilDiv(a, b uint64) uint64 {
	if a == math.MaxUint64 {
		return a
	}
	return a/b + min(a%b, 1)
}

func satAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}

func satMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}
