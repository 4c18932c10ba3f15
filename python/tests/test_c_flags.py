"""C programs build against the package's own tierfs.h and libtierfs.so with the flags of
`python -m tierfs --cflags --libs` (tierfs.get_include(), tierfs.get_library()), and run without
LD_LIBRARY_PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tierfs

PROGRAM = r"""
#include <stdio.h>
#include <tierfs.h>
int main(int argc, char **argv) {
  if (argc != 2) return 2;
  if (tfs_abi_version() != TFS_ABI_VERSION) return 2;
  tfs_store *s;
  if (tfs_open(argv[1], NULL, &s) != TFS_OK) { fprintf(stderr, "%s\n", tfs_last_error()); return 1; }
  tfs_store_info info = {.struct_size = sizeof info};
  if (tfs_store_info_get(s, NULL, &info) != TFS_OK) { fprintf(stderr, "%s\n", tfs_last_error()); return 1; }
  printf("abi %d dim %lld\n", tfs_abi_version(), (long long)info.dim);
  return tfs_close(s) == TFS_OK ? 0 : 1;
}
"""


def test_get_include_and_library():
    assert (Path(tierfs.get_include()) / "tierfs.h").is_file()
    assert Path(tierfs.get_library()) == Path(tierfs.LIBRARY_PATH).resolve()


def test_python_m_tierfs_flags_build_a_program(tmp_path):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    flags = subprocess.run([sys.executable, "-m", "tierfs", "--cflags", "--libs"], capture_output=True, text=True, check=True).stdout.split()
    assert f"-I{tierfs.get_include()}" in flags and "-ltierfs" in flags
    src = tmp_path / "p.c"
    src.write_text(PROGRAM)
    subprocess.run([cc, "-std=c11", "-Wall", "-Werror", str(src), *flags, "-o", str(tmp_path / "p")], check=True)
    tierfs.synth(tmp_path / "g", nodes=500, avg_degree=4, dim=24, seed=1)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = subprocess.run([str(tmp_path / "p"), str(tmp_path / "g")], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"abi {tierfs.ABI_VERSION} dim 24"


def test_python_m_tierfs_runs_the_cli():
    out = subprocess.run([sys.executable, "-m", "tierfs", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("tierfs "), out.stderr
