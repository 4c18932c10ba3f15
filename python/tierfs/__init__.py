"""tierfs — a tiered GPU / host-memory / SSD feature store for out-of-core GNN training.

Quick start::

    import tierfs
    tierfs.synth("/tmp/g", nodes=100_000, avg_degree=10, dim=128)
    with tierfs.open("/tmp/g", host_cache="64MB") as store:
        x = store.gather([3, 1, 4])                 # (3, 128) numpy array
        s = store.sampler([15, 10]).sample(store.split("train")[:1024])
        for batch in tierfs.Loader(store, store.sampler([15, 10]), store.split("train"), 1024):
            ...                                     # batch.x, batch.y, batch.sample

PyTorch Geometric: :mod:`tierfs.pyg`. Planetoid Cora: :func:`tierfs.datasets.cora`. A small real
heterogeneous graph shipped with the package (ACM): :func:`tierfs.datasets.acm`.

The native library (a Go runtime behind a C ABI) is loaded once, at import; it must not be
loaded in a process that then forks and calls it: worker processes must use the ``spawn`` start
method (see :mod:`tierfs.pyg` for PyG loaders). Every native call releases the GIL.
"""

from __future__ import annotations

from . import _native
from ._util import _checkout_version, format_bytes, parse_size
from .build import from_graphbolt, ingest, synth, upgrade, verify
from .frompyg import from_pyg
from .errors import (
    ClosedError,
    CorruptError,
    DTypeError,
    Error,
    ForkedProcessError,
    InternalError,
    InvalidArgumentError,
    IOFailedError,
    KeyNotFoundError,
    NotFoundError,
    NotSupportedError,
    OutOfMemoryError,
    OutOfRangeError,
    PeerError,
    VersionError,
)
from .distributed import DistributedStore
from .rankshare import split_seeds
from .epochs import PlannedEpochs
from .loader import Batch, Loader, Prefetcher, prefetch
from .iostack import IOStack
from .pipeline import Pipeline
from ._open import open
from ._sample import LinkSample, Sample
from .store import GatherFuture, Sampler, Store

try:
    from ._version import __version__  # written by the build (python/setup.py)
except ImportError:  # a source checkout (PYTHONPATH=python)
    __version__ = _checkout_version()

#: C ABI version of the loaded library.
ABI_VERSION: int = _native.ABI_VERSION
#: Path of the loaded libtierfs.so.
LIBRARY_PATH: str = str(_native.lib_path)
# Building C/C++ against this package: tierfs.h and libtierfs.so (python -m tierfs --cflags --libs).
from ._paths import get_include, get_library  # noqa: E402

__all__ = [
    "PlannedEpochs",
    "open",
    "Store",
    "DistributedStore",
    "split_seeds",
    "Sampler",
    "Sample",
    "LinkSample",
    "GatherFuture",
    "Loader",
    "Batch",
    "Prefetcher",
    "prefetch",
    "Pipeline",
    "IOStack",
    "ingest",
    "from_graphbolt",
    "from_pyg",
    "verify",
    "upgrade",
    "synth",
    "parse_size",
    "format_bytes",
    "Error",
    "ClosedError",
    "CorruptError",
    "DTypeError",
    "ForkedProcessError",
    "InternalError",
    "InvalidArgumentError",
    "IOFailedError",
    "KeyNotFoundError",
    "NotFoundError",
    "NotSupportedError",
    "OutOfMemoryError",
    "OutOfRangeError",
    "PeerError",
    "VersionError",
    "ABI_VERSION",
    "LIBRARY_PATH",
    "get_include",
    "get_library",
]


def __getattr__(name: str):
    # Submodules that import torch / torch_geometric load on first use only (Embedding: torch).
    if name in ("pyg", "datasets", "embedding"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    if name == "Embedding":
        from .embedding import Embedding

        return Embedding
    raise AttributeError(f"module 'tierfs' has no attribute {name!r}")
