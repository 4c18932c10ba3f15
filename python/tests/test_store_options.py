"""The store options Python takes are the core's (featurestore.Options, read through
tfs_options_json("store")): every one reaches the core under its name, none is Python's alone, and
the docstrings list them all."""

import pytest

import tierfs
from tierfs import _options

# A value of each kind the core takes for any option of that kind.
SAMPLE = {"size": "1MiB", "int": 1, "bool": True, "string": "no-such-value"}


@pytest.mark.filterwarnings("ignore:tierfs. the GPU path is unavailable")
def test_every_core_option_reaches_the_core(graph):
    names = _options.names()
    assert {"host_cache", "gpu_cache", "feature", "queue_depth", "copy_workers"} <= set(names)
    assert "gpu_device" not in names  # Python's device= sets it
    for o in _options.table():
        if o["name"] in _options.PYTHON_FORMS:
            continue
        kwargs = {o["name"]: SAMPLE[o["kind"]]}
        try:
            tierfs.open(graph["path"], **kwargs).close()
        except tierfs.Error as e:
            # A value the option does not take (read_align=1, host_policy="no-such-value"): the
            # core's error names the option (or, for feature, the missing feature), so the value
            # arrived under its name.
            assert o["name"] in str(e) or "no-such-value" in str(e), (kwargs, e)


def test_a_bad_value_is_named_by_the_core(graph):
    # Options the core refuses below -1: the message names the option Python was given.
    for name in ("queue_depth", "max_concurrent_io", "copy_workers", "coalesce_gap", "read_align", "host_cache", "gpu_cache"):
        with pytest.raises(tierfs.InvalidArgumentError, match=name):
            tierfs.open(graph["path"], **{name: -7})


def test_unknown_option_lists_the_options(graph):
    with pytest.raises(tierfs.InvalidArgumentError) as e:
        tierfs.open(graph["path"], host_cahce="1MiB")
    assert "host_cahce" in str(e.value) and "host_cache" in str(e.value) and "copy_workers" in str(e.value)
    with pytest.raises(tierfs.InvalidArgumentError, match="device="):
        tierfs.open(graph["path"], gpu_device=0)
    with pytest.raises(TypeError):
        tierfs.open(graph["path"], host_policy=5)
    with pytest.raises(tierfs.InvalidArgumentError, match="queue_depth = 1.5 is not an integer"):
        tierfs.open(graph["path"], queue_depth=1.5)


def test_docstrings_list_every_option():
    for fn in (tierfs.open, tierfs.Store.__init__):
        for name in _options.names():
            assert f"{name} (" in fn.__doc__, (fn, name)
        assert "{store_options}" not in fn.__doc__


def test_options_survive_pickling(graph):
    import pickle

    with tierfs.open(graph["path"], host_cache="1MiB", copy_workers=2, topology_memory=False) as s:
        with pickle.loads(pickle.dumps(s)) as t:
            assert t._options == s._options and t.host_cache_bytes == s.host_cache_bytes
