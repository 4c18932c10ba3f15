"""Accuracy parity of half-precision stores (issue 44 item 4): GraphSAGE trained on float32
features in memory (PyG's NodeLoader over a Data / HeteroData, tierfs's sampler) against the same
graph ingested with store_dtype="float16" and "bfloat16" (and float32), through PyG's NodeLoader
over tierfs.pyg.stores(store) (store-*: the same loader, sampler seed, shuffle and model init as
the in-memory arm, so a seed differs only by where the rows come from and their rounding; the
rows are read and cached at half precision and cast to float32 before the model) and through
tierfs.pyg.NeighborLoader(x_dtype=torch.float32) (loader-*: tierfs's pipelined loader, its own
shuffle; loader-f16 against loader-f32 is again the rounding alone).

    PYTHONPATH=python TIERFS_LIB=build/libtierfs.so .venv/bin/python \\
        benchmarks/devvm-2026-12-02-half/half_accuracy.py --dataset cora --seeds 5 [--normalize]

Cora: Planetoid Cora from ../shared/datasets/planetoid-cora (its x is 0/1, which float16 and
bfloat16 hold exactly; --normalize row-normalizes it, PyG's NormalizeFeatures, so the values are
1/k and round); GraphSAGE 1433-64-7, [10,10], batch 32, 50 epochs, test on the 1,000 test nodes
with every neighbour. ACM (shipped with tierfs): to_hetero(GraphSAGE) 32 hidden, [5,5] per edge
type, batch 64, 15 epochs, as python/tests/test_pyg_hetero_train.py (paper x is 0/1; the author
and subject x are means, which round)."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.loader import NodeLoader
from torch_geometric.nn import GraphSAGE, to_hetero

import tierfs
import tierfs.datasets
import tierfs.pyg

ARMS = ("memory-f32", "store-f32", "store-f16", "store-bf16", "loader-f32", "loader-f16")
STORE_DTYPES = {"store-f32": None, "store-f16": "float16", "store-bf16": "bfloat16"}
LOADER_OF = {"loader-f32": "store-f32", "loader-f16": "store-f16"}  # the store a loader arm reads
PAIRED = {"memory-f32": "memory-f32", "store-f32": "memory-f32", "store-f16": "memory-f32", "store-bf16": "memory-f32",
          "loader-f32": "loader-f32", "loader-f16": "loader-f32"}  # the arm a seed differs from only by its rows


def cora_graph(normalize: bool):
    d = tierfs.datasets.read_planetoid(tierfs.datasets.find_planetoid_raw("cora"), "cora")
    x = d["x"]
    if normalize:
        x = (x / np.maximum(x.sum(1, keepdims=True), 1)).astype(np.float32)
    return d, x


def cora_arms(root: str, normalize: bool):
    """{arm: (make_loader(split, batch, shuffle, seed), graph for the model)}, the stores."""
    d, x = cora_graph(normalize)
    stores = {}
    for arm, dt in STORE_DTYPES.items():
        p = tierfs.ingest(os.path.join(root, arm), d["edge_index"], x, labels=d["y"],
                          splits={"train": d["train"], "val": d["val"], "test": d["test"]},
                          undirected=True, dedup=True, drop_self_loops=True, store_dtype=dt)
        stores[arm] = tierfs.open(p, host_cache="2MiB")  # ~360 of 2,708 rows at float32 in memory, twice that at half
    ref = tierfs.open(stores["store-f32"].path)  # the sampler's: the arms' stores count their own reads only
    indptr, indices = ref.csc()
    dst = torch.repeat_interleave(torch.arange(ref.num_nodes()), torch.from_numpy(indptr).diff())
    memory = Data(x=torch.from_numpy(x), y=torch.from_numpy(d["y"]), edge_index=torch.stack([torch.from_numpy(indices), dst]))
    splits = {s: torch.from_numpy(ref.split(s)) for s in ("train", "test")}

    def fan(split):
        return [10, 10] if split == "train" else [-1, -1]

    def node_loader(data):
        return lambda split, batch, shuffle, seed: NodeLoader(
            data, node_sampler=tierfs.pyg.NeighborSampler(ref, fan(split), seed=seed), input_nodes=splits[split],
            batch_size=batch, shuffle=shuffle, filter_per_worker=False)

    def neighbor_loader(store):
        return lambda split, batch, shuffle, seed: tierfs.pyg.NeighborLoader(
            store, fan(split), input_nodes=splits[split], batch_size=batch, shuffle=shuffle, seed=seed, shuffle_seed=seed,
            x_dtype=torch.float32)

    arms = {"memory-f32": node_loader(memory), **{a: node_loader(tierfs.pyg.stores(s)) for a, s in stores.items()},
            **{a: neighbor_loader(stores[of]) for a, of in LOADER_OF.items()}}
    return arms, stores


def train_cora(make_loader, seed: int, epochs: int) -> float:
    torch.manual_seed(seed)
    model = GraphSAGE(1433, 64, num_layers=2, out_channels=7, dropout=0.5)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    train = make_loader("train", 32, True, seed)
    for _ in range(epochs):
        model.train()
        for b in train:
            opt.zero_grad()
            F.cross_entropy(model(b.x.float(), b.edge_index)[: b.batch_size], b.y[: b.batch_size]).backward()
            opt.step()
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for b in make_loader("test", 512, False, seed + 1000):
            correct += int((model(b.x.float(), b.edge_index)[: b.batch_size].argmax(-1) == b.y[: b.batch_size]).sum())
            total += b.batch_size
    return 100.0 * correct / total


def acm_arms(root: str):
    data = tierfs.datasets.acm(as_pyg=True)
    stores = {a: tierfs.open(tierfs.from_pyg(data, os.path.join(root, "acm-" + a), store_dtype=dt), host_cache="4MiB")
              for a, dt in STORE_DTYPES.items()}
    nn = {et: [5, 5] for et in data.edge_types}
    ref = tierfs.open(stores["store-f32"].path)  # the sampler's: the arms' stores count their own reads only
    masks = {"train": data["paper"].train_mask, "test": data["paper"].test_mask}

    def node_loader(d):
        return lambda split, batch, shuffle, seed: NodeLoader(
            d, node_sampler=tierfs.pyg.NeighborSampler(ref, nn, seed=seed), input_nodes=("paper", masks[split]),
            batch_size=batch, shuffle=shuffle)

    def neighbor_loader(store):
        return lambda split, batch, shuffle, seed: tierfs.pyg.NeighborLoader(
            store, nn, input_nodes=("paper", split), batch_size=batch, shuffle=shuffle, seed=seed, shuffle_seed=seed,
            x_dtype=torch.float32)

    arms = {"memory-f32": node_loader(data), **{a: node_loader(tierfs.pyg.stores(s)) for a, s in stores.items()},
            **{a: neighbor_loader(stores[of]) for a, of in LOADER_OF.items()}}
    return arms, stores, data


def floats(x_dict):
    return {t: v.float() for t, v in x_dict.items()}


def train_acm(data, make_loader, seed: int, epochs: int) -> float:
    torch.manual_seed(seed)
    model = to_hetero(GraphSAGE(-1, 32, num_layers=2, out_channels=3), data.metadata(), aggr="sum")
    with torch.no_grad():  # lazy shapes
        b = next(iter(make_loader("train", 8, False, seed + 2)))
        torch.manual_seed(seed)
        model(floats(b.x_dict), b.edge_index_dict)
    train, test = make_loader("train", 64, True, seed), make_loader("test", 500, False, seed + 1)
    opt = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
    for _ in range(epochs):
        model.train()
        for b in train:
            n = b["paper"].batch_size
            opt.zero_grad()
            F.cross_entropy(model(floats(b.x_dict), b.edge_index_dict)["paper"][:n], b["paper"].y[:n]).backward()
            opt.step()
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for b in test:
            n = b["paper"].batch_size
            correct += int((model(floats(b.x_dict), b.edge_index_dict)["paper"][:n].argmax(-1) == b["paper"].y[:n]).sum())
            total += n
    return 100.0 * correct / total


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", choices=["cora", "acm"], default="cora")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=None, help="default 50 (Cora), 15 (ACM)")
    p.add_argument("--normalize", action="store_true", help="Cora: row-normalize x (PyG's NormalizeFeatures)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--arms", default=",".join(ARMS), help="the arms to run (an arm's pair must be among them)")
    a = p.parse_args()
    arm_list = a.arms.split(",")
    if not set(arm_list) <= set(ARMS) or any(PAIRED[arm] not in arm_list for arm in arm_list):
        p.error(f"--arms {a.arms}: want some of {', '.join(ARMS)}, each with the arm it pairs with")
    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(True)
    root = tempfile.mkdtemp(prefix="half-acc-")
    if a.dataset == "cora":
        arms, stores = cora_arms(root, a.normalize)
        epochs = a.epochs or 50
        train = lambda mk, s: train_cora(mk, s, epochs)  # noqa: E731
    else:
        arms, stores, data = acm_arms(root)
        epochs = a.epochs or 15
        train = lambda mk, s: train_acm(data, mk, s, epochs)  # noqa: E731
    acc = {arm: [] for arm in arm_list}
    io = {arm: [0, 0, 0] for arm in arm_list}  # reads, bytes read, bytes requested of the arm's store
    t0 = time.perf_counter()
    for s in range(a.first_seed, a.first_seed + a.seeds):
        for arm in arm_list:
            store = stores.get(LOADER_OF.get(arm, arm))
            before = store.stats()["io"] if store is not None else None
            acc[arm].append(train(arms[arm], s))
            if store is not None:
                after = store.stats()["io"]
                for k, key in enumerate(("reads", "bytes_read", "bytes_requested")):
                    io[arm][k] += after[key] - before[key]
        print(f"seed {s}: " + "  ".join(f"{arm} {acc[arm][-1]:.1f}%" for arm in arm_list), flush=True)
    base = statistics.mean(acc["memory-f32"])
    what = f"{a.dataset}{' (normalized x)' if a.normalize else ''}, {a.seeds} seeds, {epochs} epochs, {time.perf_counter() - t0:.0f} s"
    print(f"\n{what}\n| arm | test accuracy, mean ± std | against memory-f32 | per seed against the arm it pairs with |\n|---|---|---|---|")
    for arm in arm_list:
        v = acc[arm]
        paired = [x - y for x, y in zip(v, acc[PAIRED[arm]])]
        print(f"| {arm} | {statistics.mean(v):.2f} ± {statistics.stdev(v) if len(v) > 1 else 0:.2f} | "
              f"{statistics.mean(v) - base:+.2f} | {PAIRED[arm]}: {min(paired):+.1f} to {max(paired):+.1f} |")
    for arm in arm_list:
        store = stores.get(LOADER_OF.get(arm, arm))
        if store is None:
            continue
        host = next(t for t in store.stats()["tiers"] if t["tier"] == "host")
        reads, read, requested = io[arm]
        print(f"{arm}: {store.dtype_name} rows of {store.row_bytes} B, host tier {host['rows_held']} rows ({host['bytes_held'] / 2**20:.2f} MiB); "
              f"disk {reads / a.seeds:,.0f} reads, {read / a.seeds / 2**20:.1f} MiB read, {requested / a.seeds / 2**20:.1f} MiB requested a seed")
    for store in stores.values():
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
