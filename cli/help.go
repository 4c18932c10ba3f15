package cli

import (
	"fmt"

	"github.com/tierfs/tierfs/advise"
)

// commandHelp is what `tierfs CMD --help` prints above the flags: what the command does and
// examples that run as written (on data/g, a dataset made by the first synth line).
var commandHelp = map[string]struct {
	what     string
	examples []string
}{
	"synth": {"Writes a deterministic synthetic graph (R-MAT, or power law with community locality, or shaped like a real dataset) with features, labels and splits.", []string{
		"tierfs synth --nodes 1000000 --avg-degree 10 --dim 128 --seed 1 --out data/g",
		"tierfs synth --preset ogbn-products --scale 0.1 --out data/p",
		"tierfs synth --nodes 100000 --avg-degree 15 --dim 64 --degree-exponent 2.2 --locality 0.5 --out data/l --force"}},
	"ingest": {"Builds a dataset from your files: edges (.npy, CSV/TSV, Parquet, Arrow IPC), features (.npy, Parquet, Arrow IPC), labels and splits.", []string{
		"tierfs ingest --edges edges.parquet --features feats.npy --labels y.npy --splits splits/ --out data/g",
		"tierfs ingest --edges graph.csv --edge-columns from,to --features feats.npy --undirected --out data/g --force",
		"tierfs ingest --edges edges.npy --features x.npy --node-feature pos=pos.npy --edge-feature edge_weight=w.npy --out data/g",
		"tierfs ingest --graphbolt ogbn-arxiv-graphbolt/ --out data/arxiv",
		"tierfs ingest --edges train_edges.npy --features x.npy --edge-split train=train_eli.npy,labels=train_el.npy --edge-split test=test_eli.npy --out data/link",
		"tierfs ingest --spec mag.json data/mag"}},
	"info":    {"Prints what a dataset holds: nodes, edges, features, labels, splits, files.", []string{"tierfs info data/g", "tierfs info data/g --json"}},
	"verify":  {"Checks every block of every file of a dataset against its checksum, after removing what writes to it that were killed left beside it.", []string{"tierfs verify data/g"}},
	"upgrade": {"Rewrites a dataset of an older format version to the current one in place, after checking every block against its checksum (a damaged dataset is refused); killed at any point it leaves the old or the new dataset, and running it again finishes.", []string{"tierfs upgrade data/g"}},
	"gather": {"Writes the feature rows of the given ids to a .npy file (through the tiers, as training reads them).", []string{
		"tierfs gather data/g --ids split:test --out rows.npy --host-cache 512MB"}},
	"sample": {"Samples the k-hop neighborhoods of seeds (or of seed edges) and writes them as .npy files (nodes, row, col, per-hop counts; the label edges).", []string{
		"tierfs sample data/g --seeds split:train --fanouts 25,10 --out sample/",
		"tierfs sample data/link --seed-edges split:train --neg-sampling binary --exclude-seed-edges --fanouts 10,5 --out sample/"}},
	"plan-epochs": {"Samples K epochs ahead and packs each batch's disk rows contiguously (planned epochs, docs/planned.md).", []string{
		"tierfs plan-epochs data/g --fanouts 25,10 --batch-size 1024 --epochs 2 --host-cache 2GiB --serve 1 --compare"}},
	"place": {"Profiles the training sampler, plans which topology and feature rows each memory tier holds, and saves the plan.", []string{
		"tierfs place data/g --fanouts 10,5 --batch-size 1024 --host-cache 2GiB"}},
	"advise": {fmt.Sprintf(adviseLong, advise.DefaultSSDIOPS, advise.DefaultPCIeGBps, advise.DefaultAlphaUS), []string{
		"tierfs advise data/g --fanouts 10,5 --batch-size 1024 --host-cache 2GiB --ssd-price 150 --machine-price 3000"}},
	"mount":           {"Mounts a read-only view of a dataset's tiers (FUSE).", []string{"tierfs mount data/g mnt --host-cache 512MB", "tierfs umount mnt"}},
	"umount":          {"Unmounts a tierfs mount.", []string{"tierfs umount mnt"}},
	"bench gather":    {"Measures gather throughput per tier configuration on an id stream.", []string{"tierfs bench gather data/g --dist sample --host-cache 1GB", "tierfs bench gather data/g --verify-compare 3"}},
	"bench gpu":       {"Measures the GPU path: GPU tier, UVA host tier, SSD to GPU, mixed.", []string{"tierfs bench gpu data/g --kernels", "tierfs bench gpu data/g --verify-compare 3"}},
	"bench placement": {"Held-out SSD rows per batch of degree, one-epoch and converged placements against the hindsight bar.", []string{"tierfs bench placement data/g --fanouts 25,10"}},
	"bench disk":      {"Random reads of the dataset's disk at 512 B..128 KiB, and the coalescing gap worth bridging.", []string{"tierfs bench disk data/g --json disk.json"}},
	"bench fill":      {"Place of a seeded random hotness (ranking, then the memory tiers' fill) timed over rounds, each after a sequential O_DIRECT pass over the feature file.", []string{"tierfs bench fill data/g --host-cache 640MB --rounds 3"}},
	"bench reads":     {"On-demand gathers' disk reads alone: reads/s with 1..N gathers in flight through the store's SSD files.", []string{"tierfs bench reads data/g --gathers 1,2,4,8 --batch 1000"}},
	"bench io":        {"The IO engine beside liburing's iobench at 1..N threads of random 4 KiB O_DIRECT reads.", []string{"tierfs bench io --files /dev/loop0,/dev/loop1 --threads 1,4,8,16 --iobench gpu/iobench"}},
}
