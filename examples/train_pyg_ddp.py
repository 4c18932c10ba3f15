#!/usr/bin/env python3
"""Data-parallel GraphSAGE (PyG) over torch.distributed, one process per GPU, with the ranks'
GPU caches shared as one (tierfs.distributed, docs/distributed.md) or replicated.

    torchrun --standalone --nproc_per_node=2 examples/train_pyg_ddp.py --data /data/igb \\
        --gpu-cache 2GB --host-cache 8GB --cache-mode shared
    torchrun --standalone --nproc_per_node=2 examples/train_pyg_ddp.py --synth 200000 --cache-mode replicated
    python examples/train_pyg_ddp.py --synth 20000 --epochs 1      # one process, no torchrun
    python examples/train_pyg_ddp.py                               # one process, a small synthetic graph

Without --data the ranks train on a synthetic graph (--synth N nodes, default 5000) written once
to ./tierfs-examples/ddp-synth-N-DIM in the working directory and reused from there.

The only tierfs-specific line is the open call: ``tierfs.open(..., cache_mode=...)``; the loader
(tierfs.pyg.NeighborLoader) splits the training seeds across ranks as DistributedSampler does, so
every rank runs the same number of batches. NCCL where there is a GPU, gloo otherwise. Rank 0
prints per epoch the global seeds/s, per batch (mean over ranks) the rows read from SSD and the
bytes of feature rows received from peers, and where rank 0's batches spent their time (the
loader's sample, gather — of which the peer exchange — and train stages, the stage that bounds
the loop, and how peer rows travel); ``--json FILE`` writes those figures.

``--place`` places the tiers by a profile first (``store.place(fanouts=..., batch_size=...,
batches=--place-batches)``, a collective: each rank samples batches of its own seed share, the
counts are summed over the ranks and ownership is decided from the sum); the time it took is
printed and in the JSON (``place``). ``--planned-epochs K`` serves planned epochs (each rank's
share of every epoch packed, the rows other ranks own exchanged; docs/planned.md). On a GPU the
sampler draws on the GPU (``--gpu-topology device``; ``none`` samples on the host), and rank 0
also prints the peer exchange step by step (``exchange_steps_ms`` in the store's stats).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
try:
    import tierfs
except ImportError:  # a checkout: use python/ and build/
    sys.path.insert(0, str(REPO / "python"))
    import tierfs
import tierfs.pyg
from torch.nn.parallel import DistributedDataParallel
from torch_geometric.nn import GraphSAGE

SYNTH_NODES = 5000  # nodes of the default synthetic graph (a few seconds an epoch on a CPU)


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=None,
                   help="dataset directory (default: ./tierfs-examples/ddp-synth-N-DIM, a synthetic graph written there once)")
    p.add_argument("--synth", type=int, default=None, metavar="N",
                   help=f"write a synthetic graph of N nodes to --data first, replacing what it holds (default without --data: {SYNTH_NODES})")
    p.add_argument("--dim", type=int, default=128, help="feature dim of --synth")
    p.add_argument("--cache-mode", choices=["shared", "replicated"], default="shared")
    p.add_argument("--gpu-cache", default="64MB", help="per-rank GPU tier (emulated by the host tier without a GPU)")
    p.add_argument("--host-cache", default="64MB", help="host tier: per rank, or per host with --host-tier per_host")
    p.add_argument("--host-tier", choices=["per_rank", "per_host"], default="per_rank",
                   help="per_host: one host tier per host in shared memory, shared by its ranks")
    p.add_argument("--gpu-topology", choices=["device", "pinned", "none"], default="device",
                   help="where the GPU sampler reads the graph on a GPU (device memory, pinned host memory) or none: sample on the host")
    p.add_argument("--fanouts", default="25,10")
    p.add_argument("--place", action="store_true",
                   help="place the tiers by a profile before training: every rank samples --place-batches batches of its own seed "
                        "share with --fanouts, the counts are summed over the ranks, and ownership comes from the sum (store.place)")
    p.add_argument("--place-batches", type=int, default=64,
                   help="batches each rank profiles with --place (default 64: a few epochs of a small share; too few batches rank rows by noise)")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=None,
                   help="seeds per batch per rank (default: 1024; 128 on the default synthetic graph, whose train split is small)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--max-batches", type=int, default=0, help="stop each epoch after this many batches (0: all)")
    p.add_argument("--prefetch", type=int, default=4)
    p.add_argument("--planned-epochs", type=int, default=0,
                   help="K > 0: serve planned epochs (each rank's share packed for one large read a batch; the next K planned while these train)")
    p.add_argument("--timeout", type=float, default=120, help="seconds a peer exchange waits for the other ranks")
    p.add_argument("--json", help="write the figures of the last epoch to this file (rank 0)")
    args = p.parse_args()
    args.force = args.data is not None and args.synth is not None  # a named --data is rewritten only when asked
    if args.batch_size is None:
        args.batch_size = 128 if args.data is None and args.synth is None else 1024
    if args.data is None:
        args.synth = args.synth or SYNTH_NODES
        args.data = str(Path("tierfs-examples") / f"ddp-synth-{args.synth}-{args.dim}")
    elif args.synth is None and not (Path(args.data) / "manifest.json").is_file():
        p.error(f"--data {args.data} holds no tierfs dataset (add --synth N to write a synthetic one there)")
    return args


def init() -> tuple:
    """(rank, world size, device): from torchrun's environment, else a one-process group."""
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
        backend = "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
    dist.init_process_group(backend, timeout=datetime.timedelta(minutes=10), device_id=device if device.type == "cuda" else None)
    return dist.get_rank(), dist.get_world_size(), device


def main() -> None:
    args = parse()
    rank, world, device = init()
    if args.synth and rank == 0 and (args.force or not (Path(args.data) / "manifest.json").is_file()):
        tierfs.synth(args.data, nodes=args.synth, avg_degree=10, dim=args.dim, force=args.force)
        print(f"synthesized {args.synth} nodes into {args.data}")
    dist.barrier()
    gpu = dict(gpu_topology=args.gpu_topology, topology_memory="64GB") if device.type == "cuda" and args.gpu_topology != "none" else {}
    store = tierfs.open(args.data, gpu_cache=args.gpu_cache, host_cache=args.host_cache, device=str(device),
                        cache_mode=args.cache_mode, timeout=args.timeout, host_tier=args.host_tier, **gpu)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    placed = None
    if args.place:  # a collective: every rank profiles its own share of the loader's seeds (seed=1, drop_last as below)
        t = time.perf_counter()
        placed = store.place(fanouts=fanouts, batch_size=args.batch_size, batches=args.place_batches, seed=1, drop_last=True)
        placed["wall_s"] = time.perf_counter() - t
        if rank == 0:
            print(f"placed by a profile of {placed['batches']} batches per rank in {placed['wall_s']:.2f} s (profile "
                  f"{placed['profile_s']:.2f} s, sum over ranks {placed['reduce_s']:.2f} s, fill {placed['fill_s']:.2f} s); "
                  f"{placed['rows_read']} rows read")
    t = time.perf_counter()
    loader = tierfs.pyg.NeighborLoader(store, fanouts, input_nodes="train", batch_size=args.batch_size, shuffle=True,
                                       drop_last=True, prefetch=args.prefetch, seed=1, planned_epochs=args.planned_epochs)
    plan_s = time.perf_counter() - t
    if args.planned_epochs and rank == 0:
        print(f"planned the first {args.planned_epochs} epoch(s) of this rank's share in {plan_s:.1f} s (the next are planned while these train)")
    classes = max(store.num_classes, 2)
    model = GraphSAGE(store.dim, args.hidden, num_layers=len(fanouts), out_channels=classes).to(device)
    model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.Adam(model.parameters(), lr=0.003)
    d0 = store.stats()["distributed"]
    if rank == 0:
        print(f"{world} rank(s), {args.cache_mode} cache: {d0['global_cache_rows']} rows in the global cache "
              f"({d0['owned_rows']} owned per rank, owner tier {d0['owner_tier']}), {d0['next_hottest_rows']} next hottest "
              f"in a host tier {args.host_tier.replace('_', ' ')} ({d0['host_tier']['rows']} rows)")
    figures = {}
    for epoch in range(1, args.epochs + 1):
        before = store.stats()["distributed"]
        model.train()
        dist.barrier()
        t0, batches, seeds, loss_sum = time.perf_counter(), 0, 0, 0.0
        for data in loader:
            # Every rank runs every batch (the exchanges are collectives): --max-batches only
            # skips the training of the rest, never the iteration.
            if args.max_batches and batches >= args.max_batches:
                continue
            data = data.to(device, non_blocking=True)
            opt.zero_grad()
            out = model(data.x.float(), data.edge_index)[: data.batch_size]
            loss = F.cross_entropy(out, data.y[: data.batch_size].clamp(min=0) % classes)
            loss.backward()
            opt.step()
            loss_sum += float(loss.detach())
            batches += 1
            seeds += data.batch_size
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        wall = time.perf_counter() - t0
        after = store.stats()["distributed"]
        # where this rank's batches spent their time (the loader's stages; the exchange is part
        # of the gather)
        ls = loader.stats() if hasattr(loader, "stats") else {}
        stages = ls.get("stages", {})
        dbatches = max(after["batches"] - before["batches"], 1)
        exch_ms = 1e3 * (after["exchange_s"] - before["exchange_s"]) / dbatches
        got = torch.tensor([seeds, wall, after["ssd_rows"] - before["ssd_rows"], after["peer_bytes_received"] - before["peer_bytes_received"],
                            after["batches"] - before["batches"], loss_sum, batches], dtype=torch.float64, device=device)
        every = [torch.zeros_like(got) for _ in range(world)]
        dist.all_gather(every, got)
        every = torch.stack(every).cpu()
        total_seeds, max_wall = float(every[:, 0].sum()), float(every[:, 1].max())
        gathers = max(float(every[:, 4].sum()), 1.0)
        figures = dict(
            world_size=world, cache_mode=args.cache_mode, gpu_topology=args.gpu_topology if device.type == "cuda" else "none", host_tier=args.host_tier, host_tier_rows=after["host_tier"]["rows"], epoch=epoch, seeds_per_s=total_seeds / max_wall,
            ssd_rows_per_batch=float(every[:, 2].sum()) / gathers, peer_bytes_per_batch=float(every[:, 3].sum()) / gathers,
            loss=float(every[:, 5].sum()) / max(float(every[:, 6].sum()), 1.0), fanouts=fanouts, batch_size=args.batch_size,
            hidden=args.hidden,
        )
        # sample, gather (of which exchange: the peer exchange inside the gather) and train
        figures["rank0_ms_per_batch"] = {k: v.get("mean_ms", 0.0) for k, v in stages.items()}
        figures["rank0_ms_per_batch"]["exchange"] = exch_ms
        steps = after.get("per_batch", {}).get("exchange_steps_ms", {})
        figures["rank0_exchange_steps_ms"] = {k: 1e3 * (after[f"{k}_s"] - before[f"{k}_s"]) / dbatches for k in steps}
        figures["bound"] = ls.get("bound")
        figures["peer_path"] = after.get("peer_path")
        figures["rank0_peer_bytes_per_batch_by_path"] = {
            path: dict(received=(after["peer_bytes_received"] - before["peer_bytes_received"]) / dbatches,
                       sent=(after["peer_bytes_sent"] - before["peer_bytes_sent"]) / dbatches)
            for path in after["per_batch"]["by_path"]
        }
        figures["planned_epochs"] = args.planned_epochs
        figures["first_plan_s"] = plan_s if args.planned_epochs else None
        figures["place"] = None if placed is None else dict(
            batches_per_rank=placed["batches"], seconds=placed["wall_s"], profile_s=placed["profile_s"], reduce_s=placed["reduce_s"],
            fill_s=placed["fill_s"], rows_read=placed["rows_read"])
        if rank == 0:
            print(f"epoch {epoch:3d}  loss {figures['loss']:.4f}  {figures['seeds_per_s']:,.0f} seeds/s  "
                  f"ssd rows/batch {figures['ssd_rows_per_batch']:,.0f}  peer bytes/batch {figures['peer_bytes_per_batch']:,.0f}")
            ms = figures["rank0_ms_per_batch"]
            print("           rank 0, ms a batch: " + "  ".join(f"{k} {v:.1f}" for k, v in ms.items())
                  + f"  (bound: {figures['bound']}; peers: {figures['peer_path']})")
            if figures["peer_bytes_per_batch"]:
                print("           rank 0, exchange steps, ms a batch: "
                      + "  ".join(f"{k} {v:.2f}" for k, v in figures["rank0_exchange_steps_ms"].items()))
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    store.close()
    dist.barrier()
    dist.destroy_process_group()
    # Leave without interpreter teardown: tearing down DDP's reducer joins gloo's worker threads
    # while holding the GIL, and a worker still destroying a finished collective's tensors waits
    # for the GIL — a hang seen about one run in ten on a loaded machine (pytorch/pytorch#56297,
    # #190489). Everything is written and every collective is done by now.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
