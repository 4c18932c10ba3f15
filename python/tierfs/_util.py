"""Small helpers: byte sizes, device names, optional torch."""

from __future__ import annotations

import re
import sys
from typing import Any, Optional, Union

from . import errors

SizeLike = Union[int, str, None]

# Same units as the CLI (cli/size.go): KB/MB/GB/TB are powers of 1000, KiB/MiB/GiB/TiB
# and the bare K/M/G/T powers of 1024.
_UNITS = [
    ("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30), ("tib", 1 << 40),
    ("kb", 10**3), ("mb", 10**6), ("gb", 10**9), ("tb", 10**12),
    ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30), ("t", 1 << 40), ("b", 1),
]  # fmt: skip


def parse_size(value: SizeLike, what: str = "size") -> int:
    """Bytes of ``value``: an int, None (0), or a string like ``"512MB"``, ``"4GiB"``, ``"1.5G"``."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise errors.InvalidArgumentError(f"{what}: {value!r} is not a byte count")
    if isinstance(value, int):
        if value < 0:
            raise errors.InvalidArgumentError(f"{what}: {value} bytes is negative")
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    if not isinstance(value, str):
        raise errors.InvalidArgumentError(f"{what}: {value!r} is not a byte count like 4096, '512MB' or '4GiB'")
    t = value.strip().lower()
    scale = 1
    for suffix, s in _UNITS:
        if t.endswith(suffix):
            t, scale = t[: -len(suffix)].strip(), s
            break
    if not re.fullmatch(r"[0-9]*\.?[0-9]+(e[0-9]+)?", t):
        raise errors.InvalidArgumentError(f"{what}: {value!r} is not a byte count like 4096, '512MB' or '4GiB'")
    n = float(t) * scale
    if n > 1 << 62:
        raise errors.InvalidArgumentError(f"{what}: {value!r} is too large")
    return int(n)


def format_bytes(n: int) -> str:
    """n with a binary unit, as the CLI prints it."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def torch_module() -> Optional[Any]:
    """The torch module if it is imported already (never imports it)."""
    return sys.modules.get("torch")


def is_tensor(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def parse_device(device: Any) -> tuple[str, int]:
    """("cpu", -1) or ("cuda", ordinal) for "cpu", "cuda", "cuda:N", a torch.device or None."""
    if device is None:
        return "cpu", -1
    if not isinstance(device, str):
        if hasattr(device, "type"):  # torch.device
            if device.type == "cpu":
                return "cpu", -1
            if device.type == "cuda":
                idx = device.index
                if idx is None:
                    import torch

                    idx = torch.cuda.current_device()
                return "cuda", int(idx)
        raise errors.InvalidArgumentError(f"device {device!r}: want 'cpu', 'cuda' or 'cuda:N'")
    d = device.strip().lower()
    if d == "cpu":
        return "cpu", -1
    m = re.fullmatch(r"cuda(?::(\d+))?", d)
    if not m:
        raise errors.InvalidArgumentError(f"device {device!r}: want 'cpu', 'cuda' or 'cuda:N'")
    if m.group(1) is not None:
        return "cuda", int(m.group(1))
    import torch

    return "cuda", torch.cuda.current_device()


def _checkout_version() -> str:
    """The version written in the checkout this package runs from (cli/version.go, the
    one place it is written; the build copies it into tierfs/_version.py)."""
    from pathlib import Path

    go = Path(__file__).resolve().parents[2] / "cli" / "version.go"
    m = re.search(r'^const Version = "([^"]+)"', go.read_text(), re.M) if go.is_file() else None
    return m.group(1) if m else "0+unknown"
