"""The feature paths of benchtrain: per configuration, the iterator of batches its training loop
takes (sampled, gathered, on the device), serial or prefetched on a thread and a CUDA side stream."""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Iterator, List, Tuple

import numpy as np

from benchtrain_config import MEMMAP_CONFIGS, PLANNED_CONFIGS


class FetchPaths:
    """Bench's batch iterators (a mixin of Bench: they use its store, device and options)."""

    def fetchers(self, cfg: str, fanouts: List[int], batch: int, seeds: np.ndarray, stage: Dict[str, float], extra: Dict[str, Any]):
        """An iterator of (seeds, nodes, row, col, x on the device) for cfg; serial ones add their
        sample/gather seconds to ``stage``."""
        torch, dev = self.torch, self.dev
        nb = -(-len(seeds) // batch)
        chunks = [torch.from_numpy(seeds[i * batch : (i + 1) * batch]) for i in range(nb)]
        cached = self.stores["cached"]
        if cfg == "memory-gpu-serial":
            X = self.X_dev
            return self.serial_batches(cached, fanouts, chunks, stage, lambda nodes: torch.index_select(X, 0, nodes.to(dev, non_blocking=True)))
        if cfg == "memory-gpu":
            X = self.X_dev
            return self.overlapped(cached, fanouts, chunks, extra, lambda nodes: torch.index_select(X, 0, nodes))
        # The same loop, the rows from the store's GPU tier (device ids: the split runs on the GPU).
        if cfg == "tierfs-cached":
            return self.overlapped(cached, fanouts, chunks, extra, cached.gather)
        if cfg == "memory-pinned":
            return self.serial_batches(cached, fanouts, chunks, stage, self.pinned_gather())
        if cfg == "tierfs-serial":
            st = self.stores["tiered"]
            return self.serial_batches(st, fanouts, chunks, stage, lambda nodes: st.gather(nodes.to(dev, non_blocking=True)))
        if cfg in MEMMAP_CONFIGS:
            def mgather(nodes):
                return torch.from_numpy(extra["memmap"].gather(nodes.numpy())).to(dev, non_blocking=True)

            return self.serial_batches(cached, fanouts, chunks, stage, mgather)
        if cfg == "tierfs-pipelined":
            st = self.stores["tiered"]
            sampler = st.sampler(fanouts, seed=self.a.seed)
            loader = self.tierfs.Loader(st, sampler, torch.from_numpy(seeds), batch, shuffle=False, prefetch=self.a.depth, labels=False)
            extra["loader"] = loader
            extra["closers"].append(sampler.close)
            return self.loader_batches(loader, 1, extra)
        if cfg in PLANNED_CONFIGS:
            plan = extra["plan"]
            if isinstance(plan, self.tierfs.Loader):  # --planned-epoch full, tierfs-rounds: the loader itself
                # tierfs-rounds: epoch after epoch, as a user's loop
                return self.loader_batches(plan, extra.get("epochs", 1), extra)
            return self.plan_batches(plan, extra)
        raise AssertionError(cfg)

    def serial_batches(self, store, fanouts: List[int], chunks: List[Any], stage: Dict[str, float], gather: Callable[[Any], Any]) -> Iterator[Tuple]:
        """The serial loop: each batch sampled, then its rows gathered with ``gather(nodes)``,
        inline; their seconds go to ``stage``. The sampler opens at the first batch."""
        sampler = store.sampler(fanouts, seed=self.a.seed)
        try:
            for s_ids in chunks:
                t = time.perf_counter()
                s = sampler.sample(s_ids)
                t2 = time.perf_counter()
                x = gather(s.nodes)
                stage["sample"] += t2 - t
                stage["gather"] += time.perf_counter() - t2
                yield s_ids, s.nodes, s.row, s.col, x
        finally:
            sampler.close()

    def pinned_gather(self) -> Callable[[Any], Any]:
        """memory-pinned's gather: ``index_select`` of the host tensor into one of two pinned
        buffers, taking turns, then copied to the device without waiting (cpu: the buffer)."""
        torch, dev, X = self.torch, self.dev, self.X_host
        bufs: List[Any] = [None, None]  # two pinned buffers, taking turns
        done: List[Any] = [None, None]  # the event after the copy out of each
        turn = [0]

        def pinned(nodes):
            k, j = nodes.shape[0], turn[0]
            turn[0] ^= 1
            if done[j] is not None:  # its previous copy to the device must have finished
                done[j].synchronize()
            if bufs[j] is None or bufs[j].shape[0] < k:
                bufs[j] = torch.empty((int(k * 1.25) + 1, self.dim), dtype=X.dtype, pin_memory=self.cuda)
            out = bufs[j][:k]
            torch.index_select(X, 0, nodes, out=out)
            if not self.cuda:
                return out
            x = out.to(dev, non_blocking=True)
            done[j] = torch.cuda.Event()
            done[j].record()
            return x

        return pinned

    def loader_batches(self, loader, epochs: int, extra: Dict[str, Any]) -> Iterator[Tuple]:
        """A tierfs.Loader's batches, ``epochs`` epochs of them; each epoch's iterator is closed
        first of ``extra["closers"]``."""
        for _ in range(epochs):
            it = iter(loader)
            extra["closers"].insert(0, getattr(it, "close", lambda: None))
            for b in it:
                s = b.sample
                yield b.seeds, s.nodes, s.row, s.col, b.x

    def plan_batches(self, plan, extra: Dict[str, Any]) -> Iterator[Tuple]:
        """Epoch 0 of a plan (tierfs-planned: the warm-up and timed batches), prefetched --depth
        ahead as tierfs.Loader serves a plan; on CUDA the training stream waits for each batch's
        event before it uses the batch."""
        side = self.torch.cuda.Stream(device=self.dev) if self.cuda else None
        pf = self.tierfs.prefetch(self.planned_batches(plan, side), self.a.depth)
        extra["closers"].insert(0, pf.close)
        return self.on_training_stream(pf)

    def planned_batches(self, plan, side) -> Iterator[Tuple]:
        """As tierfs.Loader serves a plan on a CUDA store: the batch's rows by the planned device
        gather (packed rows scattered on the GPU), its sample moved from pinned memory, both on
        the side stream, with the event the training stream then waits for (None: no side
        stream, host arrays)."""
        torch, dev = self.torch, self.dev
        for i in range(plan.batches_per_epoch):
            if side is None:
                s_ids, s, x = plan.load(0, i)
                yield torch.from_numpy(s_ids), torch.from_numpy(s.nodes), torch.from_numpy(s.row), torch.from_numpy(s.col), torch.from_numpy(x), None
                continue
            s = plan.sample(0, i)
            with torch.cuda.stream(side):
                x = plan.gather_device(0, i, s.nodes)
                ids, nodes, row, col = (torch.from_numpy(v).pin_memory().to(dev, non_blocking=True) for v in (s.nodes[: s.num_seeds], s.nodes, s.row, s.col))
                done = torch.cuda.Event()
                done.record(side)
            yield ids, nodes, row, col, x, done

    def overlapped(self, store, fanouts: List[int], chunks: List[Any], extra: Dict[str, Any], gather: Callable[[Any], Any]) -> Iterator[Tuple]:
        """memory-gpu, the best in-memory loop: one thread (``tierfs.prefetch``, up to --depth
        batches ahead) samples each batch, copies the sample to the device from pinned memory
        and gathers its rows with ``gather(nodes)`` (``index_select`` of the CUDA tensor;
        tierfs-cached: the store's gather of device ids), both on a CUDA side stream; the training
        loop only makes its stream wait for the batch's event (GraphBolt's feature fetch on its
        own stream, apex's data_prefetcher). A thread, not "launch batch i+1's sampling, then
        train batch i": the sampler returns host arrays, so its call blocks until the GPU
        sampler's kernels and the copy back are done; the native call releases the GIL, and
        the thread holds it only for a few short torch calls a batch. The thread's seconds
        and batches go to ``extra["thread_busy"]``."""
        torch, dev = self.torch, self.dev
        sampler = store.sampler(fanouts, seed=self.a.seed)
        extra["closers"].append(sampler.close)
        busy = extra["thread_busy"] = dict(sample=0.0, gather=0.0, batches=0)
        side = torch.cuda.Stream(device=dev) if self.cuda else None

        def prepared():
            for s_ids in chunks:
                t = time.perf_counter()
                s = sampler.sample(s_ids)
                t2 = time.perf_counter()
                if side is None:
                    item = (s_ids, s.nodes, s.row, s.col, gather(s.nodes), None)
                else:
                    with torch.cuda.stream(side):
                        ids, nodes, row, col = (v.pin_memory().to(dev, non_blocking=True) for v in (s_ids, s.nodes, s.row, s.col))
                        x = gather(nodes)
                        done = torch.cuda.Event()
                        done.record(side)
                    item = (ids, nodes, row, col, x, done)
                busy["sample"] += t2 - t
                busy["gather"] += time.perf_counter() - t2
                busy["batches"] += 1
                yield item

        pf = self.tierfs.prefetch(prepared(), self.a.depth)
        extra["closers"].insert(0, pf.close)
        return self.on_training_stream(pf)

    def on_training_stream(self, batches: Iterator[Tuple]) -> Iterator[Tuple]:
        """Batches a side stream prepared, each (tensors..., its event), handed to the training
        stream: it waits for the event (the side stream's copies and gather), and the tensors are
        marked in use there, so their memory is not handed out early. Event None (no side
        stream, cpu): the tensors as they are."""
        torch, dev = self.torch, self.dev
        for *batch, done in batches:
            if done is not None:
                current = torch.cuda.current_stream(dev)
                current.wait_event(done)
                for t_ in batch:
                    t_.record_stream(current)
            yield tuple(batch)
