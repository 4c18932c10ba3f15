"""Shared fixtures: small datasets made once per session, the test seed, the CLI.

Every test that draws random data uses ``rng(offset)`` seeded from TIERFS_TEST_SEED (printed in
the report header; set it to replay a failure).
"""

from __future__ import annotations

import os
import random
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import tierfs

SEED = int(os.environ.get("TIERFS_TEST_SEED") or random.randrange(1 << 31))

# The source tree's benchmarks (python/bench, not in the shipped package), for the tests that run
# them as smoke tests (``import benchtrain``).
BENCH_DIR = Path(os.environ.get("TIERFS_REPO") or Path(__file__).resolve().parents[2]) / "python" / "bench"
sys.path.append(str(BENCH_DIR))

# Every feature dtype the format knows.
DTYPES = ["float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "int32", "int64"]

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    torch = None
    HAS_CUDA = False

needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU (torch.cuda.is_available() is False)")


def pytest_report_header(config):
    return [
        f"tierfs: library {tierfs.LIBRARY_PATH} (ABI {tierfs.ABI_VERSION})",
        f"tierfs: TIERFS_TEST_SEED={SEED} (set it to replay)",
    ]


def rng(offset: int = 0) -> np.random.Generator:
    return np.random.default_rng([SEED, offset])


def random_features(r: np.random.Generator, n: int, dim: int, dtype: str):
    """(numpy or torch array, numpy view of the expected gather output) of the given dtype."""
    if dtype in ("float32", "float16", "float64"):
        a = r.standard_normal((n, dim)).astype(dtype)
        return a, a
    if dtype == "bfloat16":
        t = torch.from_numpy(r.standard_normal((n, dim)).astype(np.float32)).to(torch.bfloat16)
        return t, t.view(torch.int16).numpy().view(tierfs.store._NUMPY_DTYPES["bfloat16"])
    info = np.iinfo(dtype)
    a = r.integers(info.min, info.max, size=(n, dim), endpoint=True, dtype=dtype)
    return a, a


def random_graph(r: np.random.Generator, n: int, e: int) -> np.ndarray:
    """(2, e) int64 edges with a skewed in-degree, some duplicates and self loops."""
    src = r.integers(0, n, e)
    dst = (r.zipf(1.6, e) - 1) % n
    edges = np.stack([src, dst]).astype(np.int64)
    edges[:, : e // 50] = edges[:, e // 50 : 2 * (e // 50)]  # duplicates
    edges[1, -10:] = edges[0, -10:]  # self loops
    return edges


def csc_of(edges: np.ndarray, n: int):
    """Reference CSC (indptr, indices) of (src, dst) pairs: in-neighbors of each dst, each list
    sorted (the stored order is the ingest's business)."""
    src, dst = edges
    order = np.lexsort((src, dst))
    indices = src[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    return indptr, indices


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tierfs-data")


@pytest.fixture(scope="session")
def graph(data_dir):
    """A dataset ingested from arrays: float32 features (dim 37), labels, splits, a random graph
    kept as given (duplicates and self loops). Returns a dict with the inputs and the path."""
    r = rng(1)
    n, e, dim = 3000, 24000, 37
    edges = random_graph(r, n, e)
    x = r.standard_normal((n, dim)).astype(np.float32)
    y = r.integers(0, 6, n).astype(np.int64)
    y[::17] = -1
    perm = r.permutation(n)
    splits = {"train": np.sort(perm[:1200]), "val": np.sort(perm[1200:1600]), "test": np.sort(perm[1600:2200])}
    path = tierfs.ingest(data_dir / "graph", edges, x, labels=y, splits=splits)
    indptr, indices = csc_of(edges, n)
    return dict(path=str(path), edges=edges, x=x, y=y, splits=splits, n=n, e=e, dim=dim, indptr=indptr, indices=indices)


@pytest.fixture(scope="session")
def store(graph):
    s = tierfs.open(graph["path"], host_cache="64KiB")
    yield s
    s.close()


@pytest.fixture(scope="session")
def cora_dir(data_dir) -> str:
    try:
        return tierfs.datasets.cora(data_dir / "cora")
    except FileNotFoundError as e:  # the raw files live in ../shared beside the checkout
        pytest.skip(f"Planetoid Cora raw files not found: {e}")


@pytest.fixture(scope="session")
def cli() -> str:
    path = os.environ.get("TIERFS_CLI")
    if not path:
        repo = os.environ.get("TIERFS_REPO") or str(Path(__file__).resolve().parents[2])
        path = os.path.join(repo, "build", "tierfs")
    if not os.access(path, os.X_OK):
        found = shutil.which("tierfs")
        if not found:
            pytest.skip(f"the tierfs CLI is not built ({path}); scripts/py_test.sh builds it")
        path = found
    return path
