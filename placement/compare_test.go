// Print the comparison table (markdown, for BENCHMARKS.md) with:
//
//	go test -run TestComparisonTable -v ./placement/
//
// The table is deterministic: a fixed R-MAT graph, a fixed profile.
package placement

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tierfs/tierfs/topology"
)

// rmatGraph builds an R-MAT graph (a, b, c, d = 0.57, 0.19, 0.19, 0.05, as ingest.Synth) of
// 2^scale nodes and about avgDeg*2^scale edges, ids permuted so hubs spread over the id range.
func rmatGraph(t testing.TB, scale int, avgDeg int, seed uint64) *topology.CSC {
	t.Helper()
	n := int64(1) << scale
	r := rand.New(rand.NewPCG(seed, 7))
	perm := r.Perm(int(n))
	m := n * int64(avgDeg)
	src, dst := make([]int64, 0, m), make([]int64, 0, m)
	for int64(len(src)) < m {
		var u, v int64
		for range scale {
			x := r.Float64()
			u, v = 2*u, 2*v
			switch {
			case x < 0.57:
			case x < 0.76:
				v++
			case x < 0.95:
				u++
			default:
				u, v = u+1, v+1
			}
		}
		if u == v {
			continue
		}
		src, dst = append(src, int64(perm[u])), append(dst, int64(perm[v]))
	}
	g, err := topology.FromEdges(n, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// comparison is one row of the table.
type comparison struct {
	rowBytes        int64
	gpuPct, hostPct float64 // budgets as % of the dataset's topology+feature bytes
	policy          Policy
	traffic         Traffic // per batch
	p               *Placement
}

func TestComparisonTable(t *testing.T) {
	const scale, avgDeg = 15, 12
	g := rmatGraph(t, scale, avgDeg, 42)
	n := g.NumNodes()
	// Training seeds: a fixed 10% of the nodes, in random order.
	r := rand.New(rand.NewPCG(1, 1))
	seeds := make([]int64, 0, n/10)
	for _, v := range r.Perm(int(n))[:n/10] {
		seeds = append(seeds, int64(v))
	}
	h, err := Profile(g, seeds, ProfileOptions{Fanouts: []int{10, 5}, BatchSize: 256, Batches: 4 * len(seeds) / 256, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var rows []comparison
	for _, rowBytes := range []int64{128, 1024, 4096} {
		sizes, err := SizesOf(g, rowBytes, 4)
		if err != nil {
			t.Fatal(err)
		}
		var topoBytes int64
		for _, d := range sizes.Degrees {
			topoBytes += sizes.IndexBytes*d + PointerBytes
		}
		total := topoBytes + n*rowBytes
		for _, b := range []struct{ gpu, host float64 }{{0, 5}, {0, 20}, {2, 10}, {5, 20}} {
			budget := Budget{GPUBytes: int64(b.gpu / 100 * float64(total)), HostBytes: int64(b.host / 100 * float64(total)), ChunkBytes: 16 << 10}
			var unified Traffic
			for _, pol := range Policies() {
				p, err := Plan(h, sizes, budget, pol)
				if err != nil {
					t.Fatal(err)
				}
				checkBudget(t, p, budget)
				tr, err := Cost(p, h, sizes)
				if err != nil {
					t.Fatal(err)
				}
				tr = tr.PerBatch()
				rows = append(rows, comparison{rowBytes, b.gpu, b.host, pol, tr, p})
				switch pol {
				case Unified:
					unified = tr
				case UnifiedPCIe: // a variant, reported but not held to the bar
				default:
					checkUnified(t, fmt.Sprintf("rows %d B, GPU %v%%, host %v%%", rowBytes, b.gpu, b.host), unified, tr, pol)
				}
			}
		}
	}
	t.Logf("R-MAT graph of %d nodes and %d edges (4-byte ids), %d seeds, fanouts %v, batch %d, %d batches profiled\n%s",
		n, g.NumEdges(), len(seeds), h.Fanouts, h.BatchSize, h.Batches, formatTable(rows))
}

// tolerance is how much more of one link's bytes Unified may move than a fixed strategy, as a
// fraction: Unified minimises the sum of both links, so where a strategy wins one link by a hair
// it loses the other by more (seen: topology-first reads 0.06% fewer SSD bytes at 2% GPU, 10%
// host, 1 KiB rows, and moves 2% more over PCIe).
const tolerance = 0.005

// checkUnified fails when unified moves more PCIe+SSD bytes than a fixed strategy, or more of
// either by over tolerance, naming the link; a smaller loss on one link is logged.
func checkUnified(t *testing.T, which string, unified, fixed Traffic, pol Policy) {
	t.Helper()
	u, f := unified.Total, fixed.Total
	if u.PCIeBytes+u.SSDBytes > f.PCIeBytes+f.SSDBytes {
		t.Errorf("%s: unified moves %d PCIe + SSD bytes a batch, %s only %d", which, u.PCIeBytes+u.SSDBytes, pol, f.PCIeBytes+f.SSDBytes)
	}
	for _, link := range []struct {
		name string
		u, f uint64
	}{{"PCIe", u.PCIeBytes, f.PCIeBytes}, {"SSD", u.SSDBytes, f.SSDBytes}} {
		switch {
		case float64(link.u) > (1+tolerance)*float64(link.f):
			t.Errorf("%s: unified moves %d %s bytes a batch, %s only %d", which, link.u, link.name, pol, link.f)
		case link.u > link.f:
			t.Logf("%s: unified moves %d %s bytes a batch, %s %d (%.2f%% fewer), within tolerance", which, link.u, link.name, pol, link.f, 100*float64(link.u-link.f)/float64(link.u))
		}
	}
}

// checkBudget fails when p takes more memory than budget in a tier.
func checkBudget(t *testing.T, p *Placement, budget Budget) {
	t.Helper()
	for _, tier := range []Tier{TierGPU, TierHost} {
		_, topo := p.Used(KindTopology, tier)
		_, feat := p.Used(KindFeature, tier)
		limit := budget.HostBytes
		if tier == TierGPU {
			limit = budget.GPUBytes
		}
		if topo+feat > limit {
			t.Fatalf("%s: %s holds %d bytes, over its budget of %d", p.Policy, tier, topo+feat, limit)
		}
	}
}

func formatTable(rows []comparison) string {
	var b strings.Builder
	b.WriteString("| row B | GPU % | host % | policy | PCIe MB/batch | SSD MB/batch | topo PCIe MB | feat PCIe MB | topo in mem MB | feat in mem MB |\n")
	b.WriteString("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
	mb := func(x uint64) string { return fmt.Sprintf("%.2f", float64(x)/1e6) }
	for _, r := range rows {
		mem := func(k Kind) string {
			_, g := r.p.Used(k, TierGPU)
			_, h := r.p.Used(k, TierHost)
			return fmt.Sprintf("%.2f", float64(g+h)/1e6)
		}
		fmt.Fprintf(&b, "| %d | %g | %g | %s | %s | %s | %s | %s | %s | %s |\n", r.rowBytes, r.gpuPct, r.hostPct, r.policy,
			mb(r.traffic.Total.PCIeBytes), mb(r.traffic.Total.SSDBytes), mb(r.traffic.Topology.PCIeBytes), mb(r.traffic.Feature.PCIeBytes),
			mem(KindTopology), mem(KindFeature))
	}
	return b.String()
}
