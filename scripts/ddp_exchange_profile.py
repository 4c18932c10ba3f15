"""ddp_exchange_profile.py: where a distributed store's gather spends its time, one rank a GPU.

Run under torchrun on a multi-GPU machine:

    torchrun --standalone --nproc_per_node=2 scripts/ddp_exchange_profile.py DATA \
        --gpu-cache 2700MB --host-cache 256MB --batches 40 --out DIR

Every rank samples batches of its seed share ([25,10], batch 1,024) first, then times the
gathers alone (CUDA-synchronized, serial), and rank 0 profiles the same gathers with cProfile
(DIR/profile-rank0.txt, sorted by own time). The figures are the gathers' mean ms, the store's
exchange counters and the seeds/s the gathers alone would allow.
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import time

import torch
import torch.distributed as dist

import tierfs


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("--gpu-cache", default="2700MB")
    p.add_argument("--host-cache", default="256MB")
    p.add_argument("--cache-mode", default="shared")
    p.add_argument("--fanouts", default="25,10")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--out", default=".")
    a = p.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(local)
        dist.init_process_group("nccl", device_id=dev)
    else:  # a dry run of the script on a machine without a GPU
        dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    store = tierfs.open(a.data, gpu_cache=a.gpu_cache, host_cache=a.host_cache, device=str(dev) if cuda else None, cache_mode=a.cache_mode)
    seeds = tierfs.split_seeds(store.split("train"), rank, world, epoch=0, seed=1, drop_last=True)
    sampler = store.sampler([int(f) for f in a.fanouts.split(",")], seed=1)
    nodes = [sampler.sample(seeds[i * a.batch_size:(i + 1) * a.batch_size]).nodes for i in range(a.batches)]

    def run(batches):
        t = time.perf_counter()
        for ids in batches:
            store.gather(torch.from_numpy(ids))
        if cuda:
            torch.cuda.synchronize(dev)
        return time.perf_counter() - t

    run(nodes[:5])  # warm-up
    before = store.stats()["distributed"]
    wall = run(nodes)
    after = store.stats()["distributed"]
    prof = cProfile.Profile()
    dist.barrier()
    if rank == 0:
        prof.enable()
    run(nodes)
    if rank == 0:
        prof.disable()
    nb = after["batches"] - before["batches"]
    fig = dict(rank=rank, world=world, cache_mode=a.cache_mode, gpu_cache=a.gpu_cache, host_cache=a.host_cache,
               batches=a.batches, gather_ms=1e3 * wall / a.batches, seeds_per_s_gathers_alone=world * a.batch_size * a.batches / wall,
               exchange_ms=1e3 * (after["exchange_s"] - before["exchange_s"]) / max(nb, 1),
               local_ms=1e3 * (after["local_s"] - before["local_s"]) / max(nb, 1),
               peer_unique_rows=(after["peer_unique_rows"] - before["peer_unique_rows"]) / max(nb, 1),
               ssd_rows=(after["ssd_rows"] - before["ssd_rows"]) / max(nb, 1),
               ids=(after["ids"] - before["ids"]) / max(nb, 1), peer_path=after.get("peer_path"))
    print(json.dumps(fig), flush=True)
    if rank == 0:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(30)
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(30)
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, f"profile-rank0-{a.cache_mode}-{world}.txt"), "w") as f:
            f.write(json.dumps(fig) + "\n" + s.getvalue())
    store.close()
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)


if __name__ == "__main__":
    main()
