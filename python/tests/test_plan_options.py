"""The plan and link options Python takes are the core's (planned.EpochOptions and
featurestore.LinkOptions, read through tfs_options_json): every option of each table is a keyword
of plan_epochs that reaches tfs_epochs_open's JSON under its name, no other keyword is taken, the
docstring lists them all, and no function re-lists a keyword of a family with another default."""

import inspect
import json

import numpy as np
import pytest

import tierfs
from tierfs import _options, epochs

# A value of each kind, and what the JSON of the C call holds for it.
SAMPLE = {"size": ("3MiB", 3 << 20), "int": (2, 2), "uint": (-1, (1 << 64) - 1), "float": (2.5, 2.5), "bool": (True, True),
          "string": ("x", "x"), "map": ({"a:b:a": "a:b:a"}, {"a:b:a": "a:b:a"})}
POSITIONAL = ("batch_size", "epochs")  # plan_epochs takes them by position


class _Sent(Exception):
    pass


@pytest.fixture
def sent(monkeypatch):
    """The options_json of the next tfs_epochs_open_elsewhere, which then fails."""
    got = {}

    class Lib:
        def __getattr__(self, name):
            return getattr(epochs._native.lib, name)

        def tfs_epochs_open_elsewhere(self, h, request, *args):
            got.update(json.loads(request))
            raise _Sent

    monkeypatch.setattr(epochs, "lib", Lib())
    return got


def test_tables_have_the_front_ends_names():
    assert {"plan_dir", "batch_size", "epochs", "replace", "seed", "shuffle_seed", "place_tiers", "pack_method", "pack_memory"} <= set(_options.names("epochs"))
    assert _options.names("link") == ["neg_sampling", "amount", "strict", "exclude_seed_edges", "undirected", "reverse_edge_types"]
    d = _options.defaults("epochs")
    assert d["place_tiers"] is True and d["replan"] is True and d["batch_size"] == 1024
    assert _options.defaults("link")["amount"] == 1
    with pytest.raises(tierfs.InvalidArgumentError, match="family 'colour'|family \"colour\""):
        _options.table("colour")


def test_every_plan_option_reaches_the_core(store, sent):
    for o in _options.table("epochs"):
        if o["name"] in POSITIONAL:
            continue
        value, want = SAMPLE[o["kind"]]
        if o.get("choices"):
            value = want = o["choices"][0]
        if o["name"] == "node_type":
            value = want = store.node_type
        sent.clear()
        with pytest.raises(_Sent):
            store.plan_epochs([2], 8, 1, **{o["name"]: value})
        assert sent[o["name"]] == want, (o, sent)
        # An option left out is not sent: the core gives it the table's default.
        assert not set(sent) & (set(_options.names("epochs")) - {o["name"], "plan_dir", *POSITIONAL}), sent
    with pytest.raises(_Sent):
        store.plan_epochs([2], 8, 3)
    assert sent["batch_size"] == 8 and sent["epochs"] == 3 and sent["fanouts"] == [2]


def test_every_link_option_reaches_the_core(store, sent):
    pairs = np.array([[0, 1], [2, 3]])
    for o in _options.table("link"):
        if o["name"] == "reverse_edge_types":  # a plan of several types only (test_planned_hetero)
            continue
        value, want = SAMPLE[o["kind"]]
        if o["name"] == "neg_sampling":
            value = want = "binary"
        extra = {"neg_sampling": "binary"} if o["name"] == "amount" else {}
        sent.clear()
        with pytest.raises(_Sent):
            store.plan_epochs([2], 8, 1, seed_edges=pairs, **extra, **{o["name"]: value})
        assert sent["seed_edges"][o["name"]] == want, (o, sent)


def test_unknown_and_misplaced_options_are_named(store):
    with pytest.raises(tierfs.InvalidArgumentError, match=r"no option 'place_tier'.*place_tiers.*exclude_seed_edges"):
        store.plan_epochs([2], 8, 1, place_tier=False)
    with pytest.raises(tierfs.InvalidArgumentError, match="strict is a link option; it goes with seed_edges"):
        store.plan_epochs([2], 8, 1, strict=True)
    with pytest.raises(tierfs.InvalidArgumentError, match=r"pack_method = 'fast': want \"scan\", \"random\""):
        store.plan_epochs([2], 8, 1, pack_method="fast")
    with pytest.raises(tierfs.InvalidArgumentError, match="disk_budget"):
        store.plan_epochs([2], 8, 1, disk_budget="lots")
    with pytest.raises(tierfs.InvalidArgumentError, match=r"x: no option 'plan_colour'"):
        epochs.plan_request(8, 1, {"plan_colour": 1}, "x")


def test_docstring_lists_every_option():
    doc = tierfs.Store.plan_epochs.__doc__
    for family in ("epochs", "link"):
        for name in _options.names(family):
            if name not in POSITIONAL:
                assert f"{name} (" in doc, name
        assert "{" + family + "_options}" not in doc
    assert "place_tiers (bool; default True)" in doc


def _functions():
    """The package's functions that take plan or link options."""
    from tierfs import distplanned, sampler

    fns = [tierfs.Store.plan_epochs, epochs.PlannedEpochs.__init__, distplanned.plan_epochs,
           sampler.Sampler.sample_from_edges]
    try:
        from tierfs.pyg import loader as pyg_loader

        fns.append(pyg_loader.LinkNeighborLoader.__init__)
    except ImportError:
        pass
    return fns


def test_no_function_relists_a_plan_option():
    """plan_epochs' keywords are the table's (**options): none written by hand beside it."""
    for fn in (tierfs.Store.plan_epochs, epochs.PlannedEpochs.__init__):
        params = inspect.signature(fn).parameters
        assert not set(params) & (set(_options.names("epochs")) - set(POSITIONAL)), fn
        assert not set(params) & set(_options.names("link")), fn


def test_a_keyword_written_by_hand_has_the_tables_default():
    """Where a signature names a plan or link option (a sampler's sample_from_edges), its
    default is the table's (None standing for the zero value the core reads as its default)."""
    zero = {"bool": False, "string": "", "int": 0, "uint": 0, "float": 0.0, "size": 0, "map": None}
    for family in ("epochs", "link"):
        kinds = {o["name"]: o for o in _options.table(family)}
        for fn in _functions():
            for name, p in inspect.signature(fn).parameters.items():
                o = kinds.get(name)
                if o is None or p.default is inspect.Parameter.empty or name in POSITIONAL:
                    continue
                want = o.get("default", zero[o["kind"]])
                assert p.default == want or (p.default is None and want in (zero[o["kind"]], None)), (fn, name, p.default, want)
