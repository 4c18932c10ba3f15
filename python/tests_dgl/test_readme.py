"""README.md's DGL quick start, run as it stands in the DGL environment on the PyG quick start's
dataset (`tierfs synth --preset ogbn-products --scale 0.005 --out data/products`), in an empty
folder: the block after the `<!-- dgl-quickstart -->` marker."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tierfs

README = Path(__file__).resolve().parents[2] / "README.md"


def _dgl_block() -> str:
    if not README.exists():
        pytest.skip("README.md is not beside the tests")
    m = re.search(r"<!-- dgl-quickstart[^>]*-->\s*```python\n(.*?)```", README.read_text(), re.S)
    assert m, "README.md has no python block after a <!-- dgl-quickstart --> marker"
    return m.group(1)


def test_readme_dgl_quick_start_runs_as_it_stands(tmp_path):
    code = _dgl_block()
    tierfs.synth(tmp_path / "data" / "products", preset="ogbn-products", scale=0.005)
    code += "\nassert len(blocks) == 2 and x.shape[0] == len(input_nodes), (len(blocks), x.shape, len(input_nodes))\nprint('ok', x.shape)\n"
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [str(Path(tierfs.__file__).parents[1]), os.environ.get("PYTHONPATH", "")] if p)))
    assert run.returncode == 0 and run.stdout.startswith("ok"), run.stdout[-2000:] + run.stderr[-3000:]
