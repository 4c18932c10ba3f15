"""`import tierfs` and `import tierfs.pyg` print no warning (issue 29): each runs in a fresh
interpreter with every warning shown (-W always), since a module already imported warns no more."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("modules", ["tierfs", "tierfs, tierfs.pyg"])
def test_import_prints_no_warning(modules):
    if modules.endswith("pyg"):
        pytest.importorskip("torch_geometric")
    p = subprocess.run([sys.executable, "-W", "always", "-c", f"import {modules}"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stderr == "", f"import {modules} printed:\n{p.stderr}"
