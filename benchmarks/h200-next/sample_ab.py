"""sample_ab.py DATASET: GPU sampling (and the cached store's device gather) of one build, with a
second store (the 10/20 one of benchtrain) opened and closed beside it: the suspect of session
18's unexplained A/B (the in-memory limit loop, which samples through the cached store's GPU
sampler, ran 20-37% slower in the new arm only while the 10/20 store was open). Prints one JSON line."""
import json, sys, time
import numpy as np
import torch
import tierfs

ds = sys.argv[1]
dev = torch.device("cuda", 0)
probe = tierfs.open(ds)
n, row_bytes = probe.num_nodes() if callable(probe.num_nodes) else probe.num_nodes, probe.row_bytes  # ABI 3 made it a method
probe.close()
feat_bytes = n * row_bytes
cached = tierfs.open(ds, gpu_cache=feat_bytes + (64 << 20), device="cuda:0", gpu_topology="device", topology_memory=(1 << 34))
rng = np.random.default_rng(1)
chunks = [torch.from_numpy(rng.integers(0, n, 1024, dtype=np.int64)) for _ in range(160)]


def free_gib():
    f, t = torch.cuda.mem_get_info(dev)
    return round(f / 2**30, 2)


def time_samples(store, gather=False, k=150):
    sp = store.sampler([25, 10], seed=1)
    try:
        for c in chunks[:10]:
            sp.sample(c)
        torch.cuda.synchronize(dev)
        t = time.perf_counter()
        for c in chunks[10:10 + k]:
            s = sp.sample(c)
            if gather:
                x = store.gather(torch.as_tensor(s.nodes).to(dev))
        torch.cuda.synchronize(dev)
        return round((time.perf_counter() - t) / k * 1e3, 3)
    finally:
        sp.close()


out = {"build": sys.argv[2] if len(sys.argv) > 2 else "?", "free_gib_cached": free_gib()}
out["cached_alone_ms"] = time_samples(cached)
out["cached_alone_gather_ms"] = time_samples(cached, gather=True)
tiered = tierfs.open(ds, gpu_cache=int(0.1 * feat_bytes), host_cache=int(0.2 * feat_bytes), device="cuda:0", gpu_topology="device",
                     topology_memory=(1 << 34))
out["free_gib_both"] = free_gib()
out["cached_beside_ms"] = time_samples(cached)
out["cached_beside_gather_ms"] = time_samples(cached, gather=True)
out["tiered_ms"] = time_samples(tiered)
out["cached_again_ms"] = time_samples(cached)
tiered.close()
out["free_gib_closed"] = free_gib()
out["cached_after_close_ms"] = time_samples(cached)
print(json.dumps(out), flush=True)
