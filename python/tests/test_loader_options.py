"""The loader options are one table (tierfs._options.LOADER, Python's own: the core has no
loader): tierfs.Loader takes every option of it as a keyword and nothing else, the PyG front ends
take them under their names (shuffle_seed) and pass them on, each docstring lists what it takes,
no signature re-lists an option (but PyG's own arguments, at PyG's defaults), and an entry added
to the table is taken, checked and passed on with no other change."""

import inspect

import numpy as np
import pytest
import torch

import tierfs
import tierfs.pyg
from tierfs import _options
from tierfs.pyg import loader as pyg_loader


@pytest.fixture
def received(monkeypatch):
    """[(where, options)] of every loader_options call: what each front end resolved."""
    calls = []
    real = _options.loader_options

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append((args[1], out))
        return out

    monkeypatch.setattr(_options, "loader_options", spy)
    return calls


@pytest.fixture
def colour(monkeypatch):
    """The loader table with one entry more, as a new option would be added."""
    monkeypatch.setattr(_options, "LOADER", _options.LOADER + [{"name": "colour", "kind": "int", "default": 3, "min": 1, "max": 9,
                                                              "help": "a test option"}])
    monkeypatch.delitem(_options._tables, "loader", raising=False)
    yield "colour"
    _options._tables.pop("loader", None)


def test_table():
    assert _options.names("loader") == ["shuffle", "drop_last", "prefetch", "seed", "labels", "planned_epochs", "plan_dir",
                                        "plan_disk_budget", "reuse_samples", "plan_pack_method", "plan_pack_memory", "x_dtype"]
    d = _options.defaults("loader")
    assert d["shuffle"] is True and d["prefetch"] == 4 and d["planned_epochs"] == 0 and d["labels"] is None
    # A plan option under the loader's name is the core's: kind, choices and help from its table.
    plan = {o["name"]: o for o in _options.table("epochs")}
    loader = {o["name"]: o for o in _options.table("loader")}
    for name, of in (("plan_disk_budget", "disk_budget"), ("plan_pack_method", "pack_method"), ("plan_pack_memory", "pack_memory")):
        assert {k: v for k, v in loader[name].items() if k not in ("name", "epochs")} == {k: v for k, v in plan[of].items() if k != "name"}


def test_every_option_reaches_the_loader(store, received):
    values = {"shuffle": False, "drop_last": True, "prefetch": 2, "seed": 7, "labels": False, "planned_epochs": 0, "plan_dir": "/tmp/x",
              "plan_disk_budget": "3MiB", "reuse_samples": False, "plan_pack_method": "scan", "plan_pack_memory": "2MiB", "x_dtype": torch.float64}
    assert set(values) == set(_options.names("loader"))
    want = dict(values, plan_disk_budget=3 << 20, plan_pack_memory=2 << 20, x_dtype="float64")
    loader = tierfs.Loader(store, store.sampler([2]), np.arange(40), 8, **values)
    assert received[-1] == ("tierfs.Loader", want)
    assert (loader.shuffle, loader.drop_last, loader.prefetch, loader.seed, loader.labels) == (False, True, 2, 7, False)
    # Left out, each takes the table's default.
    tierfs.Loader(store, store.sampler([2]), np.arange(40), 8)
    assert received[-1][1] == {n: (d if n != "plan_disk_budget" else None) for n, d in _options.defaults("loader").items()}


def test_pyg_loaders_pass_them_on_under_their_names(store, received):
    tierfs.pyg.NeighborLoader(store, [2], batch_size=8, shuffle=True, shuffle_seed=5, prefetch=3, plan_pack_memory="1MiB")
    where, got = received[-1]
    assert where == "tierfs.Loader" and got["seed"] == 5 and got["prefetch"] == 3 and got["shuffle"] is True
    assert got["plan_pack_memory"] == 1 << 20 and got["labels"] is False and got["drop_last"] is False
    eli = torch.tensor([[0, 1, 2], [1, 2, 3]])
    loader = tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=eli, batch_size=2, prefetch=5, shuffle_seed=9)
    where, got = received[-1]
    assert where == "tierfs.pyg.LinkNeighborLoader" and set(got) == set(pyg_loader._LINK_TAKES)
    assert got["seed"] == 9 and loader.prefetch == 5


def test_bad_values_and_names_are_named(store):
    smp = store.sampler([2])
    with pytest.raises(tierfs.InvalidArgumentError, match=r"tierfs.Loader: prefetch 0 must be from 1 to 256"):
        tierfs.Loader(store, smp, np.arange(40), 8, prefetch=0)
    with pytest.raises(tierfs.InvalidArgumentError, match=r"tierfs.Loader: seed 'x' must be an int"):
        tierfs.Loader(store, smp, np.arange(40), 8, seed="x")
    with pytest.raises(tierfs.InvalidArgumentError, match=r"plan_pack_method = 'fast': want \"scan\", \"random\""):
        tierfs.Loader(store, smp, np.arange(40), 8, plan_pack_method="fast")
    with pytest.raises(tierfs.InvalidArgumentError, match=r"tierfs.Loader: no loader option 'prefech'; the options are shuffle, drop_last, prefetch"):
        tierfs.Loader(store, smp, np.arange(40), 8, prefech=2)
    with pytest.raises(tierfs.InvalidArgumentError, match=r"tierfs.pyg.NeighborLoader: shuffle_seed 'x' must be an int"):
        tierfs.pyg.NeighborLoader(store, [2], shuffle_seed="x")
    with pytest.raises(TypeError, match="unexpected argument 'labels'"):  # PyG makes y itself
        tierfs.pyg.NeighborLoader(store, [2], labels=True)
    with pytest.raises(tierfs.NotSupportedError, match="auto"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=torch.tensor([[0], [1]]), shuffle=True, planned_epochs="auto")


def test_docstrings_list_what_each_takes():
    names = _options.names("loader")
    rename = pyg_loader._PYG_NAMES
    for cls, takes in ((tierfs.Loader, names), (tierfs.pyg.NeighborLoader, [n for n in names if n not in ("labels", "shuffle", "drop_last")]),
                       (tierfs.pyg.LinkNeighborLoader, pyg_loader._LINK_TAKES)):
        doc = cls.__doc__
        assert "{loader_options}" not in doc, cls
        listed = [n for n in names if f"\n        {rename.get(n, n) if cls is not tierfs.Loader else n} (" in doc]
        assert listed == [n for n in names if n in takes], cls
    assert "prefetch (int from 1 to 256; default 4)" in tierfs.Loader.__doc__
    assert "shuffle_seed (int; default 0)" in tierfs.pyg.NeighborLoader.__doc__


def test_no_signature_relists_an_option():
    """The loader options come as **options, so each default lives in the table; PyG's own
    arguments (shuffle, drop_last) stay in NeighborLoader's signature at PyG's defaults."""
    names = set(_options.names("loader"))
    assert not set(inspect.signature(tierfs.Loader.__init__).parameters) & names
    names = {pyg_loader._PYG_NAMES.get(n, n) for n in names}  # tierfs.pyg's seed is the sampler's
    assert not set(inspect.signature(tierfs.pyg.LinkNeighborLoader.__init__).parameters) & names
    pyg = inspect.signature(tierfs.pyg.NeighborLoader.__init__).parameters
    assert set(pyg) & names == set(pyg_loader._PYG_OWN)
    torch_defaults = inspect.signature(torch.utils.data.DataLoader.__init__).parameters  # PyG's loaders' are torch's DataLoader's
    for name in pyg_loader._PYG_OWN:
        assert pyg[name].default == bool(torch_defaults[name].default), name


def test_an_entry_added_to_the_table_is_taken_checked_and_passed_on(store, colour, received):
    smp = store.sampler([2])
    tierfs.Loader(store, smp, np.arange(40), 8, colour=5)
    assert received[-1][1]["colour"] == 5
    tierfs.Loader(store, smp, np.arange(40), 8)
    assert received[-1][1]["colour"] == 3  # the table's default
    with pytest.raises(tierfs.InvalidArgumentError, match=r"colour 10 must be from 1 to 9 \(a test option\)"):
        tierfs.Loader(store, smp, np.arange(40), 8, colour=10)
    tierfs.pyg.NeighborLoader(store, [2], batch_size=8, colour=6)  # through to tierfs.Loader
    assert received[-1] == ("tierfs.Loader", received[-1][1]) and received[-1][1]["colour"] == 6
    with pytest.raises(tierfs.InvalidArgumentError, match="no loader option 'nope'.*colour"):
        tierfs.Loader(store, smp, np.arange(40), 8, nope=1)

    def fn():
        """Options:

            {loader_options}
        """

    assert "colour (int from 1 to 9; default 3): a test option." in _options.document(fn, "loader").__doc__
    # A loader that takes a named subset does not take it until it says so.
    with pytest.raises(TypeError):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=torch.tensor([[0], [1]]), colour=6)
