"""The device tier of a :class:`tierfs.Embedding` (``gpu_cache=``): the table's rows that the
store's placement ranks hottest (:meth:`tierfs.Store.hottest` of the table's node type), with
their optimizer state, in one tensor on the store's device (a host tensor on a CPU store), in
front of the table's page cache and its disk. The table's own copy of a row the tier holds is
stale until :meth:`DeviceTier.flush` writes the tier back (a checkpoint does, and a re-placement);
the module reads and steps those rows here, the others through the core."""

from __future__ import annotations

from typing import Any, Callable, Tuple

import torch

__all__ = []  # Embedding's, not an API of its own

#: Rows a tier fills or flushes per call to the core (a bound on the host copy it makes).
CHUNK_BYTES = 64 << 20


class DeviceTier:
    """Rows ``ids`` (sorted, distinct) and their whole slots (row and optimizer state, ``width``
    floats) on ``device``; ``capacity`` rows at most. ``hits`` and ``misses`` count the rows of
    reads and steps it served and the rows it did not hold."""

    def __init__(self, device: Any, width: int, capacity: int) -> None:
        self.device = torch.device(device)
        self.width, self.capacity = width, capacity
        self.ids = torch.empty(0, dtype=torch.int64, device=self.device)
        self.slots = torch.empty((0, width), dtype=torch.float32, device=self.device)
        self.hits = self.misses = 0
        self.dirty = False  # slots changed since they were last written to the table

    @staticmethod
    def row_bytes(width: int) -> int:
        """Memory a row takes in the tier: its slot and its id."""
        return 4 * width + 8

    def locate(self, ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(held, pos) on the tier's device: whether the tier holds each of ``ids``, and where
        (``pos[held]``; the rest is meaningless)."""
        ids = ids.to(self.device)
        if not len(self.ids):
            return torch.zeros(len(ids), dtype=torch.bool, device=self.device), torch.zeros_like(ids)
        pos = torch.searchsorted(self.ids, ids).clamp_(max=len(self.ids) - 1)
        return self.ids[pos] == ids, pos

    def count(self, held: torch.Tensor) -> Tuple[int, torch.Tensor]:
        """The number of rows held, and the mask of the others, on the host; counts them."""
        miss = (~held).cpu()
        hit = len(held) - int(miss.sum())
        self.hits += hit
        self.misses += len(held) - hit
        return hit, miss

    def fill(self, ids: torch.Tensor, read_slots: Callable[[torch.Tensor], torch.Tensor]) -> None:
        """Holds the rows ``ids`` (distinct, at most ``capacity``) instead, their slots read by
        ``read_slots`` (host ids -> host slots); the caller has flushed the tier."""
        ids = torch.sort(torch.as_tensor(ids, dtype=torch.int64).reshape(-1)[: self.capacity]).values
        slots = torch.empty((len(ids), self.width), dtype=torch.float32, device=self.device)
        for first in range(0, len(ids), self.chunk_rows()):
            part = ids[first : first + self.chunk_rows()]
            slots[first : first + len(part)] = read_slots(part).to(self.device)
        self.ids, self.slots, self.dirty = ids.to(self.device), slots, False

    def flush(self, write_slots: Callable[[torch.Tensor, torch.Tensor], None]) -> None:
        """Writes every slot the tier holds back through ``write_slots`` (host ids, host slots)
        when they changed since the last flush."""
        if not self.dirty:
            return
        for first in range(0, len(self.ids), self.chunk_rows()):
            part = slice(first, first + self.chunk_rows())
            write_slots(self.ids[part].cpu().contiguous(), self.slots[part].cpu().contiguous())
        self.dirty = False

    def chunk_rows(self) -> int:
        return max(1, CHUNK_BYTES // (4 * self.width))

    def stats(self) -> dict:
        """As the store's tiers describe themselves (``TierStats``), and the device."""
        return {
            "tier": "gpu", "device": str(self.device), "rows_held": len(self.ids), "capacity_rows": self.capacity,
            "bytes_held": len(self.ids) * self.row_bytes(self.width), "hits": self.hits, "misses": self.misses,
        }
