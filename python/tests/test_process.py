"""Process rules: import in a fresh interpreter, tierfs never forks, a forked child gets a clear
error instead of a hang, spawn workers work, stores pickle."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import tierfs


def run_py(code: str, timeout: int = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, env=env)


def test_import_in_fresh_process_and_never_forks(graph, tmp_path):
    code = f"""
        import os, subprocess, sys
        forks = []
        os.register_at_fork(before=lambda: forks.append("fork"))
        real_popen = subprocess.Popen.__init__
        def popen(self, *a, **k):
            forks.append("subprocess")
            return real_popen(self, *a, **k)
        subprocess.Popen.__init__ = popen
        if hasattr(os, "posix_spawn"):
            real_spawn = os.posix_spawn
            os.posix_spawn = lambda *a, **k: (forks.append("posix_spawn"), real_spawn(*a, **k))[1]
        import numpy as np
        import tierfs, tierfs.pyg, tierfs.datasets
        s = tierfs.open({graph["path"]!r}, host_cache="16KiB")
        s.gather(np.arange(100)); s.labels([1, 2]); s.split("train"); s.stats(); s.csc()
        for b in tierfs.Loader(s, s.sampler([3, 2]), np.arange(500), batch_size=100):
            pass
        tierfs.synth({str(tmp_path / "g")!r}, nodes=500, avg_degree=3, dim=8)
        tierfs.ingest({str(tmp_path / "h")!r}, np.array([[0, 1], [1, 2]]), np.zeros((3, 4), np.float32))
        s.close()
        print("LIB", tierfs.LIBRARY_PATH)
        print("FORKS", forks)
    """
    r = run_py(code)
    assert r.returncode == 0, r.stderr
    assert "FORKS []" in r.stdout, r.stdout


def test_forked_child_gets_clear_error(graph):
    code = f"""
        import os, sys
        import tierfs
        s = tierfs.open({graph["path"]!r})
        s.gather([1])
        pid = os.fork()
        if pid == 0:
            try:
                s.gather([1])
                os._exit(3)
            except tierfs.ForkedProcessError as e:
                ok = "spawn" in str(e) and isinstance(e, tierfs.Error)
                os._exit(0 if ok else 4)
            except BaseException:
                os._exit(5)
        _, status = os.waitpid(pid, 0)
        print("CHILD", os.waitstatus_to_exitcode(status))
        print("PARENT", s.gather([1]).shape)
    """
    r = run_py(code, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "CHILD 0" in r.stdout and "PARENT (1," in r.stdout, r.stdout


class StoreDataset(torch.utils.data.Dataset):
    """A map-style dataset whose items are gathered rows (the store travels by pickle)."""

    def __init__(self, store):
        self.store = store

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.from_numpy(self.store.gather([i, i + 1]))


def test_dataloader_spawn_workers(store, graph):
    loader = torch.utils.data.DataLoader(StoreDataset(store), batch_size=4, num_workers=1, multiprocessing_context="spawn")
    got = torch.cat(list(loader)).reshape(-1, graph["dim"])
    want = np.concatenate([graph["x"][[i, i + 1]] for i in range(8)])
    np.testing.assert_array_equal(got.numpy(), want)


def test_store_pickle_reopens(graph):
    with tierfs.open(graph["path"], host_cache="32KiB") as s:
        t = pickle.loads(pickle.dumps(s))
        try:
            assert t is not s and t.path == s.path and t.host_cache_bytes == s.host_cache_bytes
            np.testing.assert_array_equal(t.gather([3, 4]), s.gather([3, 4]))
        finally:
            t.close()
    with pytest.raises(tierfs.ClosedError):
        pickle.dumps(s)


def test_missing_library_message(tmp_path):
    env = dict(os.environ, TIERFS_LIB=str(tmp_path / "nope" / "libtierfs.so"))
    r = subprocess.run([sys.executable, "-c", "import tierfs"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode != 0
    assert "cannot find the native library" in r.stderr and str(tmp_path / "nope") in r.stderr
