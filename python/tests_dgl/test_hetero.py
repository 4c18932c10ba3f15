"""Heterogeneous graphs through tierfs.dgl, against DGL's own behaviour on the same data: the
GraphBolt FeatureStore keyed (domain, type, name) against the raw arrays and
dgl.graphbolt.OnDiskDataset, heterogeneous blocks against dgl.to_block over the same sampled
frontier (and their edge ids against DGL's in-memory heterograph), the heterogeneous DataLoader,
and from_graphbolt of a GraphBolt dataset of several types. Seeds are printed."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
import torch

import dgl
import tierfs
import tierfs.dgl as tdgl

import hetero_data
from conftest import REPO

SEED = 20251125
PAPER = "paper"
WRITES = ("author", "writes", "paper")
WRITTEN_BY = ("paper", "written_by", "author")
CITES = ("paper", "cites", "paper")
HAS = ("field", "has", "paper")


@pytest.fixture(scope="module")
def het(tmp_path_factory):
    g = hetero_data.synthetic()
    return hetero_data.ingest(g, tmp_path_factory.mktemp("tierfs-dgl-hetero"), csv_etype=HAS)


@pytest.fixture(scope="module")
def hstore(het):
    s = tierfs.open(het.dir, host_cache="1MB")
    yield s
    s.close()


@pytest.fixture(scope="module")
def hgraph(het):
    return het.heterograph()


def _rng(name):
    seed = np.random.SeedSequence().entropy % (1 << 32)
    print(f"{name}: seed {seed}")
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------------------------
# from_graphbolt: the dataset has every type of the GraphBolt one


def test_from_graphbolt_types(het, hstore, hgraph):
    assert hstore.is_hetero
    assert hstore.node_types == list(het.num_nodes)
    assert hstore.edge_types == list(het.edges)
    for t, n in het.num_nodes.items():
        assert hstore.num_nodes(t) == n
    for e, ei in het.edges.items():
        assert hstore.num_edges(e) == ei.shape[1]
    # The whole topology, read back by sampling every neighbor, is DGL's graph edge for edge.
    back = tdgl.dgl_graph(hstore)
    assert set(back.canonical_etypes) == set(hgraph.canonical_etypes)
    assert {t: back.num_nodes(t) for t in back.ntypes} == het.num_nodes
    for e in het.edges:
        for a, b in zip(back.edges(etype=e), hgraph.edges(etype=e)):
            assert torch.equal(a, b), e
    for split in ("train", "val", "test"):
        np.testing.assert_array_equal(hstore.split(split, node_type=PAPER), het.sets[PAPER][split][0])
    np.testing.assert_array_equal(hstore.labels(np.arange(500), node_type=PAPER), het.labels(PAPER))
    assert hstore.types["node_types"]["field"]["features"] == {}
    assert list(hstore.types["node_types"][PAPER]["features"]) == ["feat", "year"]


def test_from_graphbolt_matches_ondisk_dataset(het, hstore, tmp_path):
    """DGL's own reader of the same GraphBolt dataset (preprocessed in a copy) gives the same
    features, seeds and labels."""
    gb = pytest.importorskip("dgl.graphbolt")
    import shutil

    copy = tmp_path / "gb"
    shutil.copytree(het.gb_dir, copy)
    ds = gb.OnDiskDataset(str(copy)).load()
    ours = tdgl.FeatureStore(hstore)
    for key in [("node", PAPER, "feat"), ("node", PAPER, "year"), ("node", "author", "feat")]:
        n = het.num_nodes[key[1]]
        ids = torch.arange(n)
        assert torch.equal(ours.read(*key, ids), ds.feature.read(*key, ids)), key
    task = ds.tasks[0]
    for split, itemset in (("train", task.train_set), ("val", task.validation_set), ("test", task.test_set)):
        items = list(itemset)
        seeds = torch.tensor([int(i[PAPER][0]) for i in items])
        labels = torch.tensor([int(i[PAPER][1]) for i in items])
        np.testing.assert_array_equal(np.sort(seeds.numpy()), hstore.split(split, node_type=PAPER))
        np.testing.assert_array_equal(hstore.labels(seeds.numpy(), node_type=PAPER), labels.numpy())
    graph = ds.graph
    assert graph.total_num_nodes == sum(het.num_nodes.values())
    assert graph.total_num_edges == sum(e.shape[1] for e in het.edges.values())


# --------------------------------------------------------------------------------------------
# GraphBolt FeatureStore


def test_feature_store_keys(het, hstore):
    fs = tdgl.FeatureStore(hstore)
    want = {
        ("node", PAPER, "feat"), ("node", PAPER, "year"), ("node", PAPER, "label"), ("node", "author", "feat"),
        ("edge", "author:writes:paper", "w"), ("edge", "author:writes:paper", "pos"),
    }
    assert set(fs.keys()) == want
    for key in want:
        assert key in fs
    assert fs.size("node", PAPER, "feat") == torch.Size([16])
    assert fs.size("node", PAPER, "year") == torch.Size([1])
    assert fs.size("node", PAPER, "label") == torch.Size([])
    assert fs.size("edge", "author:writes:paper", "w") == torch.Size([1])  # 1-D: (N, 1), as GraphBolt's
    assert fs.read("edge", "author:writes:paper", "w", torch.tensor([0, 1])).shape == (2, 1)
    assert fs.size("edge", "author:writes:paper", "pos") == torch.Size([3])
    assert fs.count("node", "author", "feat") == het.num_nodes["author"]
    assert fs.count("edge", "author:writes:paper", "w") == het.edges[WRITES].shape[1]
    assert fs.metadata("node", PAPER, "label") == fs.metadata("node", PAPER, "year") == {}  # as GraphBolt's
    assert fs[("node", PAPER, "year")].read(torch.tensor([0])).dtype == torch.int32
    assert fs[("node", "author", "feat")].node_type == "author"
    assert fs[("edge", "author:writes:paper", "w")].edge_type == WRITES
    assert "node_type='author'" in repr(fs[("node", "author", "feat")])


def test_feature_store_reads_match_raw(het, hstore):
    rng = _rng("test_feature_store_reads_match_raw")
    fs = tdgl.FeatureStore(hstore)
    for t, feats in het.feats.items():
        for name, x in feats.items():
            ids = rng.integers(0, het.num_nodes[t], 200)
            got = fs.read("node", t, name, torch.from_numpy(ids))
            assert torch.equal(got, torch.from_numpy(x[ids])), (t, name)
            assert torch.equal(fs.read("node", t, name), torch.from_numpy(x))  # every row
    y = het.labels(PAPER)
    ids = rng.integers(0, het.num_nodes[PAPER], 100)
    assert torch.equal(fs.read("node", PAPER, "label", torch.from_numpy(ids)), torch.from_numpy(y[ids]))
    # Edge features by DGL's edge id (the input position); tierfs's CSC order maps to it.
    o = het.csc_order(WRITES)
    for name, x in het.edge_feats[WRITES].items():
        eids = rng.integers(0, len(o), 150)
        got = fs.read("edge", "author:writes:paper", name, torch.from_numpy(eids))
        want = torch.from_numpy(x[eids])
        assert torch.equal(got, want.reshape(-1, 1) if want.dim() == 1 else want), name  # 1-D: (N, 1), as GraphBolt
        csc = tdgl.csc_edge_ids(hstore, torch.from_numpy(eids), WRITES)
        assert torch.equal(csc, torch.from_numpy(np.argsort(o)[eids])), name
        assert torch.equal(tdgl.dgl_edge_ids(hstore, csc, WRITES), torch.from_numpy(eids)), name
    empty = fs.read("node", "author", "feat", torch.empty(0, dtype=torch.int64))
    assert empty.shape == (0, 8)


def test_feature_store_read_async(het, hstore):
    """GraphBolt >= 2.4's staged protocol, on a typed column."""
    fs = tdgl.FeatureStore(hstore)
    feature = fs[("node", "author", "feat")]
    ids = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6])
    gen = feature.read_async(ids)
    future = None
    for _ in range(feature.read_async_num_stages(ids.device)):
        future = next(gen)
    assert torch.equal(future.wait(), torch.from_numpy(het.feats["author"]["feat"][ids.numpy()]))


def test_feature_store_refusals(hstore):
    fs = tdgl.FeatureStore(hstore)
    with pytest.raises(KeyError):
        fs.read("node", "field", "feat", torch.tensor([0]))
    with pytest.raises(tdgl.ReadOnlyError):
        fs[("node", PAPER, "feat")].update(torch.zeros(1, 16), torch.tensor([0]))
    with pytest.raises((IndexError, ValueError)):
        fs.read("node", "author", "feat", torch.tensor([10_000]))
    with pytest.raises(KeyError, match="no node type"):
        tdgl.Feature(hstore, node_type="venue")
    with pytest.raises(tierfs.InvalidArgumentError, match="own type and name"):
        tdgl.FeatureStore(hstore, type_name=PAPER)


def test_graphbolt_pipeline_hetero(het, hstore):
    """GraphBolt's own heterogeneous pipeline (ItemSampler -> sample_neighbor on
    sampling_graph(store) -> fetch_feature) with features read through tierfs."""
    gb = pytest.importorskip("dgl.graphbolt")
    graph = tdgl.sampling_graph(hstore)
    assert graph.total_num_nodes == sum(het.num_nodes.values())
    assert graph.total_num_edges == sum(e.shape[1] for e in het.edges.values())
    seeds, labels = het.sets[PAPER]["train"]
    items = gb.ItemSetDict({PAPER: gb.ItemSet((torch.from_numpy(seeds), torch.from_numpy(labels)), names=("seed_nodes", "labels"))})
    pipe = gb.ItemSampler(items, batch_size=64, shuffle=True)
    pipe = pipe.sample_neighbor(graph, [3, 2])
    pipe = pipe.fetch_feature(tdgl.FeatureStore(hstore), node_feature_keys={PAPER: ["feat"], "author": ["feat"]})
    batches = authors = 0
    for mb in gb.DataLoader(pipe, num_workers=0):
        batches += 1
        authors += mb.input_nodes["author"].numel()
        # GraphBolt's original edge ids are DGL's: positions in each edge type's input.
        for sub in mb.sampled_subgraphs:
            for key, csc in sub.sampled_csc.items():
                e = tuple(key.split(":"))
                eids = sub.original_edge_ids[key]
                dst = sub.original_column_node_ids[e[2]].repeat_interleave(csc.indptr.diff())
                src = sub.original_row_node_ids[e[0]][csc.indices]
                ei = het.edges[e]
                assert torch.equal(torch.from_numpy(ei[0][eids.numpy()]), src), e
                assert torch.equal(torch.from_numpy(ei[1][eids.numpy()]), dst), e
        for t in (PAPER, "author"):
            ids = mb.input_nodes[t]
            assert torch.equal(mb.node_features[(t, "feat")], torch.from_numpy(het.feats[t]["feat"][ids.numpy()]))
    assert batches == 5 and authors > 0


# --------------------------------------------------------------------------------------------
# Heterogeneous blocks against dgl.to_block


FANOUTS = [  # DGL's order: input layer first
    {WRITES: 3, WRITTEN_BY: 2, CITES: 4, HAS: 1},
    {WRITES: 2, WRITTEN_BY: 3, CITES: -1, HAS: 1},
]


def _tierfs_sample(hstore, fanouts, seeds, seed, replace=False, seed_type=PAPER):
    per_hop = {e: [layer[e] for layer in reversed(fanouts)] for e in fanouts[0]}
    return hstore.sampler(per_hop, replace=replace, seed=seed).sample(seeds, seed_type)


def _global(sample, e, lo, hi):
    src, _, dst = e
    return sample.node[src][sample.row[e][lo:hi]], sample.node[dst][sample.col[e][lo:hi]]


def _check_against_to_block(store, graph, fanouts, seed_type, seeds, seed, replace, input_order=None):
    """NeighborSampler's blocks for ``seeds`` against dgl.to_block over the frontier of the same
    sampled edges (tierfs's own sample, drawn with the same seed), per layer: dst nodes equal,
    src nodes equal as sets with the dst nodes first, edges equal as (src id, dst id, edge id)
    multisets (edge ids: the sample's CSC positions mapped to input positions); dgl.EID names the
    same edge in DGL's in-memory ``graph`` (built from the input arrays); in-degrees at a layer's
    own hop are min(degree, fanout) without replacement. ``input_order[etype]`` maps the
    sample's CSC positions to input positions (None: they agree)."""
    sampler = tdgl.NeighborSampler(store, fanouts, replace=replace, seed=seed)
    input_nodes, output_nodes, blocks = sampler.sample({seed_type: torch.from_numpy(seeds)})
    sample = _tierfs_sample(store, fanouts, seeds, seed, replace, seed_type)
    ntypes, etypes = graph.ntypes, graph.canonical_etypes
    L = len(fanouts)
    assert len(blocks) == L
    assert set(output_nodes) == {seed_type} and torch.equal(output_nodes[seed_type], torch.from_numpy(seeds))
    for t in ntypes:
        assert torch.equal(input_nodes[t], torch.from_numpy(sample.node[t]))
        assert torch.equal(blocks[0].srcnodes[t].data[dgl.NID], input_nodes[t])
    assert torch.equal(blocks[-1].dstnodes[seed_type].data[dgl.NID], output_nodes[seed_type])
    num_nodes = {t: graph.num_nodes(t) for t in ntypes}
    if input_order is None:
        input_order = {e: np.arange(graph.num_edges(e)) for e in etypes}
    for i, block in enumerate(blocks):
        h = L - 1 - i
        assert block.is_block
        assert set(block.canonical_etypes) == set(etypes)
        # The frontier: every edge sampled at hops 0..h, in global ids, with its store id.
        data, store_eid = {}, {}
        for e in etypes:
            k = int(sum(sample.num_sampled_edges[e][: h + 1]))
            s, d = _global(sample, e, 0, k)
            data[e] = (torch.from_numpy(s), torch.from_numpy(d))
            store_eid[e] = torch.from_numpy(input_order[e][sample.edge[e][:k]])  # DGL's edge ids: input positions
        frontier = dgl.heterograph(data, num_nodes_dict=num_nodes, idtype=torch.int64)
        for e in etypes:
            frontier.edges[e].data["store_eid"] = store_eid[e]
        dst_nodes = {t: torch.from_numpy(sample.node[t][: int(sum(sample.num_sampled_nodes[t][: h + 1]))]) for t in ntypes}
        ref = dgl.to_block(frontier, dst_nodes)
        for t in ntypes:
            ours_dst, ref_dst = block.dstnodes[t].data[dgl.NID], ref.dstnodes[t].data[dgl.NID]
            assert torch.equal(ours_dst, ref_dst), (i, t)
            ours_src, ref_src = block.srcnodes[t].data[dgl.NID], ref.srcnodes[t].data[dgl.NID]
            # dst nodes first in both; the rest the same nodes, numbered in another order.
            assert ours_src.numel() == ref_src.numel(), (i, t)
            assert torch.equal(ours_src[: ours_dst.numel()], ours_dst)
            assert torch.equal(ref_src[: ref_dst.numel()], ref_dst)
            assert torch.equal(torch.sort(ours_src).values, torch.sort(ref_src).values), (i, t)
            if i + 1 < L:  # a block's dst nodes are the next block's src nodes
                assert torch.equal(ours_dst, blocks[i + 1].srcnodes[t].data[dgl.NID])
        for e in etypes:
            src, _, dst = e
            u, v = block.edges(etype=e)
            ours = torch.stack([block.srcnodes[src].data[dgl.NID][u], block.dstnodes[dst].data[dgl.NID][v],
                                block.edges[e].data[dgl.EID]], 1)
            ru, rv = ref.edges(etype=e)
            theirs = torch.stack([ref.srcnodes[src].data[dgl.NID][ru], ref.dstnodes[dst].data[dgl.NID][rv],
                                  ref.edges[e].data["store_eid"]], 1)
            assert ours.shape == theirs.shape, (i, e)
            key = lambda a: a[torch.argsort(a[:, 2] * (1 << 40) + a[:, 0] * (1 << 20) + a[:, 1])]
            assert torch.equal(key(ours), key(theirs)), (i, e)
            # dgl.EID addresses the same edge of DGL's in-memory heterograph.
            gs, gd = graph.find_edges(block.edges[e].data[dgl.EID], etype=e)
            assert torch.equal(gs, ours[:, 0]) and torch.equal(gd, ours[:, 1]), (i, e)
        if not replace:
            for e in etypes:
                f = fanouts[i][e]
                deg = block.in_degrees(etype=e)
                full = graph.in_degrees(block.dstnodes[e[2]].data[dgl.NID], etype=e)
                first = int(sum(sample.num_sampled_nodes[e[2]][:h]))
                want = full[first:] if f == -1 else torch.clamp(full[first:], max=f)
                assert torch.equal(deg[first:], want), (i, e)
    return blocks


@pytest.mark.parametrize("replace", [False, True])
def test_blocks_match_dgl_to_block(het, hstore, hgraph, replace):
    rng = _rng(f"test_blocks_match_dgl_to_block[{replace}]")
    seeds = np.sort(rng.choice(het.sets[PAPER]["train"][0], 24, replace=False))
    seeds[:2] = [0, 1]  # papers without in-edges
    _check_against_to_block(hstore, hgraph, FANOUTS, PAPER, seeds, SEED, replace, {e: het.csc_order(e) for e in het.edges})


def test_blocks_match_dgl_to_block_synth_mag(tmp_path):
    """`tierfs synth --preset ogbn-mag`: four node types, three without features, authors
    without in-edges; the in-memory graph is dgl_graph(store) (checked against raw arrays in
    test_from_graphbolt_types)."""
    cli = REPO / "build" / "tierfs"
    if not cli.exists():
        pytest.skip("no build/tierfs (make build)")
    out = tmp_path / "mag"
    subprocess.run([str(cli), "synth", "--preset", "ogbn-mag", "--scale", "0.005", "--seed", "3", "--out", str(out)],
                   check=True, capture_output=True)
    rng = _rng("test_blocks_match_dgl_to_block_synth_mag")
    with tierfs.open(str(out)) as store:
        graph = tdgl.dgl_graph(store)
        etypes = store.edge_types
        fanouts = [{e: int(rng.integers(-1, 6)) for e in etypes} for _ in range(3)]
        print("fanouts", fanouts)
        seeds = np.sort(rng.choice(store.split("train", node_type=PAPER), 40, replace=False))
        _check_against_to_block(store, graph, fanouts, PAPER, seeds, SEED, replace=False)
        loader = tdgl.DataLoader(store, {PAPER: seeds}, tdgl.NeighborSampler(store, fanouts, seed=1), batch_size=16)
        for input_nodes, output_nodes, blocks in loader:
            assert set(blocks[0].srcnodes[PAPER].data) == {dgl.NID, "feat"}
            assert set(blocks[0].srcnodes["author"].data) == {dgl.NID}
            x = torch.from_numpy(store.gather(input_nodes[PAPER].numpy(), node_type=PAPER))
            assert torch.equal(blocks[0].srcnodes[PAPER].data["feat"], x)
            y = torch.from_numpy(store.labels(output_nodes[PAPER].numpy(), node_type=PAPER))
            assert torch.equal(blocks[-1].dstnodes[PAPER].data["label"], y)


def test_sample_to_blocks_of_a_typed_sample(hstore):
    """sample_to_blocks of a typed tierfs sample gives the heterogeneous blocks NeighborSampler
    gives (the same draw: the same seed, first call), with DGL's edge ids given the store and
    the sample's own without it."""
    seeds = np.arange(3, 40)
    inp, out, blocks = tdgl.NeighborSampler(hstore, FANOUTS, seed=5).sample({PAPER: torch.from_numpy(seeds)})
    sample = _tierfs_sample(hstore, FANOUTS, seeds, 5)
    got_inp, got_out, got = tdgl.sample_to_blocks(sample, store=hstore)
    assert set(got_inp) == set(inp) and all(torch.equal(got_inp[t], inp[t]) for t in inp)
    assert set(got_out) == {PAPER} and torch.equal(got_out[PAPER], torch.from_numpy(seeds))
    assert len(got) == len(blocks) == len(FANOUTS)
    for ours, theirs in zip(got, blocks):
        assert ours.ntypes == theirs.ntypes and ours.canonical_etypes == theirs.canonical_etypes
        for t in theirs.srctypes:
            assert torch.equal(ours.srcnodes[t].data[dgl.NID], theirs.srcnodes[t].data[dgl.NID])
            assert torch.equal(ours.dstnodes[t].data[dgl.NID], theirs.dstnodes[t].data[dgl.NID])
        for e in theirs.canonical_etypes:
            assert all(torch.equal(a, b) for a, b in zip(ours.edges(etype=e), theirs.edges(etype=e)))
            assert torch.equal(ours.edges[e].data[dgl.EID], theirs.edges[e].data[dgl.EID])
    own = tdgl.sample_to_blocks(sample)[2]  # without the store: the sample's own edge ids
    k = int(sum(sample.num_sampled_edges[CITES]))
    assert torch.equal(own[0].edges[CITES].data[dgl.EID], torch.from_numpy(sample.edge[CITES][:k]))
    with pytest.raises(tierfs.InvalidArgumentError, match="dict"):
        tdgl.sample_to_blocks(sample, exclude_eids=torch.tensor([0]))


def test_blocks_not_cumulative(hstore):
    seeds = np.arange(2, 30)
    cum = tdgl.NeighborSampler(hstore, FANOUTS, seed=3)
    own = tdgl.NeighborSampler(hstore, FANOUTS, seed=3, cumulative=False)
    _, _, b_cum = cum.sample({PAPER: seeds})
    _, _, b_own = own.sample({PAPER: seeds})
    sample = _tierfs_sample(hstore, FANOUTS, seeds, 3)
    L = len(FANOUTS)
    for i in range(L):
        h = L - 1 - i
        for e in b_cum[i].canonical_etypes:
            assert b_cum[i].num_edges(e) == sum(sample.num_sampled_edges[e][: h + 1])
            assert b_own[i].num_edges(e) == sample.num_sampled_edges[e][h]
            lo = sum(sample.num_sampled_edges[e][:h])
            assert torch.equal(b_own[i].edges[e].data[dgl.EID], b_cum[i].edges[e].data[dgl.EID][lo:])


def test_fanout_forms(hstore):
    """DGL's forms: an int per layer, a dict by canonical etype, "src:rel:dst" or a unique
    relation name; a dict must name every edge type, as DGL's sample_neighbors requires."""
    seeds = {PAPER: torch.arange(5, 25)}
    by_rel = [{"writes": 3, "written_by": 2, "cites": 4, "has": 1}, {"writes": 2, "written_by": 3, "cites": -1, "has": 1}]
    by_key = [{":".join(e): f for e, f in layer.items()} for layer in FANOUTS]
    ref = tdgl.NeighborSampler(hstore, FANOUTS, seed=1).sample(seeds)
    for form in (by_rel, by_key):
        got = tdgl.NeighborSampler(hstore, form, seed=1).sample(seeds)
        for a, b in zip(ref[2], got[2]):
            for e in a.canonical_etypes:
                assert torch.equal(a.edges[e].data[dgl.EID], b.edges[e].data[dgl.EID])
    ints = tdgl.NeighborSampler(hstore, [2, 3], seed=1)
    assert ints.etype_fanouts == {e: [2, 3] for e in hstore.edge_types}
    with pytest.raises(tierfs.InvalidArgumentError, match="gives no fanout"):
        tdgl.NeighborSampler(hstore, [{WRITES: 2}])
    with pytest.raises(tierfs.Error, match="no edge type"):
        tdgl.NeighborSampler(hstore, [{("paper", "reads", "paper"): 2}])
    # exclude_eids: those edges leave every block, the rest are the same draw (same seed).
    full = tdgl.NeighborSampler(hstore, [-1, -1], seed=1).sample(seeds)[2]
    drop = full[-1].edges[WRITES].data[dgl.EID][::2]
    assert drop.numel() > 0
    got = tdgl.NeighborSampler(hstore, [-1, -1], seed=1).sample_blocks(None, seeds, exclude_eids={"writes": drop})[2]
    for a, b in zip(full, got):
        for e in a.canonical_etypes:
            want = a.edges[e].data[dgl.EID]
            if e == WRITES:
                want = want[~torch.isin(want, drop)]
            assert torch.equal(b.edges[e].data[dgl.EID], want), e
            assert torch.equal(b.srcnodes[e[0]].data[dgl.NID], a.srcnodes[e[0]].data[dgl.NID])
    with pytest.raises(tierfs.InvalidArgumentError, match="dict"):
        ints.sample_blocks(None, seeds, exclude_eids=torch.tensor([0]))
    with pytest.raises(tierfs.KeyNotFoundError, match="does not have"):
        ints.sample_blocks(None, seeds, exclude_eids={("paper", "reads", "paper"): torch.tensor([0])})
    with pytest.raises(tierfs.NotSupportedError, match="one node type"):
        ints.sample({PAPER: torch.tensor([1]), "author": torch.tensor([2])})


def test_sampler_called_as_dgl_calls_it(hstore):
    """DGL's BlockSampler calls sample(g, {ntype: ids}); the graph argument is ignored."""
    sampler = tdgl.NeighborSampler(hstore, FANOUTS, seed=2)
    _, outs, blocks = sampler.sample(None, {PAPER: torch.arange(16), "author": torch.empty(0, dtype=torch.int64)})
    assert set(outs) == {PAPER} and outs[PAPER].tolist() == list(range(16))
    assert blocks[-1].num_dst_nodes(PAPER) == 16 and blocks[-1].num_dst_nodes("author") == 0


# --------------------------------------------------------------------------------------------
# DataLoader


def test_dataloader_hetero(het, hstore, hgraph):
    sampler = tdgl.NeighborSampler(hstore, FANOUTS, seed=4)
    for prefetch in (False, 3):
        loader = tdgl.DataLoader(hstore, {PAPER: "train"}, sampler, batch_size=64, shuffle=True, seed=1, prefetch=prefetch)
        seen = []
        for input_nodes, output_nodes, blocks in loader:
            assert set(output_nodes) == {PAPER}
            seen.append(output_nodes[PAPER])
            for t in ("paper", "author"):
                assert torch.equal(blocks[0].srcnodes[t].data["feat"], hgraph.nodes[t].data["feat"][input_nodes[t]])
            assert "feat" not in blocks[0].srcnodes["field"].data
            assert torch.equal(blocks[-1].dstnodes[PAPER].data["label"], hgraph.nodes[PAPER].data["label"][output_nodes[PAPER]])
        assert len(seen) == len(loader) == 5
        np.testing.assert_array_equal(np.sort(torch.cat(seen).numpy()), het.sets[PAPER]["train"][0])
    ids_loader = tdgl.DataLoader(hstore, {PAPER: torch.arange(10)}, sampler, batch_size=4, prefetch=False)
    assert [o[PAPER].tolist() for _, o, _ in ids_loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    with pytest.raises(tierfs.Error, match="dict"):
        tdgl.DataLoader(hstore, "train", sampler)


@pytest.mark.filterwarnings("ignore:Dataloader CPU affinity")
def test_dgl_dataloader_prefetches_hetero(het, hstore, hgraph):
    """dgl.dataloading.DataLoader over GraphStorage with {ntype: ids}: the lazily prefetched
    features of each type and the seeds' labels come from tierfs."""
    sampler = tdgl.NeighborSampler(
        hstore, FANOUTS, seed=6,
        prefetch_node_feats={PAPER: ["feat"], "author": ["feat"]}, prefetch_labels={PAPER: ["label"]},
    )
    gs = tdgl.GraphStorage(hstore)
    assert gs.ntypes == list(het.num_nodes) and gs.num_nodes(PAPER) == 500
    assert gs.get_node_storage("feat", "author").shape == (300, 8)
    with pytest.raises(KeyError, match="field"):
        gs.get_node_storage("feat", "field")
    train = torch.from_numpy(het.sets[PAPER]["train"][0])
    loader = dgl.dataloading.DataLoader(gs, {PAPER: train}, sampler, batch_size=100, shuffle=True, num_workers=0)
    seen = []
    for input_nodes, output_nodes, blocks in loader:
        for t in (PAPER, "author"):
            assert torch.equal(blocks[0].srcnodes[t].data["feat"], hgraph.nodes[t].data["feat"][input_nodes[t]])
        assert torch.equal(blocks[-1].dstnodes[PAPER].data["label"], hgraph.nodes[PAPER].data["label"][output_nodes[PAPER]])
        seen.append(output_nodes[PAPER])
    assert torch.equal(torch.sort(torch.cat(seen)).values, train)


def test_sampler_pickles(hstore):
    """For spawn workers: a pickled heterogeneous sampler reopens the store and draws the same
    first batch."""
    import pickle

    sampler = tdgl.NeighborSampler(hstore, FANOUTS, seed=9)
    clone = pickle.loads(pickle.dumps(sampler))
    seeds = {PAPER: torch.arange(10, 40)}
    a, b = sampler.sample(seeds)[2], clone.sample(seeds)[2]
    for x, y in zip(a, b):
        for e in x.canonical_etypes:
            assert torch.equal(x.edges[e].data[dgl.EID], y.edges[e].data[dgl.EID])
    clone.store.close()
