"""Training parity for heterogeneous link prediction on ACM (paper -> author links): a GraphSAGE
encoder made heterogeneous by to_hetero with a dot-product decoder, batches from
tierfs.pyg.LinkNeighborLoader (features read from the tierfs dataset) vs PyG's LinkLoader over the
in-memory HeteroData, both sampled (neighbors, binary negatives, seed edges and their reverses
left out) by tierfs.pyg.NeighborSampler with the same seed. Over 5 seeds (model init, shuffle and
sampler seed each) the mean test AUC must agree within 0.01 and be well above chance.

Sized for CI: 32 feature columns, 16 hidden channels, fanouts [3, 2], batches of 1024 seed edges,
2 epochs — about 20 s of CPU a seed for both runs (0.77 to 0.83 test AUC; the 256-column,
32-channel, [5, 3], 512-edge version reached 0.76 to 0.78 at three times the cost)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("torch_geometric")

import torch.nn.functional as F  # noqa: E402
from torch_geometric.loader import LinkLoader  # noqa: E402
from torch_geometric.nn import GraphSAGE, to_hetero  # noqa: E402

import tierfs  # noqa: E402
import tierfs.datasets  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import rng  # noqa: E402
from test_pyg_hetero import in_memory  # noqa: E402
from test_pyg_link_train import auc  # noqa: E402

PA, AP = ("paper", "to", "author"), ("author", "to", "paper")
SEEDS = (3, 4, 5, 6, 7)
DIM, HIDDEN, FANOUTS, BATCH, EPOCHS = 32, 16, [3, 2], 1024, 2


@pytest.fixture(scope="module")
def acm(tmp_path_factory):
    data = tierfs.datasets.acm(as_pyg=True)
    for t in data.node_types:
        data[t].x = data[t].x[:, :DIM].contiguous()  # fewer features: a quick test, the same task
    for k in ("train_mask", "val_mask", "test_mask"):
        del data["paper"][k]
    path = tierfs.from_pyg(data, tmp_path_factory.mktemp("acm_link_train") / "acm")
    store = tierfs.open(path, host_cache="256KiB")
    perm = torch.from_numpy(rng(2701).permutation(data[PA].edge_index.shape[1]))
    ei = data[PA].edge_index[:, perm]
    cut = int(0.85 * ei.shape[1])
    yield in_memory(store, data), store, ei[:, :cut], ei[:, cut:]
    store.close()


def run(data, make_loader, seed: int) -> float:
    torch.manual_seed(seed)
    model = to_hetero(GraphSAGE((-1, -1), HIDDEN, num_layers=2), data.metadata(), aggr="sum")
    opt = None
    train = make_loader("train", seed)
    for _ in range(EPOCHS):
        model.train()
        for b in train:
            z = model(b.x_dict, b.edge_index_dict)
            if opt is None:  # lazy layers have their shapes now
                opt = torch.optim.Adam(model.parameters(), lr=0.01)
            opt.zero_grad()
            eli = b[PA].edge_label_index
            out = (z["paper"][eli[0]] * z["author"][eli[1]]).sum(-1)
            F.binary_cross_entropy_with_logits(out, b[PA].edge_label).backward()
            opt.step()
    model.eval()
    scores, labels = [], []
    with torch.no_grad():
        for b in make_loader("test", seed + 1):
            z = model(b.x_dict, b.edge_index_dict)
            eli = b[PA].edge_label_index
            scores.append((z["paper"][eli[0]] * z["author"][eli[1]]).sum(-1))
            labels.append(b[PA].edge_label)
    return auc(torch.cat(scores), torch.cat(labels))


def test_hetero_link_prediction_auc_parity(acm):
    data, store, train, test = acm
    eli = {"train": train, "test": test}
    nn = {et: FANOUTS for et in data.edge_types}
    link = dict(exclude_seed_edges=True, reverse_edge_types={PA: AP})

    def ours(split, seed):
        torch.manual_seed(seed)  # the DataLoader's shuffle order (nothing else in training draws)
        return tierfs.pyg.LinkNeighborLoader(store, nn, edge_label_index=(PA, eli[split]), neg_sampling="binary",
                                             batch_size=BATCH, shuffle=split == "train", seed=seed, **link)

    def theirs(split, seed):
        torch.manual_seed(seed)
        return LinkLoader(data, link_sampler=tierfs.pyg.NeighborSampler(store, nn, seed=seed, **link), edge_label_index=(PA, eli[split]),
                          neg_sampling="binary", batch_size=BATCH, shuffle=split == "train")

    a = torch.tensor([run(data, ours, seed) for seed in SEEDS])
    b = torch.tensor([run(data, theirs, seed) for seed in SEEDS])
    print(f"ACM paper->author test AUC over seeds {SEEDS}: tierfs {a.tolist()} (mean {a.mean():.4f}), "
          f"in-memory {b.tolist()} (mean {b.mean():.4f})")
    assert a.mean() > 0.7 and b.mean() > 0.7 and a.min() > 0.6 and b.min() > 0.6
    assert abs(float(a.mean() - b.mean())) <= 0.01
