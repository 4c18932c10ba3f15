"""tierfs.pyg link loading on a heterogeneous graph (ACM): tierfs.pyg.LinkNeighborLoader with
edge_label_index=(edge type, tensor) and dict num_neighbors yields, batch by batch, what PyG's own
LinkLoader yields over the in-memory HeteroData with tierfs's sampler, and lays the label edges
out as PyG does (edge_label_index/edge_label under the edge type; triplets' src_index under the
source node type, dst_pos_index/dst_neg_index under the destination's)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.loader import LinkLoader  # noqa: E402
from torch_geometric.sampler import EdgeSamplerInput, HeteroSamplerOutput, NegativeSampling  # noqa: E402

import tierfs  # noqa: E402
import tierfs.datasets  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, rng  # noqa: E402
from test_pyg_hetero import assert_same_hetero, in_memory  # noqa: E402

PA, AP = ("paper", "to", "author"), ("author", "to", "paper")
MASKS = ["train_mask", "val_mask", "test_mask"]


@pytest.fixture(scope="module")
def acm(tmp_path_factory):
    data = tierfs.datasets.acm(as_pyg=True)
    path = tierfs.from_pyg(data, tmp_path_factory.mktemp("acm_link") / "acm")
    s = tierfs.open(path, host_cache="1MiB")
    yield data, s
    s.close()


@pytest.mark.parametrize(
    "neg,labels",
    [(None, False), (None, True), ("binary", False), ("binary", True), (NegativeSampling("binary", 2.0), False),
     ("triplet", False), (NegativeSampling("triplet", 3), False)],
)
def test_hetero_link_loader_equals_pyg_link_loader(acm, neg, labels):
    data, store = acm
    r = rng(2601)
    ei = data[PA].edge_index
    pick = torch.from_numpy(r.choice(ei.shape[1], 300, replace=False))
    eli = ei[:, pick]
    edge_label = torch.from_numpy(r.integers(0, 3, 300)) if labels else None
    nn = {et: [4, 2] for et in data.edge_types}
    nn[AP] = [3, -1]
    seed = SEED % 1000
    ours = tierfs.pyg.LinkNeighborLoader(store, nn, edge_label_index=(PA, eli), edge_label=edge_label, neg_sampling=neg, batch_size=64, seed=seed)
    theirs = LinkLoader(in_memory(store, data), link_sampler=tierfs.pyg.NeighborSampler(store, nn, seed=seed), edge_label_index=(PA, eli),
                        edge_label=edge_label, neg_sampling=neg, batch_size=64)
    n = 0
    for b, w in zip(ours, theirs, strict=True):
        assert_same_hetero(b, w, extra=MASKS + ["num_nodes"], ours_extra=["num_nodes"])  # PyG sets num_nodes by its store path
        # the layout, read plainly: the seed edges, in batch order, through n_id
        ids = b[PA].input_id
        if neg is None or NegativeSampling.cast(neg).is_binary():
            lab = b[PA].edge_label_index
            src, dst = b["paper"].n_id[lab[0, : len(ids)]], b["author"].n_id[lab[1, : len(ids)]]
            assert "src_index" not in b["paper"]
        else:
            src, dst = b["paper"].n_id[b["paper"].src_index], b["author"].n_id[b["author"].dst_pos_index]
            amount = NegativeSampling.cast(neg).amount
            assert b["author"].dst_neg_index.shape == ((len(ids),) if amount == 1 else (len(ids), amount))
            assert "edge_label_index" not in b[PA]
        assert torch.equal(src, eli[0, ids]) and torch.equal(dst, eli[1, ids])
        n += 1
    assert n == 5


def test_hetero_sampler_output_and_errors(acm):
    data, store = acm
    nn = {et: [3] for et in data.edge_types}
    sp = tierfs.pyg.NeighborSampler(store, nn, seed=4, exclude_seed_edges=True, reverse_edge_types={PA: AP})
    ei = data[PA].edge_index[:, :50]
    out = sp.sample_from_edges(EdgeSamplerInput(None, ei[0], ei[1], input_type=PA), NegativeSampling("binary"))
    assert isinstance(out, HeteroSamplerOutput) and out.metadata[0] is None
    assert out.metadata[1].shape == (2, 100) and out.metadata[2].dtype == torch.float32
    seeds = set(zip(ei[0].tolist(), ei[1].tolist()))
    for et in (PA, AP):
        s_ids, d_ids = out.node[et[0]][out.row[et]], out.node[et[2]][out.col[et]]
        pairs = set(zip(s_ids.tolist(), d_ids.tolist()))
        assert not pairs & (seeds if et == PA else {(b, a) for a, b in seeds}), et
    with pytest.raises(ValueError, match="name the seed edges' type"):
        sp.sample_from_edges(EdgeSamplerInput(None, ei[0], ei[1]))
    with pytest.raises(tierfs.InvalidArgumentError, match="reverse_edge_types"):
        tierfs.pyg.NeighborSampler(store, nn, undirected=True)
    with pytest.raises(KeyError, match="'paper', 'cites', 'book'.*lacks"):
        tierfs.pyg.LinkNeighborLoader(store, nn, edge_label_index=(("paper", "cites", "book"), ei))
    with pytest.raises(ValueError, match="edge_label_index=\\(edge type"):
        tierfs.pyg.LinkNeighborLoader(store, nn, edge_label_index=ei)
    with pytest.raises(IndexError, match='node type "author"'):
        next(iter(tierfs.pyg.LinkNeighborLoader(store, nn, edge_label_index=(PA, torch.tensor([[0], [10**6]])))))
    # edge type alone: every edge of the type
    loader = tierfs.pyg.LinkNeighborLoader(store, nn, edge_label_index=(PA, None), batch_size=4096)
    assert sum(b[PA].edge_label_index.shape[1] for b in loader) == data[PA].edge_index.shape[1]


@pytest.mark.parametrize("neg,prefetch", [("binary", 2), (NegativeSampling("triplet", 2), 5)])
def test_pipelined_hetero_link_loader_equals_pyg_link_loader_over_stores(acm, neg, prefetch):
    """On a heterogeneous dataset the on-demand loader's pipeline (sampling thread, prefetch
    gather threads) yields, over two shuffled epochs from the same torch seed, exactly what
    PyG's LinkLoader over tierfs's stores with the same sampler yields in the caller's thread;
    stats() covers the epoch and closing mid-epoch stops the threads."""
    data, store = acm
    seed = SEED % 100000
    print(f"torch seed {seed}")
    r = rng(2902)
    ei = data[PA].edge_index
    eli = ei[:, torch.from_numpy(r.choice(ei.shape[1], 250, replace=False))]
    nn = {et: [3, 2] for et in data.edge_types}
    args = dict(neg_sampling=neg, batch_size=48, shuffle=True)
    ours = tierfs.pyg.LinkNeighborLoader(store, nn, edge_label_index=(PA, eli), seed=seed, prefetch=prefetch, **args)
    theirs = LinkLoader(tierfs.pyg.stores(store), link_sampler=tierfs.pyg.NeighborSampler(store, nn, seed=seed),
                        edge_label_index=(PA, eli), filter_per_worker=False, **args)
    torch.manual_seed(seed)
    got = [list(ours) for _ in range(2)]
    s = ours.stats()
    assert s["batches"] == s["stages"]["gather"]["batches"] == len(ours) == 6 and s["bound"]
    torch.manual_seed(seed)
    want = [list(theirs) for _ in range(2)]
    for e in range(2):
        assert len(got[e]) == len(want[e]) == 6
        for a, b in zip(got[e], want[e]):
            assert_same_hetero(a, b)
    it = iter(ours)
    next(it)
    st = ours._run
    assert sum(t.is_alive() for t in st.threads[1:]) == prefetch  # the gatherers (the sampler may be done)
    it.close()
    assert not any(t.is_alive() for t in st.threads)
