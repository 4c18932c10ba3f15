"""Classic DGL side: blocks from tierfs samples, FeatureStorage, GraphStorage with
dgl.dataloading.DataLoader, and tierfs.dgl.DataLoader."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import dgl
import dgl.dataloading
import dgl.graphbolt as gb
import dgl.storages
import tierfs
import tierfs.dgl as tdgl


def _seeds(graph, n=40, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).choice(graph.train, n, replace=False))


def _check_structure(graph, store, seeds, fanouts, cumulative, replace=False):
    """Blocks of NeighborSampler(fanouts) against the raw Sample tierfs gives for the same seed
    (fanouts reversed: tierfs counts hops from the seeds, DGL layers from the input)."""
    sampler = tdgl.NeighborSampler(store, fanouts, replace=replace, seed=11, cumulative=cumulative)
    input_nodes, output_nodes, blocks = sampler.sample(seeds)
    sample = store.sampler(list(reversed(fanouts)), replace=replace, seed=11).sample(seeds.numpy())
    nph = np.asarray(sample.nodes_per_hop)
    eph = np.asarray(sample.edges_per_hop)
    nodes = np.asarray(sample.nodes)
    L = len(fanouts)

    assert len(blocks) == L
    assert all(b.is_block for b in blocks)
    assert torch.equal(output_nodes, seeds)
    np.testing.assert_array_equal(input_nodes.numpy(), nodes)
    assert torch.equal(blocks[0].srcdata[dgl.NID], input_nodes)
    assert torch.equal(blocks[-1].dstdata[dgl.NID], output_nodes)
    edges = graph.edge_set()
    deg = graph.in_degree()
    for i, block in enumerate(blocks):
        h = L - 1 - i  # the hop this layer consumes, counted from the seeds
        src_ids = block.srcdata[dgl.NID]
        dst_ids = block.dstdata[dgl.NID]
        # dst nodes are the nodes of hops 0..h, a prefix of the src nodes (hops 0..h+1).
        assert block.num_dst_nodes() == nph[: h + 1].sum()
        assert block.num_src_nodes() == nph[: h + 2].sum()
        assert torch.equal(src_ids[: block.num_dst_nodes()], dst_ids)
        # Consecutive layers chain: a layer's dst nodes are the next layer's src nodes.
        if i + 1 < L:
            assert torch.equal(dst_ids, blocks[i + 1].srcdata[dgl.NID])
        # Edge counts per hop match the Sample.
        expect = eph[: h + 1].sum() if cumulative else eph[h]
        assert block.num_edges() == expect
        # Every block edge is an edge of the graph (src -> dst, global ids).
        u, v = block.edges()
        pairs = zip(src_ids[u].tolist(), dst_ids[v].tolist())
        assert all(p in edges for p in pairs)
        # Fanouts: without replacement a node reached at hop h gets min(degree, fanout) edges
        # in the block of hop h (all of them for -1).
        first = int(nph[:h].sum())  # dst nodes first reached at hop h: [first, num_dst)
        in_deg = block.in_degrees().numpy()
        new_dst = dst_ids[first:].numpy()
        f = fanouts[i]
        if not replace:
            want = deg[new_dst] if f < 0 else np.minimum(deg[new_dst], f)
            np.testing.assert_array_equal(in_deg[first:], want)
        else:
            np.testing.assert_array_equal(in_deg[first:], np.where(deg[new_dst] > 0, f, 0))
        if not cumulative and h > 0:
            assert in_deg[:first].sum() == 0  # older dst nodes have no edges of this hop
    _check_eids(graph, store, blocks)
    lo = 0 if cumulative else int(eph[:-1].sum())
    csc = tdgl.csc_edge_ids(store, blocks[0].edata[dgl.EID])
    np.testing.assert_array_equal(csc.numpy(), np.asarray(sample.e_id)[lo:])
    return input_nodes, output_nodes, blocks


def _check_eids(graph, store, blocks):
    """Each block edge's dgl.EID is its position in the ingested edge list (src[eid] -> dst[eid]
    is the edge), and csc_edge_ids maps it to its position in the store's CSC: indices[csc] is
    its src node and the dst whose indptr range holds csc its dst node."""
    indptr, indices = store.csc()
    for block in blocks:
        eid = block.edata[dgl.EID]
        assert eid.dtype == torch.int64 and eid.numel() == block.num_edges()
        u, v = block.edges()
        src = block.srcdata[dgl.NID][u].numpy()
        dst = block.dstdata[dgl.NID][v].numpy()
        e = eid.numpy()
        assert ((e >= 0) & (e < len(graph.src))).all()
        np.testing.assert_array_equal(graph.src[e], src)
        np.testing.assert_array_equal(graph.dst[e], dst)
        csc = tdgl.csc_edge_ids(store, eid).numpy()
        np.testing.assert_array_equal(indices[csc], src)
        np.testing.assert_array_equal(np.searchsorted(indptr, csc, side="right") - 1, dst)


@pytest.mark.parametrize("cumulative", [True, False])
@pytest.mark.parametrize("fanouts", [[3, 5], [2, 4, 3], [-1, 2]])
def test_block_structure(graph, store, fanouts, cumulative):
    _check_structure(graph, store, _seeds(graph), fanouts, cumulative)


def test_block_structure_with_replacement(graph, store):
    _check_structure(graph, store, _seeds(graph, 30, seed=4), [3, 6], True, replace=True)


def test_cumulative_blocks_give_every_dst_node_its_neighbors(graph, store):
    seeds = _seeds(graph, 30, seed=5)
    _, _, blocks = tdgl.NeighborSampler(store, [4, 4], seed=1).sample(seeds)
    deg = graph.in_degree()
    for block in blocks:
        dst = block.dstdata[dgl.NID].numpy()
        in_deg = block.in_degrees().numpy()
        assert ((in_deg > 0) == (deg[dst] > 0)).all()


def test_dgl_call_form_and_determinism(graph, store):
    seeds = _seeds(graph, 25, seed=6)
    a = tdgl.NeighborSampler(store, [3, 3], seed=5).sample(seeds)
    b = tdgl.NeighborSampler(store, [3, 3], seed=5).sample(None, seeds)  # sample(g, seeds)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    for x, y in zip(a[2], b[2]):
        assert all(torch.equal(p, q) for p, q in zip(x.edges(), y.edges()))
    assert isinstance(tdgl.NeighborSampler(store, [3]), dgl.dataloading.BlockSampler)


def test_sample_to_blocks_of_a_store_sample(graph, store):
    seeds = _seeds(graph, 10, seed=8)
    sample = store.sampler([5, 5], seed=3).sample(seeds)
    inp, out, blocks = tdgl.sample_to_blocks(sample)
    assert torch.equal(out, seeds)
    assert blocks[-1].num_edges() == int(sample.edges_per_hop[0])
    assert blocks[0].num_edges() == int(sample.edges_per_hop.sum())


def test_sampler_errors(graph, store):
    with pytest.raises(ValueError):
        tdgl.NeighborSampler(store, [])
    with pytest.raises(tierfs.InvalidArgumentError):
        tdgl.NeighborSampler(store, [3, -2])
    sampler = tdgl.NeighborSampler(store, [3])
    with pytest.raises(tierfs.Error):
        sampler.sample(torch.tensor([graph.num_nodes]))
    with pytest.raises(tierfs.InvalidArgumentError, match="one edge type"):
        sampler.sample(None, torch.tensor([1]), exclude_eids={"a": torch.tensor([0]), "b": torch.tensor([1])})


# FeatureStorage --------------------------------------------------------------------------


def test_feature_storage_fetch(graph, store):
    feat = tdgl.FeatureStorage(store)
    assert isinstance(feat, dgl.storages.FeatureStorage)
    ids = torch.tensor([9, 1, 9, graph.num_nodes - 1])
    got = feat.fetch(ids, "cpu")
    np.testing.assert_array_equal(got.numpy(), graph.x[ids.numpy()])
    np.testing.assert_array_equal(feat[ids.numpy()].numpy(), graph.x[ids.numpy()])
    got = feat.fetch({"_N": ids}, torch.device("cpu"), pin_memory=False)
    np.testing.assert_array_equal(got["_N"].numpy(), graph.x[ids.numpy()])
    lab = tdgl.FeatureStorage(store, "label").fetch(ids, "cpu")
    np.testing.assert_array_equal(lab.numpy(), graph.y[ids.numpy()])
    assert feat.shape == (graph.num_nodes, graph.x.shape[1]) and len(feat) == graph.num_nodes
    gs = tdgl.GraphStorage(store)
    assert gs.get_node_storage("feat").kind == "feat" and gs.get_node_storage("label").kind == "label"
    with pytest.raises(KeyError):
        gs.get_node_storage("missing")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_feature_storage_fetch_to_cuda(graph, store):
    got = tdgl.FeatureStorage(store).fetch(torch.tensor([1, 2]), "cuda", pin_memory=True)
    assert got.is_cuda
    np.testing.assert_array_equal(got.cpu().numpy(), graph.x[[1, 2]])


# Loaders ---------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Dataloader CPU affinity")
def test_dgl_dataloader_prefetches_from_tierfs(graph, store):
    sampler = tdgl.NeighborSampler(
        store, [3, 3], seed=2, prefetch_node_feats=["feat"], prefetch_labels=["label"]
    )
    loader = dgl.dataloading.DataLoader(
        tdgl.GraphStorage(store),
        torch.from_numpy(graph.train),
        sampler,
        batch_size=50,
        shuffle=True,
        drop_last=False,
        num_workers=0,
    )
    seen = []
    for input_nodes, output_nodes, blocks in loader:
        np.testing.assert_array_equal(blocks[0].srcdata["feat"].numpy(), graph.x[input_nodes.numpy()])
        np.testing.assert_array_equal(blocks[-1].dstdata["label"].numpy(), graph.y[output_nodes.numpy()])
        seen.append(output_nodes)
    np.testing.assert_array_equal(np.sort(torch.cat(seen).numpy()), graph.train)


@pytest.mark.parametrize("prefetch", [True, False])
def test_tierfs_dataloader(graph, store, prefetch):
    sampler = tdgl.NeighborSampler(store, [3, 3], seed=2)
    loader = tdgl.DataLoader(store, "train", sampler, batch_size=64, shuffle=True, seed=3, prefetch=prefetch)
    assert len(loader) == -(-len(graph.train) // 64)
    epochs = []
    for _ in range(2):
        order = []
        for input_nodes, output_nodes, blocks in loader:
            assert torch.equal(blocks[0].srcdata[dgl.NID], input_nodes)
            np.testing.assert_array_equal(blocks[0].srcdata["feat"].numpy(), graph.x[input_nodes.numpy()])
            np.testing.assert_array_equal(blocks[-1].dstdata["label"].numpy(), graph.y[output_nodes.numpy()])
            order.append(output_nodes)
        order = torch.cat(order).numpy()
        np.testing.assert_array_equal(np.sort(order), graph.train)
        epochs.append(order)
    assert not np.array_equal(epochs[0], epochs[1])  # reshuffled per epoch


def test_tierfs_dataloader_pipelined_equals_inline(graph, store):
    """The pipelined loader (several gathers in flight) gives the inline loader's batches."""

    def epoch(prefetch):
        sampler = tdgl.NeighborSampler(store, [3, 2], seed=7)
        loader = tdgl.DataLoader(store, "train", sampler, batch_size=48, shuffle=True, seed=4, prefetch=prefetch)
        return loader, list(loader)

    pipelined, got = epoch(3)
    _, want = epoch(False)
    assert len(got) == len(want) > 2
    for (i1, o1, b1), (i2, o2, b2) in zip(got, want):
        assert torch.equal(i1, i2) and torch.equal(o1, o2)
        assert torch.equal(b1[0].srcdata["feat"], b2[0].srcdata["feat"])
        for x, y in zip(b1, b2):
            assert torch.equal(torch.stack(x.edges()), torch.stack(y.edges()))
    st = pipelined.stats()
    assert st["batches"] == len(got) and st["depth"] == 3


def test_tierfs_dataloader_drop_last_and_break(graph, store):
    sampler = tdgl.NeighborSampler(store, [2])
    loader = tdgl.DataLoader(store, graph.val, sampler, batch_size=32, drop_last=True)
    assert len(loader) == len(graph.val) // 32
    assert sum(1 for _ in loader) == len(loader)
    for i, _ in enumerate(loader):  # leaving early stops the prefetch thread cleanly
        if i == 1:
            break


def test_tierfs_dataloader_takes_the_loader_table(graph, store):
    """seed and prefetch are the loader table's (tierfs._options.LOADER: its default, its check,
    its docs); shuffle and drop_last are DGL's arguments at DGL's defaults; prefetch keeps DGL's
    True / False form."""
    from tierfs import _options

    sampler = tdgl.NeighborSampler(store, [2])
    assert tdgl.DataLoader(store, graph.val, sampler).prefetch == _options.defaults("loader")["prefetch"]
    assert tdgl.DataLoader(store, graph.val, sampler, prefetch=False).prefetch == 0 == tdgl.DataLoader(store, graph.val, sampler, prefetch=0).prefetch
    assert tdgl.DataLoader(store, graph.val, sampler, prefetch=2, seed=5).seed == 5
    with pytest.raises(tierfs.InvalidArgumentError, match=r"tierfs.dgl.DataLoader: prefetch 1000 must be from 1 to 256"):
        tdgl.DataLoader(store, graph.val, sampler, prefetch=1000)
    with pytest.raises(tierfs.InvalidArgumentError, match=r"no loader option 'planned_epochs'; the options are shuffle, drop_last, prefetch, seed"):
        tdgl.DataLoader(store, graph.val, sampler, planned_epochs=2)
    ours = inspect.signature(tdgl.DataLoader.__init__).parameters
    assert not {"seed", "prefetch"} & set(ours)
    theirs = inspect.signature(dgl.dataloading.DataLoader.__init__).parameters
    assert all(ours[n].default == theirs[n].default for n in ("shuffle", "drop_last"))
    assert "prefetch (int from 1 to 256; default 4)" in tdgl.DataLoader.__doc__ and "seed (int; default 0)" in tdgl.DataLoader.__doc__


def _dgl_loader(graph, store, **kwargs):
    sampler = tdgl.NeighborSampler(store, [3, 3], prefetch_node_feats=["feat"], prefetch_labels=["label"])
    return dgl.dataloading.DataLoader(
        tdgl.GraphStorage(store), torch.from_numpy(graph.train), sampler, batch_size=100, **kwargs
    )


@pytest.mark.filterwarnings("ignore:Dataloader CPU affinity")
def test_dgl_dataloader_forked_workers_fail_cleanly(graph, store):
    """The library runs a Go runtime, which does not survive fork(): a forked worker gets a
    tierfs.ForkedProcessError instead of hanging."""
    with pytest.raises(tierfs.ForkedProcessError):
        for _ in _dgl_loader(graph, store, num_workers=1, multiprocessing_context="fork", timeout=120):
            pass


@pytest.mark.filterwarnings("ignore:Dataloader CPU affinity")
def test_dgl_dataloader_spawn_workers(graph, store):
    """Spawned workers get the sampler pickled (the store reopens by path) and sample there."""
    seen = []
    for input_nodes, output_nodes, blocks in _dgl_loader(
        graph, store, num_workers=1, multiprocessing_context="spawn", timeout=300
    ):
        np.testing.assert_array_equal(blocks[0].srcdata["feat"].numpy(), graph.x[input_nodes.numpy()])
        seen.append(output_nodes)
    np.testing.assert_array_equal(np.sort(torch.cat(seen).numpy()), graph.train)


def test_block_eids_are_input_positions(graph, store):
    """dgl.EID of random seeds' blocks against the ingested edge list and the store's CSC,
    dgl_graph's edges (edge i the input's edge i) and the e_id of the same Sample mapped to
    input positions (what the PyG loader gives)."""
    seed = int(np.random.default_rng().integers(1 << 31))
    print(f"seed {seed}")
    r = np.random.default_rng(seed)
    g = tdgl.dgl_graph(store)
    for _ in range(4):
        fanouts = [int(f) for f in r.choice([-1, 1, 3, 6], size=int(r.integers(1, 4)))]
        cumulative = bool(r.integers(2))
        seeds = torch.from_numpy(r.choice(graph.num_nodes, int(r.integers(1, 60)), replace=False))
        sampler_seed = int(r.integers(1 << 20))
        _, _, blocks = tdgl.NeighborSampler(store, fanouts, seed=sampler_seed, cumulative=cumulative).sample(seeds)
        _check_eids(graph, store, blocks)
        sample = store.sampler(list(reversed(fanouts)), seed=sampler_seed).sample(seeds)
        eph = np.asarray(sample.edges_per_hop)
        csc_to_input = np.argsort(graph.dst, kind="stable")  # the CSC tierfs builds, in input positions
        want = csc_to_input[np.asarray(sample.e_id)[: eph[0]]]
        np.testing.assert_array_equal(blocks[-1].edata[dgl.EID].numpy(), want, err_msg=f"seed {seed}")
        np.testing.assert_array_equal(tdgl.dgl_edge_ids(store, np.asarray(sample.e_id)).numpy(), csc_to_input[np.asarray(sample.e_id)])
        # Without the store, sample_to_blocks keeps tierfs's own ids (CSC positions).
        csc_blocks = tdgl.sample_to_blocks(sample, cumulative=cumulative)[2]
        np.testing.assert_array_equal(csc_blocks[-1].edata[dgl.EID].numpy(), np.asarray(sample.e_id)[: eph[0]])
        for block in blocks:
            u, v = block.edges()
            gu, gv = g.find_edges(block.edata[dgl.EID])
            assert torch.equal(gu, block.srcdata[dgl.NID][u]) and torch.equal(gv, block.dstdata[dgl.NID][v]), f"seed {seed}"


def _triples(block) -> list:
    """A block's edges as sorted (src id, dst id, dgl.EID) triples."""
    u, v = block.edges()
    t = torch.stack([block.srcdata[dgl.NID][u], block.dstdata[dgl.NID][v], block.edata[dgl.EID]], 1)
    return sorted(map(tuple, t.tolist()))


@pytest.mark.parametrize("exclude", [False, True])
def test_blocks_match_dgls_own_sampler_on_the_input_graph(graph, store, exclude):
    """Every neighbor (fanout -1) of random seeds: each block of tierfs.dgl.NeighborSampler holds
    the edges DGL's own NeighborSampler gives on dgl.graph((src, dst)) of the ingested edge list
    (the user's DGLGraph), edge ids included. With exclude_eids (ids of that graph) the output
    layer matches too (DGL leaves them out before its draw, tierfs after; with every neighbor
    drawn the edges are the same, while a node reached only through an excluded edge stays in
    tierfs's sample, so the farther layers are compared without exclusion only)."""
    seed = int(np.random.default_rng().integers(1 << 31))
    print(f"seed {seed}")
    r = np.random.default_rng(seed)
    g = dgl.graph((torch.from_numpy(graph.src), torch.from_numpy(graph.dst)), num_nodes=graph.num_nodes, idtype=torch.int64)
    seeds = torch.from_numpy(np.sort(r.choice(graph.num_nodes, 25, replace=False)))
    drop = torch.from_numpy(r.choice(g.num_edges(), g.num_edges() // 3, replace=False)) if exclude else None
    _, _, theirs = dgl.dataloading.NeighborSampler([-1, -1]).sample(g, seeds, exclude_eids=drop)
    _, _, ours = tdgl.NeighborSampler(store, [-1, -1], seed=seed).sample(None, seeds, exclude_eids=drop)
    layers = [1] if exclude else [0, 1]
    for i in layers:
        assert _triples(ours[i]) == _triples(theirs[i]), f"layer {i}, seed {seed}"
    if exclude:
        assert not set(ours[0].edata[dgl.EID].tolist()) & set(drop.tolist())


@pytest.mark.parametrize("how", ["undirected", "drop_self_loops"])
def test_edge_ids_where_no_numbering_follows_the_input(tmp_path, how):
    """An undirected ingest (both directions under one input position) and one that drops self
    loops have no edge numbering in input order: DGL's ids are the CSC positions there, the same
    in blocks, dgl_graph, exclude_eids and the id maps; DGL's wrapper over dgl_graph excludes
    exactly the seed edges' ids."""
    r = np.random.default_rng(31)
    print("seed 31")
    n = 50
    src, dst = r.integers(0, n, 300), r.integers(0, n, 300)
    src[:5] = dst[:5]  # self loops
    np.save(tmp_path / "edges.npy", np.stack([src, dst]))
    np.save(tmp_path / "x.npy", r.random((n, 4), dtype=np.float32))
    kw = {"undirected": True} if how == "undirected" else {"drop_self_loops": True}
    out = tierfs.ingest(str(tmp_path / "ds"), edges=str(tmp_path / "edges.npy"), features=str(tmp_path / "x.npy"), **kw)
    with tierfs.open(out) as s:
        indptr, indices = s.csc()
        g = tdgl.dgl_graph(s)
        u, v = g.edges()
        np.testing.assert_array_equal(u.numpy(), indices)
        np.testing.assert_array_equal(v.numpy(), np.repeat(np.arange(n), np.diff(indptr)))
        ids = torch.arange(len(indices))
        assert torch.equal(tdgl.csc_edge_ids(s, ids), ids) and torch.equal(tdgl.dgl_edge_ids(s, ids), ids)
        seeds = torch.arange(0, n, 3)
        _, _, blocks = tdgl.NeighborSampler(s, [-1]).sample(seeds)
        _check_eids_csc(s, blocks[0])
        eids = torch.from_numpy(r.choice(len(indices), 20, replace=False))
        sampler = dgl.dataloading.as_edge_prediction_sampler(tdgl.NeighborSampler(s, [-1]), exclude="self")
        _, pair, blocks = sampler.sample(g, eids)
        assert not set(blocks[0].edata[dgl.EID].tolist()) & set(eids.tolist())
        _check_eids_csc(s, blocks[0])


def _check_eids_csc(store, block):
    indptr, indices = store.csc()
    u, v = block.edges()
    e = block.edata[dgl.EID].numpy()
    np.testing.assert_array_equal(indices[e], block.srcdata[dgl.NID][u].numpy())
    np.testing.assert_array_equal(np.searchsorted(indptr, e, side="right") - 1, block.dstdata[dgl.NID][v].numpy())


# Whole-topology helpers ------------------------------------------------------------------


def test_dgl_graph_and_sampling_graph_match_the_ingested_edges(graph, store):
    indptr, indices = graph.csc()
    g = tdgl.dgl_graph(store)
    assert (g.num_nodes(), g.num_edges()) == (graph.num_nodes, len(graph.src))
    u, v = g.edges()  # edge i is the input's edge i, as dgl.graph((src, dst)) numbers them
    np.testing.assert_array_equal(u.numpy(), graph.src)
    np.testing.assert_array_equal(v.numpy(), graph.dst)
    sg = tdgl.sampling_graph(store)
    np.testing.assert_array_equal(sg.csc_indptr.numpy(), indptr)
    np.testing.assert_array_equal(sg.indices.numpy(), indices)
    # GraphBolt's original edge ids of the CSC are the input positions.
    order = np.argsort(graph.dst, kind="stable")
    np.testing.assert_array_equal(sg.edge_attributes[gb.ORIGINAL_EDGE_ID].numpy(), order)
