"""np.memmap fancy-indexing gather on a tierfs dataset's feature file, page cache dropped first.

The peer tierfs's SSD tier is compared with: the same uniform random id batches, read through
the kernel page cache (buffered, readahead) instead of O_DIRECT io_uring.
Usage: memmap_bench.py DATASET_DIR [--batches N] [--batch N]
"""
import argparse
import json
import os
import time

import numpy as np


def feature_view(dataset_dir):
    manifest = json.load(open(os.path.join(dataset_dir, "manifest.json")))
    feat = manifest["node_types"][0]["features"][0]
    if len(feat["files"]) != 1:
        raise SystemExit("memmap_bench: needs a single-file feature (no --device-path striping)")
    path = feat["files"][0]
    path = path if os.path.isabs(path) else os.path.join(dataset_dir, path)
    block, row, rpb = manifest["block_size"], feat["row_bytes"], feat["rows_per_block"]
    n = manifest["node_types"][0]["count"]
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    if rpb > 0:
        blocks = mm.size // block
        view = np.lib.stride_tricks.as_strided(mm, shape=(blocks, rpb, row), strides=(block, row, 1))
        return path, n, row, lambda ids: view[ids // rpb, ids % rpb]
    view = mm[: n * row].reshape(n, row)
    return path, n, row, lambda ids: view[ids]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--batches", type=int, default=100)
    ap.add_argument("--batch", type=int, default=4096)
    args = ap.parse_args()
    path, n, row, gather = feature_view(args.dataset)
    rng = np.random.default_rng(1)
    batches = [rng.integers(0, n, args.batch) for _ in range(args.batches)]
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    t = time.perf_counter()
    for ids in batches:
        out = gather(ids)
        assert out.shape == (len(ids), row)
    took = time.perf_counter() - t
    rows = args.batch * args.batches
    print(f"np.memmap fancy indexing, cold page cache, uniform ids: {rows / took:,.0f} rows/s, "
          f"{rows * row / took / 1e9:.3f} GB/s ({args.batches} x {args.batch} ids, {took:.2f} s)")


if __name__ == "__main__":
    main()
