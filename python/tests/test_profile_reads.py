"""store.profile_reads: how often a loader's batches read each row (tfs_profile_reads), the counts
a distributed placement sums over ranks. Checked against counts computed here from the CSC with
fanouts that take every neighbor (so the sampled node sets are known exactly)."""

from __future__ import annotations

import numpy as np
import pytest

import tierfs


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    path = tmp_path_factory.mktemp("profile") / "g"
    tierfs.synth(path, nodes=2000, avg_degree=6, dim=8, seed=11)
    return str(path)


def _reference(indptr, indices, seeds, batch_size, hops, n):
    """Per node, the batches (of seeds in order) whose every-neighbor sample of hops hops reads it."""
    counts = np.zeros(n, dtype=np.int64)
    for lo in range(0, seeds.shape[0], batch_size):
        reached = np.unique(seeds[lo : lo + batch_size])
        frontier = reached
        for _ in range(hops):
            nbrs = np.concatenate([indices[indptr[v] : indptr[v + 1]] for v in frontier] + [np.empty(0, dtype=np.int64)])
            frontier = np.setdiff1d(nbrs, reached)
            reached = np.union1d(reached, frontier)
        counts[reached] += 1
    return counts


@pytest.mark.parametrize("hops", [1, 2])
def test_profile_reads_counts_every_neighbor_sample(synth, hops):
    seed = int(np.random.SeedSequence().entropy % (1 << 31))
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    with tierfs.open(synth) as s:
        indptr, indices = s.csc()
        seeds = rng.choice(s.num_nodes(), size=300, replace=False).astype(np.int64)
        got = s.profile_reads([-1] * hops, batch_size=64, seeds=seeds, seed=seed)
        assert got.dtype == np.uint32 and got.shape == (s.num_nodes(),)
        want = _reference(indptr, indices, seeds, 64, hops, s.num_nodes())
        assert np.array_equal(got.astype(np.int64), want), f"seed {seed}"
        # More batches than an epoch: every batch reads its seeds, so each seed is counted at
        # least as often as the epochs that visit it, and no node more often than the batches.
        many = s.profile_reads([3, 2], batch_size=64, batches=12, seeds=seeds, seed=seed)
        assert many[seeds].min() >= 12 // 5 and many.max() <= 12


def test_profile_reads_defaults_to_the_train_split(synth):
    with tierfs.open(synth) as s:
        train = s.split("train")
        counts = s.profile_reads([5, 2], batch_size=128, seed=1)
        assert counts[train].min() >= 1  # one epoch of the train split reads every seed
        assert np.array_equal(counts, s.profile_reads([5, 2], batch_size=128, seeds=train, seed=1))


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        (dict(fanouts=[], batch_size=8), ValueError, ["fanouts"]),
        (dict(fanouts=[5], batch_size=0), ValueError, ["batch_size", "0"]),
        (dict(fanouts=[5], batch_size=8, batches=0), ValueError, ["batches", "0"]),
        (dict(fanouts=[5], batch_size=8, seeds=np.empty(0, dtype=np.int64)), ValueError, ["seeds", "empty"]),
        (dict(fanouts=[5], batch_size=8, seeds=[1, 2, 2000]), IndexError, ["seeds[2]", "2000"]),
    ],
)
def test_profile_reads_bad_input(synth, kwargs, error, words):
    with tierfs.open(synth) as s:
        with pytest.raises(error) as e:
            s.profile_reads(**kwargs)
        for w in words:
            assert w in str(e.value), str(e.value)
