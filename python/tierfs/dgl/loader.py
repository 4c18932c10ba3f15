"""Sampling and loading in tierfs with DGL's types: ``NeighborSampler`` (a DGL ``BlockSampler``),
``DataLoader``, link prediction (``EdgePredictionSampler``, ``as_edge_prediction_sampler``,
``LinkDataLoader``)."""

from __future__ import annotations

import threading
from collections.abc import Mapping

import numpy as np
import torch

import dgl
import dgl.dataloading

import tierfs
from tierfs import _options
from tierfs._args import _fanouts

from ._common import FEATURE, LABEL, _GRAPHBOLT_ERROR, _TypedColumn, _ids_tensor, _is_hetero, _read_rows, gb
from .blocks import _hetero_fanouts, _one_seed_type, sample_to_blocks


class NeighborSampler(dgl.dataloading.BlockSampler):
    """Uniform k-hop neighbor sampling by tierfs, returning DGL blocks like
    ``dgl.dataloading.NeighborSampler``.

    ``fanouts[i]`` is the number of neighbors for GNN layer ``i`` (input layer first, so
    ``fanouts[-1]`` is for the seeds; -1 takes every neighbor). On a heterogeneous store (several
    node or edge types) ``fanouts[i]`` is, as for DGL's ``NeighborSampler``, an int for every
    edge type or a dict ``{etype: fanout}`` naming every edge type (canonical ``(src, rel,
    dst)``, ``"src:rel:dst"`` or a relation name that is unique); seeds are ``{ntype: ids}`` of
    one node type and the blocks are heterogeneous (:func:`sample_to_blocks`).
    ``exclude_eids`` (what ``dgl.dataloading.as_edge_prediction_sampler`` passes for
    ``exclude="self"`` or ``"reverse_id"``) are left out of every block after the draw, as
    GraphBolt's ``exclude_seed_edges`` does (DGL's own sampler leaves them out before it draws,
    so a node may get fewer neighbors here). ``replace`` samples with
    replacement; ``seed`` makes runs repeat (each call uses seed + call number). See the module
    docstring for ``cumulative``. ``prefetch_node_feats`` / ``prefetch_labels`` /
    ``output_device`` are as in DGL, for use with ``dgl.dataloading.DataLoader`` and
    :class:`GraphStorage`.

    ``sample(seeds)`` and DGL's ``sample(g, seeds)`` (``g`` ignored) both return
    ``(input_nodes, output_nodes, blocks)``. Calls may come from several threads; they are
    serialised.
    """

    def __init__(
        self,
        store,
        fanouts,
        replace: bool = False,
        seed: int = 0,
        *,
        cumulative: bool = True,
        prefetch_node_feats=None,
        prefetch_labels=None,
        output_device=None,
    ):
        super().__init__(
            prefetch_node_feats=prefetch_node_feats,
            prefetch_labels=prefetch_labels,
            prefetch_edge_feats=None,
            output_device=output_device,
        )
        fanouts = list(fanouts)
        if not fanouts:
            raise tierfs.InvalidArgumentError("tierfs.dgl.NeighborSampler: fanouts is empty; give one per layer")
        self.store = store
        self.hetero = _is_hetero(store)
        self.replace = bool(replace)
        self.seed = int(seed)
        self.cumulative = bool(cumulative)
        if self.hetero:
            # {etype: [per layer]}, input layer first; tierfs counts hops from the seeds.
            self.etype_fanouts = _hetero_fanouts(store, fanouts)
            self.fanouts = [{e: f[i] for e, f in self.etype_fanouts.items()} for i in range(len(fanouts))]
            per_hop = {e: list(reversed(f)) for e, f in self.etype_fanouts.items()}
            self._sampler = store.sampler(per_hop, replace=self.replace, seed=self.seed)
        else:
            if any(isinstance(f, Mapping) for f in fanouts):
                raise tierfs.InvalidArgumentError(
                    "tierfs.dgl.NeighborSampler: fanouts per edge type (dicts) need a store of several edge types"
                )
            fanouts = _fanouts(fanouts)
            if any(f < -1 for f in fanouts):
                raise tierfs.InvalidArgumentError(f"tierfs.dgl.NeighborSampler: bad fanouts {fanouts}; each >= -1")
            self.fanouts = fanouts
            self._sampler = store.sampler(list(reversed(fanouts)), replace=self.replace, seed=self.seed)
        self._lock = threading.Lock()

    @property
    def num_layers(self) -> int:
        return len(self.fanouts)

    # Pickled for spawn worker processes: the store and the tierfs sampler pickle as their path
    # and options (the worker opens the dataset again; its call counter starts at 0).
    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def sample(self, g, seed_nodes=None, exclude_eids=None):  # pylint: disable=arguments-differ
        """``sample(seeds)`` or, as DGL calls it, ``sample(g, seeds, exclude_eids)`` (``g``
        ignored): ``(input_nodes, output_nodes, blocks)``."""
        if seed_nodes is None:
            g, seed_nodes = None, g
        return self.assign_lazy_features(self.sample_blocks(g, seed_nodes, exclude_eids))

    def sample_blocks(self, g, seed_nodes, exclude_eids=None):
        """The blocks of ``seed_nodes`` (``g`` ignored); ``exclude_eids`` (edge ids in the
        store; ``{etype: ids}`` on a heterogeneous store) are left out of every block after the
        draw (see :func:`sample_to_blocks`)."""
        seed_type = None
        if self.hetero:
            seed_type, seed_nodes = _one_seed_type(seed_nodes)
        elif isinstance(seed_nodes, Mapping):
            if len(seed_nodes) != 1:
                raise tierfs.InvalidArgumentError("tierfs.dgl: a tierfs store has a single node type")
            (seed_nodes,) = seed_nodes.values()
        device = self.output_device
        if device is None and isinstance(seed_nodes, torch.Tensor):
            device = seed_nodes.device
        seeds = _ids_tensor(seed_nodes)
        with self._lock:
            sample = self._sampler.sample(seeds, seed_type)
        return sample_to_blocks(sample, cumulative=self.cumulative, device=device, exclude_eids=exclude_eids, store=self.store)


#: The loader options DataLoader takes (it runs its own pipeline, not tierfs.Loader's planned
#: epochs); shuffle and drop_last are DGL's arguments, at DGL's defaults.
_TAKES = ("shuffle", "drop_last", "seed", "prefetch", "x_dtype")


class DataLoader:
    """Mini-batches of ``nodes`` (a split name such as ``"train"``, or node ids) as
    ``(input_nodes, output_nodes, blocks)`` with ``blocks[0].srcdata[feature_name]`` and, when
    the dataset has labels, ``blocks[-1].dstdata[label_name]`` filled from the store.

    A heterogeneous store takes ``nodes`` as ``{ntype: ids or split name}`` of one node type and
    yields ``({ntype: ids}, {seed type: seeds}, blocks)`` (:func:`sample_to_blocks`):
    ``blocks[0].srcnodes[t].data[feature_name]`` holds type t's default feature for every type
    that has features, ``blocks[-1].dstnodes[seed type].data[label_name]`` the seeds' labels.

    Batches are shuffled per epoch when ``shuffle`` (seeded by ``seed`` and the epoch); ``shuffle``
    and ``drop_last`` are DGL's, at DGL's defaults. With ``prefetch`` (True: the loader table's
    default, or a number of batches) the batches run through a :class:`tierfs.Pipeline`: sampled
    ahead on one thread, features and labels gathered for up to ``prefetch`` batches at once
    while the current one is used; ``prefetch=False`` (or 0) loads each batch when it is asked
    for. ``device`` is where the batches go. :meth:`stats` says where the latest epoch's time
    went.

    ``embeddings={node type: tierfs.Embedding}`` (``None`` for a one-type store's type) puts a
    featureless type's learned rows in every batch as its input feature
    (``blocks[0].srcdata[feature_name]``, ``blocks[0].srcnodes[t].data[feature_name]`` for a
    typed store), with autograd: they are gathered as each batch is handed over, after every step
    taken on the batches before it, so training through the loader is exactly training with
    ``nn.Embedding(sparse=True)`` (the pipeline only reads the rows ahead into the table's cache).
    The loader options it takes, keywords as :class:`tierfs.Loader`'s:

        {loader_options}
    """

    def __init__(
        self,
        store,
        nodes,
        sampler: NeighborSampler,
        batch_size: int = 1024,
        shuffle: bool = False,
        drop_last: bool = False,
        device="cpu",
        feature_name: str | None = FEATURE,
        label_name: str | None = LABEL,
        embeddings: dict | None = None,
        **options,
    ):
        prefetch = options.pop("prefetch", True)
        inline = prefetch is False or (not isinstance(prefetch, bool) and prefetch == 0)  # loads each batch when asked
        given = {**options, "shuffle": shuffle, "drop_last": drop_last}
        if not isinstance(prefetch, bool) and not inline:
            given["prefetch"] = prefetch
        o = _options.loader_options(given, "tierfs.dgl.DataLoader", takes=_TAKES)
        if batch_size < 1:
            raise tierfs.InvalidArgumentError(f"tierfs.dgl.DataLoader: batch_size {batch_size} < 1")
        self.seed_type = None
        if _is_hetero(store):
            self.seed_type, nodes = _one_seed_type(nodes)
            if isinstance(nodes, str):
                nodes = store.split(nodes, node_type=self.seed_type)
        elif isinstance(nodes, str):
            nodes = store.split(nodes)
        self.store = store
        self.nodes = _ids_tensor(nodes)
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.shuffle, self.drop_last, self.seed = o["shuffle"], o["drop_last"], o["seed"]
        self.x_dtype = None if o["x_dtype"] is None else getattr(torch, o["x_dtype"])
        self.device = torch.device(device)
        self.prefetch = 0 if inline else o["prefetch"]
        self._run = None
        self.feature_name = feature_name
        self.embeddings = {}
        if embeddings:
            from tierfs.embedding import loader_tables

            self.embeddings = loader_tables(store, embeddings, "tierfs.dgl.DataLoader")
        if self.seed_type is not None:
            types = store.types["node_types"]
            if self.seed_type not in types:
                raise tierfs.KeyNotFoundError(
                    f"tierfs.dgl.DataLoader: no node type {self.seed_type!r} (it has {', '.join(types)})"
                )
            # Each type's default feature (types with features), the seed type's labels.
            self._columns = {t: _TypedColumn(store, FEATURE, t, None, None) for t, info in types.items() if info["features"]}
            labelled = types[self.seed_type].get("labels")
            self.label_name = label_name if labelled else None
            self._labels = _TypedColumn(store, LABEL, self.seed_type, None, None) if labelled else None
        else:
            self.label_name = label_name if int(store.num_classes) else None
        self.epoch = 0

    def __len__(self) -> int:
        n = self.nodes.numel()
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _batches(self):
        nodes = self.nodes
        if self.shuffle:
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
            nodes = nodes[torch.randperm(nodes.numel(), generator=gen)]
        self.epoch += 1
        batches = [nodes[i * self.batch_size : (i + 1) * self.batch_size] for i in range(len(self))]
        if self.seed_type is not None:
            return [{self.seed_type: b} for b in batches]
        return batches

    def _sample(self, batch):
        return self.sampler.sample(batch)

    def _load(self, batch):
        loaded = self._gather(self._sample(batch))
        return self._attach_rows(loaded) if self.embeddings else loaded

    def _ids_of(self, input_nodes):
        """The batch's input nodes of a table's type (``None``: a one-type store's)."""
        return lambda t: input_nodes if t is None else input_nodes.get(t)

    def _warm(self, loaded):
        """On a pipeline thread: the tables' pages of the batch's rows read into their caches."""
        from tierfs.embedding import warm

        warm(self.embeddings, self._ids_of(loaded[0]))
        return loaded

    def _attach_rows(self, loaded):
        """``loaded`` with the tables' rows of its input nodes as their input feature, gathered
        now, as the caller takes the batch."""
        from tierfs.embedding import rows_of

        input_nodes, output_nodes, blocks = loaded
        name = self.feature_name or FEATURE
        for t, rows in rows_of(self.embeddings, self._ids_of(input_nodes), self.device).items():
            if t is None:
                blocks[0].srcdata[name] = rows
            else:
                blocks[0].srcnodes[t].data[name] = rows
        return input_nodes, output_nodes, blocks

    def _gather_hetero(self, sampled):
        input_nodes, output_nodes, blocks = sampled
        if self.feature_name is not None:
            for t, ids in input_nodes.items():
                column = self._columns.get(t)
                if column is not None:
                    blocks[0].srcnodes[t].data[self.feature_name] = column.read(ids)
        if self.label_name is not None:
            t = self.seed_type
            blocks[-1].dstnodes[t].data[self.label_name] = self._labels.read(output_nodes[t])
        if self.device.type != "cpu":
            blocks = [b.to(self.device) for b in blocks]
            input_nodes = {t: v.to(self.device) for t, v in input_nodes.items()}
            output_nodes = {t: v.to(self.device) for t, v in output_nodes.items()}
        if self.x_dtype is not None and self.feature_name is not None:  # cast on the device, the rows moved at the stored dtype
            for t in input_nodes:
                src = blocks[0].srcnodes[t].data
                if self.feature_name in src:
                    src[self.feature_name] = src[self.feature_name].to(self.x_dtype)
        return input_nodes, output_nodes, blocks

    def _gather(self, sampled):
        if self.seed_type is not None:
            return self._gather_hetero(sampled)
        input_nodes, output_nodes, blocks = sampled
        if self.feature_name is not None:
            blocks[0].srcdata[self.feature_name] = _read_rows(self.store, FEATURE, input_nodes)
        if self.label_name is not None:
            blocks[-1].dstdata[self.label_name] = _read_rows(self.store, LABEL, output_nodes)
        if self.device.type != "cpu":
            blocks = [b.to(self.device) for b in blocks]
            input_nodes, output_nodes = input_nodes.to(self.device), output_nodes.to(self.device)
        if self.x_dtype is not None and self.feature_name is not None:  # cast on the device, the rows moved at the stored dtype
            blocks[0].srcdata[self.feature_name] = blocks[0].srcdata[self.feature_name].to(self.x_dtype)
        return input_nodes, output_nodes, blocks

    def __iter__(self):
        batches = self._batches()
        if not self.prefetch or len(batches) < 2:
            return (self._load(seeds) for seeds in batches)
        # The gathers run on the default stream (blocks' .to() queues there), so no stream joins.
        make = lambda i, sampled: self._gather(sampled)  # noqa: E731
        if self.embeddings:
            make = lambda i, sampled: self._warm(self._gather(sampled))  # noqa: E731
        pipeline = tierfs.Pipeline(
            len(batches), lambda i: self._sample(batches[i]), make,
            depth=self.prefetch, store=self.store, name="tierfs-dgl-load",
            deliver=self._attach_rows if self.embeddings else None,
        )
        self._run = pipeline._st
        return pipeline

    def stats(self) -> dict:
        """Where the latest pipelined epoch's time went (:meth:`tierfs.Pipeline.stats`); empty
        before one ran."""
        return tierfs.pipeline.pipeline_stats(self._run) if self._run is not None else {}


_options.document(DataLoader, "loader", takes=_TAKES, skip=("shuffle", "drop_last"))


def _ndim(x) -> int:
    return x.dim() if isinstance(x, torch.Tensor) else np.ndim(x)


def _seed_pairs(edges, what: str):
    """Seed edges given as pairs, ``(src, dst)`` (two 1-D id arrays) or an ``(n, 2)`` tensor or
    array (GraphBolt's ``seeds``), as two 1-D int64 CPU tensors; None for 1-D edge ids."""
    if isinstance(edges, Mapping):
        raise tierfs.NotSupportedError(
            f"{what}: seed edges {{etype: ...}} of several edge types are not supported by tierfs.dgl's link "
            "sampling yet (homogeneous stores); use dgl.dataloading.as_edge_prediction_sampler around "
            "tierfs.dgl.NeighborSampler with tierfs.dgl.dgl_graph(store)"
        )
    if isinstance(edges, (tuple, list)) and len(edges) == 2 and all(_ndim(e) == 1 for e in edges):
        src, dst = _ids_tensor(edges[0]), _ids_tensor(edges[1])
        if src.numel() != dst.numel():
            raise tierfs.InvalidArgumentError(f"{what}: {src.numel()} src ids but {dst.numel()} dst ids; give one of each per seed edge")
        return src, dst
    if isinstance(edges, (tuple, list)):
        edges = np.asarray(edges)
    ndim = _ndim(edges)
    if ndim == 1:
        return None
    shape = tuple(edges.shape)
    if ndim != 2 or shape[1] != 2:
        raise tierfs.InvalidArgumentError(
            f"{what}: seed edges of shape {shape}; give (src, dst), an (n, 2) tensor of pairs or 1-D edge ids"
        )
    pairs = edges if isinstance(edges, torch.Tensor) else torch.from_numpy(np.asarray(edges))
    return _ids_tensor(pairs[:, 0]), _ids_tensor(pairs[:, 1])


def _negatives_per_edge(negative_sampler) -> int:
    """k of DGL's ``negative_sampler.Uniform(k)`` (or an int k); 0 for None."""
    if negative_sampler is None:
        return 0
    uniform = dgl.dataloading.negative_sampler.PerSourceUniform
    if isinstance(negative_sampler, uniform):
        k = negative_sampler.k
    elif isinstance(negative_sampler, (int, np.integer)) and not isinstance(negative_sampler, bool):
        k = negative_sampler
    else:
        raise tierfs.NotSupportedError(
            f"tierfs.dgl.EdgePredictionSampler: negative_sampler {negative_sampler!r} is not supported; "
            "tierfs draws DGL's Uniform(k) (dgl.dataloading.negative_sampler.Uniform, or k): k uniform "
            "destinations per seed edge with its source"
        )
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise tierfs.InvalidArgumentError(f"tierfs.dgl.EdgePredictionSampler: Uniform(k) with k = {k!r}; want an int >= 1")
    return int(k)


class EdgePredictionSampler:
    """Link prediction by tierfs's core: DGL's ``as_edge_prediction_sampler(sampler, exclude,
    reverse_eids, negative_sampler=Uniform(k))`` with the topology left in tierfs (no graph in
    memory). :func:`as_edge_prediction_sampler` makes one.

    ``sample(seed_edges)`` or ``sample(g, seed_edges)`` (as ``dgl.dataloading.DataLoader``
    calls it) returns what DGL's returns: ``(input_nodes, pair_graph, neg_graph, blocks)``, or
    ``(input_nodes, pair_graph, blocks)`` without negatives. Seed edges are pairs, ``(src,
    dst)`` or an ``(n, 2)`` tensor (GraphBolt's ``seeds``), or edge ids of ``g`` (a
    ``DGLGraph`` numbered as the store's input, e.g. :func:`dgl_graph`; ``g.find_edges`` gives
    their pairs). ``labels`` (one a seed edge) go to ``pair_graph.edata["label"]``.

    ``pair_graph`` holds the seed edges in the order given (``edata[dgl.EID]`` when given as
    ids), ``neg_graph`` seed edge i's ``k`` negatives at ``[i*k, (i+1)*k)`` — its source and a
    uniform destination of ``[0, num_nodes)``, which may be an edge, as DGL's ``Uniform(k)``
    and GraphBolt's ``UniformNegativeSampler`` draw. Both graphs have the seed nodes — the
    distinct endpoints of the seed edges and negatives, ascending (DGL and GraphBolt number
    them in order of appearance) — as nodes, ``ndata[dgl.NID]`` their ids, which are the dst
    nodes of ``blocks[-1]``; the blocks are :class:`NeighborSampler`'s of those seeds, with
    its fanouts, ``cumulative`` and seed (the same draw).

    ``exclude``: None; ``"self"`` leaves the seed edges out of every block, ``"reverse_id"``
    also their reverses. tierfs excludes by pair, after the draw (GraphBolt's
    ``exclude_seed_edges``): every edge (u, v) of a seed edge (u, v), and with
    ``"reverse_id"`` every (v, u); on a graph without parallel edges whose ``reverse_eids``
    pair (u, v) with (v, u) that is DGL's exclusion by id. ``reverse_eids`` is checked against
    ``g`` when seed edges come as ids. Negatives are not excluded. For an exclusion by other
    edge ids use DGL's ``as_edge_prediction_sampler`` around :class:`NeighborSampler`.
    """

    def __init__(self, sampler: "NeighborSampler", exclude=None, reverse_eids=None, negative_sampler=None):
        if not isinstance(sampler, NeighborSampler):
            raise tierfs.InvalidArgumentError(
                f"tierfs.dgl.EdgePredictionSampler: sampler is a {type(sampler).__name__}; want a tierfs.dgl.NeighborSampler"
            )
        if sampler.hetero:
            raise tierfs.NotSupportedError(
                "tierfs.dgl.EdgePredictionSampler: link sampling of a store of several node or edge types is not "
                "supported yet; use dgl.dataloading.as_edge_prediction_sampler around tierfs.dgl.NeighborSampler "
                "with tierfs.dgl.dgl_graph(store) (seed edges whose endpoints are of one node type)"
            )
        if not (exclude is None or (isinstance(exclude, str) and exclude in ("self", "reverse_id"))):
            raise tierfs.NotSupportedError(
                f"tierfs.dgl.EdgePredictionSampler: exclude={exclude!r}; tierfs excludes None, 'self' or "
                "'reverse_id' (by pair); for other edge ids use dgl.dataloading.as_edge_prediction_sampler "
                "around tierfs.dgl.NeighborSampler"
            )
        self.sampler = sampler
        self.exclude = exclude
        self.reverse_eids = None if reverse_eids is None else _ids_tensor(reverse_eids)
        self.negative_sampler = negative_sampler
        self.k = _negatives_per_edge(negative_sampler)
        self.output_device = sampler.output_device

    def sample(self, g, seed_edges=None, labels=None):
        """``sample(seed_edges)`` or ``sample(g, seed_edges)``; see the class docstring."""
        if seed_edges is None:
            g, seed_edges = None, g
        device = self.output_device
        if device is None and isinstance(seed_edges, torch.Tensor):
            device = seed_edges.device
        eids = None
        pairs = _seed_pairs(seed_edges, "tierfs.dgl.EdgePredictionSampler")
        if pairs is None:
            if not isinstance(g, dgl.DGLGraph):
                raise tierfs.InvalidArgumentError(
                    "tierfs.dgl.EdgePredictionSampler: seed edge ids need the graph they index (sample(g, eids) "
                    "with g a DGLGraph numbered as the store's input, e.g. tierfs.dgl.dgl_graph(store)); or give "
                    "(src, dst) pairs or an (n, 2) tensor"
                )
            eids = _ids_tensor(seed_edges)
            src, dst = (t.to("cpu", torch.int64) for t in g.find_edges(eids))
            self._check_reverse(g, eids, src, dst)
        else:
            src, dst = pairs
        n = src.numel()
        if labels is not None:
            labels = labels if isinstance(labels, torch.Tensor) else torch.as_tensor(np.asarray(labels))
            if labels.dim() == 0 or labels.shape[0] != n:
                raise tierfs.InvalidArgumentError(
                    f"tierfs.dgl.EdgePredictionSampler: {labels.shape[0] if labels.dim() else 'a scalar'} labels for {n} seed edges; give one a seed edge"
                )
        with self.sampler._lock:
            ls = self.sampler._sampler.sample_from_edges(
                src.numpy(), dst.numpy(),
                neg_sampling="triplet" if self.k else None, amount=self.k or 1,
                exclude_seed_edges=self.exclude is not None, undirected=self.exclude == "reverse_id",
            )
        input_nodes, seeds, blocks = sample_to_blocks(ls, cumulative=self.sampler.cumulative, store=self.sampler.store)
        if self.k:
            pos_src, pos_dst = torch.from_numpy(ls.src_index), torch.from_numpy(ls.dst_pos_index)
            neg_src = pos_src.repeat_interleave(self.k)
            neg_dst = torch.from_numpy(np.ascontiguousarray(ls.dst_neg_index)).reshape(-1)
        else:
            pos_src, pos_dst = (torch.from_numpy(np.ascontiguousarray(a)) for a in ls.edge_label_index)
        pair_graph = dgl.graph((pos_src, pos_dst), num_nodes=seeds.numel(), idtype=torch.int64)
        pair_graph.ndata[dgl.NID] = seeds
        if eids is not None:
            pair_graph.edata[dgl.EID] = eids
        if labels is not None:
            pair_graph.edata[LABEL] = labels.cpu()
        graphs = [pair_graph]
        if self.k:
            neg_graph = dgl.graph((neg_src, neg_dst), num_nodes=seeds.numel(), idtype=torch.int64)
            neg_graph.ndata[dgl.NID] = seeds
            graphs.append(neg_graph)
        if device is not None and torch.device(device).type != "cpu":
            device = torch.device(device)
            blocks = [b.to(device) for b in blocks]
            graphs = [x.to(device) for x in graphs]
            input_nodes = input_nodes.to(device)
        input_nodes, _, blocks = self.sampler.assign_lazy_features((input_nodes, seeds, blocks))
        return (input_nodes, *graphs, blocks)

    def sample_minibatch(self, minibatch):
        """A GraphBolt stage: fills a ``gb.MiniBatch`` of seed pairs as GraphBolt's
        ``sample_uniform_negative`` + ``sample_neighbor`` + ``exclude_seed_edges`` would, in one
        tierfs call. Use it as ``datapipe.transform(sampler.sample_minibatch)`` and fetch
        features with :class:`FeatureStore`; ``input_nodes`` and ``sampled_subgraphs`` are
        filled, so ``minibatch.blocks`` are this sampler's blocks (edges in CSC order of each
        block). GraphBolt's ``exclude_seed_edges`` also drops negatives that are edges; tierfs
        drops the pairs (and with ``"reverse_id"`` their reverses).

        The pairs come in either of GraphBolt's forms:

        - ``node_pairs`` ``(src, dst)`` (GraphBolt 2.1, from ``gb.ItemSet(pairs,
          names="node_pairs")``): ``negative_dsts`` becomes seed i's ``k`` negative
          destinations at row i of an ``(n, k)`` tensor (each negative has its pair's source:
          ``negative_srcs`` is None, as GraphBolt 2.1's ``UniformNegativeSampler`` leaves it),
          ``compacted_node_pairs`` / ``compacted_negative_dsts`` the same in local ids, so
          ``minibatch.node_pairs_with_labels`` gives the pairs then
          the negatives with labels 1 then 0 (with ``labels`` given: the pairs and those
          labels). Negatives already in the minibatch (an item set's ``negative_dsts``) are
          refused: tierfs draws its own.
        - ``seeds`` (n, 2) (GraphBolt 2.2): ``seeds`` becomes the pairs then their negatives
          (seed i's ``k`` at rows ``n + i*k ...``), ``labels`` True for pairs and False for
          negatives (given labels are kept when there are no negatives), ``indexes`` the seed
          each row belongs to, ``compacted_seeds`` the rows in local ids.
        """
        what = "tierfs.dgl.EdgePredictionSampler.sample_minibatch"
        if gb is None:
            raise tierfs.NotSupportedError(f"tierfs.dgl: dgl.graphbolt is not available here ({_GRAPHBOLT_ERROR})")
        if minibatch.seeds is None and getattr(minibatch, "node_pairs", None) is not None:
            return self._sample_node_pairs(minibatch, what)
        pairs = None if minibatch.seeds is None else _seed_pairs(minibatch.seeds, what)
        if pairs is None:
            raise tierfs.InvalidArgumentError(
                f"{what}: the minibatch has no seed pairs (node_pairs, from gb.ItemSet(pairs, names=\"node_pairs\"), "
                "or seeds, an (n, 2) tensor: gb.ItemSet(pairs, names=\"seeds\"))"
            )
        src, dst = pairs
        n, k = src.numel(), self.k
        input_nodes, pair_graph, *neg, blocks = self.sample((src, dst))
        seeds = pair_graph.ndata[dgl.NID]
        rows = [torch.stack(pair_graph.edges(), 1)]
        device = seeds.device
        if k:
            rows.append(torch.stack(neg[0].edges(), 1))
            positive = torch.arange(n, device=device)
            minibatch.indexes = torch.cat([positive, positive.repeat_interleave(k)])
            minibatch.labels = torch.cat([torch.ones(n, dtype=torch.bool, device=device), torch.zeros(n * k, dtype=torch.bool, device=device)])
        compacted = torch.cat(rows).to(device)
        minibatch.compacted_seeds = compacted
        minibatch.seeds = seeds[compacted]
        minibatch.input_nodes = input_nodes
        minibatch.sampled_subgraphs = [_sampled_subgraph(b) for b in blocks]
        return minibatch

    def _sample_node_pairs(self, minibatch, what: str):
        """sample_minibatch of GraphBolt 2.1's ``node_pairs`` minibatch."""
        if getattr(minibatch, "negative_dsts", None) is not None or getattr(minibatch, "negative_srcs", None) is not None:
            raise tierfs.NotSupportedError(
                f"{what}: the minibatch already has negatives (an item set's negative_dsts); tierfs draws its own "
                "(negative_sampler=Uniform(k)); score stored negatives from node embeddings, as GraphBolt 2.1's "
                "link-prediction example evaluates them"
            )
        src, dst = _seed_pairs(minibatch.node_pairs, what)
        k = self.k
        input_nodes, pair_graph, *neg, blocks = self.sample((src, dst))
        seeds = pair_graph.ndata[dgl.NID]
        device = seeds.device
        ps, pd = (t.to(device) for t in pair_graph.edges())
        minibatch.compacted_node_pairs = (ps, pd)
        if k:
            # GraphBolt 2.1's UniformNegativeSampler layout: negatives keep their pair's source, so
            # negative_srcs is None and node_pairs_with_labels repeats the pairs' sources.
            nd = neg[0].edges()[1].to(device).reshape(-1, k)
            minibatch.compacted_negative_srcs, minibatch.compacted_negative_dsts = None, nd
            minibatch.negative_srcs, minibatch.negative_dsts = None, seeds[nd]
        minibatch.input_nodes = input_nodes
        minibatch.sampled_subgraphs = [_sampled_subgraph(b) for b in blocks]
        return minibatch

    def _check_reverse(self, g, eids, src, dst):
        """With exclude="reverse_id" and a reverse_eids map, the reverse of seed edge (u, v)
        must be an edge (v, u): tierfs excludes the reversed pair."""
        if self.exclude != "reverse_id" or self.reverse_eids is None or eids.numel() == 0:
            return
        rev = self.reverse_eids[eids]
        rs, rd = g.find_edges(rev)
        bad = torch.nonzero((rs.cpu() != dst) | (rd.cpu() != src)).reshape(-1)
        if bad.numel():
            i = int(bad[0])
            raise tierfs.InvalidArgumentError(
                f"tierfs.dgl.EdgePredictionSampler: reverse_eids[{int(eids[i])}] = {int(rev[i])} is not an edge "
                f"({int(dst[i])}, {int(src[i])}), the reverse of seed edge ({int(src[i])}, {int(dst[i])}); "
                "tierfs excludes each seed edge's reversed pair"
            )


def _sampled_subgraph(block):
    """A homogeneous DGL block as GraphBolt's ``SampledSubgraphImpl`` (CSC of its edges, its
    src and dst nodes' ids, its edges' ids), which ``gb.MiniBatch.blocks`` turns back into it
    with the edges ordered by destination."""
    s, d = block.edges()
    order = torch.argsort(d, stable=True)
    indptr = torch.zeros(block.num_dst_nodes() + 1, dtype=torch.int64, device=d.device)
    indptr[1:] = torch.cumsum(torch.bincount(d, minlength=block.num_dst_nodes()), 0)
    return gb.SampledSubgraphImpl(
        sampled_csc=gb.CSCFormatBase(indptr=indptr, indices=s[order]),
        original_column_node_ids=block.dstdata[dgl.NID],
        original_row_node_ids=block.srcdata[dgl.NID],
        original_edge_ids=block.edata[dgl.EID][order] if dgl.EID in block.edata else None,
    )


def as_edge_prediction_sampler(sampler, exclude=None, reverse_eids=None, reverse_etypes=None, negative_sampler=None, prefetch_labels=None):
    """DGL's ``dgl.dataloading.as_edge_prediction_sampler`` for a tierfs sampler: an
    :class:`EdgePredictionSampler` (link sampling in tierfs, no graph in memory) for a
    :class:`NeighborSampler`; any other sampler gets DGL's own."""
    if not isinstance(sampler, NeighborSampler):
        return dgl.dataloading.as_edge_prediction_sampler(
            sampler, exclude=exclude, reverse_eids=reverse_eids, reverse_etypes=reverse_etypes,
            negative_sampler=negative_sampler, prefetch_labels=prefetch_labels,
        )
    if reverse_etypes is not None or prefetch_labels:
        raise tierfs.NotSupportedError(
            "tierfs.dgl.as_edge_prediction_sampler: reverse_etypes and prefetch_labels are not supported for a "
            "tierfs sampler (homogeneous stores; labels go to EdgePredictionSampler.sample(..., labels=))"
        )
    return EdgePredictionSampler(sampler, exclude=exclude, reverse_eids=reverse_eids, negative_sampler=negative_sampler)


class LinkDataLoader(DataLoader):
    """Mini-batches of seed edges for link prediction: ``(input_nodes, pair_graph, neg_graph,
    blocks)`` (without ``neg_graph`` when the sampler draws no negatives), as
    ``dgl.dataloading.DataLoader`` yields them over ``as_edge_prediction_sampler``, with
    ``blocks[0].srcdata[feature_name]`` gathered from the store and, when ``labels`` are
    given (one a seed edge), ``pair_graph.edata["label"]`` the batch's.

    ``edges`` are pairs: ``(src, dst)`` or an ``(n, 2)`` tensor (GraphBolt's ``ItemSet`` of
    ``seeds``, with ``labels`` its ``labels``), or the name of one of the dataset's edge splits
    (``"train"``, ``"val"``, ``"test"``: its seed edges, and its labels unless ``labels`` is
    given; ``store.edge_split``). ``sampler`` is an :class:`EdgePredictionSampler`. The other
    arguments (``batch_size``, ``shuffle``, ``drop_last``, ``device``, ``feature_name`` and the
    loader options ``seed``, ``prefetch``) are :class:`DataLoader`'s, with its defaults; there
    are no node labels (``label_name``).
    """

    def __init__(self, store, edges, sampler: EdgePredictionSampler, labels=None, **kwargs):
        if not isinstance(sampler, EdgePredictionSampler):
            raise tierfs.InvalidArgumentError(
                f"tierfs.dgl.LinkDataLoader: sampler is a {type(sampler).__name__}; want a tierfs.dgl.EdgePredictionSampler"
            )
        if isinstance(edges, str):
            edges, stored_labels = store.edge_split(edges)
            edges = (edges[0], edges[1])
            labels = stored_labels if labels is None else labels
        pairs = _seed_pairs(edges, "tierfs.dgl.LinkDataLoader")
        if pairs is None:
            raise tierfs.InvalidArgumentError(
                "tierfs.dgl.LinkDataLoader: edges are pairs, (src, dst) or an (n, 2) tensor, or an edge split's name; "
                "not 1-D edge ids"
            )
        self.src, self.dst = pairs
        if "label_name" in kwargs:
            raise TypeError("tierfs.dgl.LinkDataLoader got an unexpected argument 'label_name' (seed edges have labels=, not node labels)")
        super().__init__(store, torch.arange(self.src.numel()), sampler, label_name=None, **kwargs)
        self.labels = None
        if labels is not None:
            self.labels = labels if isinstance(labels, torch.Tensor) else torch.as_tensor(np.asarray(labels))
            if self.labels.dim() == 0 or self.labels.shape[0] != self.src.numel():
                raise tierfs.InvalidArgumentError(
                    f"tierfs.dgl.LinkDataLoader: {self.labels.shape[0] if self.labels.dim() else 'a scalar'} labels "
                    f"for {self.src.numel()} seed edges; give one a seed edge"
                )

    def _sample(self, batch):
        labels = None if self.labels is None else self.labels[batch]
        return self.sampler.sample((self.src[batch], self.dst[batch]), labels=labels)

    def _gather(self, sampled):
        input_nodes, *graphs, blocks = sampled
        if self.feature_name is not None:
            blocks[0].srcdata[self.feature_name] = _read_rows(self.store, FEATURE, input_nodes.cpu()).to(input_nodes.device)
        if self.device.type != "cpu":
            blocks = [b.to(self.device) for b in blocks]
            graphs = [x.to(self.device) for x in graphs]
            input_nodes = input_nodes.to(self.device)
        return (input_nodes, *graphs, blocks)
