"""store.mount refuses an empty path (it used to mount over the working directory) and a
directory that is already a mountpoint (mounts used to stack), naming it."""

from __future__ import annotations

import pytest

import tierfs


def test_mount_refuses_empty_and_mounted(store):
    with pytest.raises(tierfs.InvalidArgumentError, match="mountpoint is empty"):
        store.mount("")
    with pytest.raises(tierfs.InvalidArgumentError, match="/proc is already a mountpoint"):
        store.mount("/proc")
