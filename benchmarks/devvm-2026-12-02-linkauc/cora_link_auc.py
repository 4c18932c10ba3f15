"""Held-out link AUC on Cora: GraphSAGE + dot product trained 15 epochs through
tierfs.pyg.LinkNeighborLoader, on demand vs planned_epochs=K (fresh rounds) vs planned_epochs=K,
reuse_samples=True (epoch e replays planned epoch e mod K: the old behaviour). Per seed: the
same model init, sampler seed and split; only the loader arm differs."""
import argparse, os, sys, tempfile, time
import numpy as np, torch, torch.nn.functional as F
from torch_geometric.nn import GraphSAGE
import tierfs, tierfs.pyg
from tierfs.datasets import read_planetoid

p = argparse.ArgumentParser()
p.add_argument("--seeds", type=int, default=5)
p.add_argument("--first-seed", type=int, default=0)
p.add_argument("--epochs", type=int, default=15)
p.add_argument("--k", type=int, default=2)
p.add_argument("--batch", type=int, default=256)
p.add_argument("--arms", default="on-demand,rounds,reuse")
a = p.parse_args()
torch.set_num_threads(2)
raw = read_planetoid("/work/shared/datasets/planetoid-cora/raw", "cora")
x, ei = raw["x"], raw["edge_index"]
n = x.shape[0]
und = ei[:, ei[0] < ei[1]]  # one direction of each undirected pair
r = np.random.default_rng(2024)
perm = r.permutation(und.shape[1])
n_test = int(0.15 * und.shape[1])
test_pos, train_und = und[:, perm[:n_test]], und[:, perm[n_test:]]
train_edges = np.concatenate([train_und, train_und[::-1]], axis=1)  # the message-passing graph: train pairs, both ways
have = set((train_edges[0] * n + train_edges[1]).tolist()) | set((ei[0] * n + ei[1]).tolist())
neg = []
while len(neg) < n_test:
    s, d = r.integers(0, n, 2)
    if s != d and s * n + d not in have:
        neg.append((s, d))
test_neg = np.array(neg).T
root = tempfile.mkdtemp(prefix="cora-link-")
path = tierfs.ingest(os.path.join(root, "g"), train_edges.astype(np.int64), x)
store = tierfs.open(path, host_cache="512KiB")  # ~90 of 2708 rows in memory: the rest read from disk / the plan
full_ei = torch.from_numpy(train_edges)
X = torch.from_numpy(x)


def auc(score, label):
    order = np.argsort(score, kind="stable")
    ranks = np.empty(len(score)); ranks[order] = np.arange(1, len(score) + 1)
    pos = label > 0
    return (ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum())


def run(arm, seed):
    torch.manual_seed(seed)
    model = GraphSAGE(x.shape[1], 64, num_layers=2)
    opt = torch.optim.Adam(model.parameters(), lr=0.005)
    opts = {} if arm == "on-demand" else dict(planned_epochs=a.k, reuse_samples=arm == "reuse")
    loader = tierfs.pyg.LinkNeighborLoader(store, [10, 5], edge_label_index=torch.from_numpy(train_und), neg_sampling="binary",
                                           batch_size=a.batch, shuffle=True, seed=1000 + seed, shuffle_seed=seed, **opts)
    t = time.perf_counter()
    for _ in range(a.epochs):
        model.train()
        for b in loader:
            opt.zero_grad()
            z = model(b.x, b.edge_index)
            out = (z[b.edge_label_index[0]] * z[b.edge_label_index[1]]).sum(-1)
            F.binary_cross_entropy_with_logits(out, b.edge_label).backward()
            opt.step()
    took = time.perf_counter() - t
    if hasattr(loader, "close"):
        loader.close()
    model.eval()
    with torch.no_grad():
        z = model(X, full_ei)
        pairs = np.concatenate([test_pos, test_neg], axis=1)
        score = (z[pairs[0]] * z[pairs[1]]).sum(-1).numpy()
    return auc(score, np.r_[np.ones(n_test), np.zeros(n_test)]), took


arms = a.arms.split(",")
res = {arm: [] for arm in arms}
print(f"Cora: {n} nodes, {train_und.shape[1]} train pairs, {n_test} test pairs (+{n_test} negatives); K={a.k}, {a.epochs} epochs, batch {a.batch}")
for seed in range(a.first_seed, a.first_seed + a.seeds):
    for arm in arms:
        v, took = run(arm, seed)
        res[arm].append(v)
        print(f"seed {seed} {arm:10s} AUC {v:.4f}  ({took:.1f} s)", flush=True)
for arm in arms:
    v = np.array(res[arm])
    print(f"{arm:10s} mean {v.mean():.4f} ± {v.std():.4f}" + ("" if arm == "on-demand" or "on-demand" not in res else
          f"  vs on demand {100 * (v - np.array(res['on-demand'])).mean():+.2f} pts (per seed {', '.join(f'{100*d:+.2f}' for d in v - np.array(res['on-demand']))})"))
