"""The [dgl] extra of python/pyproject.toml is what a pip user installs for tierfs.dgl; CI tests
DGL with the exact pins of scripts/dgl_test.sh (installed with --no-deps). These tests keep the
two in step: every pin CI tests is allowed by the extra, and the extra names what DGL 2.1.0
imports without declaring it (pandas, PyYAML, pydantic), with numpy held below 2."""

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "python" / "pyproject.toml"
DGL_TEST = ROOT / "scripts" / "dgl_test.sh"


def _extra(name):
    if not PYPROJECT.exists():
        pytest.skip("python/pyproject.toml is not beside the tests")
    reqs = [Requirement(r) for r in tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"][name]]
    return {r.name.lower(): r for r in reqs}


def _dgl_test_pins():
    if not DGL_TEST.exists():
        pytest.skip("scripts/dgl_test.sh is not beside the tests")
    block = DGL_TEST.read_text().split("REQUIREMENTS <<'EOF'", 1)[1].split("\nEOF", 1)[0]
    return dict(m.groups() for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+)$", block, re.M))


def test_dgl_extra_allows_every_pin_ci_tests():
    extra = _extra("dgl")
    pins = {k.lower(): v for k, v in _dgl_test_pins().items()}
    for name, req in extra.items():
        assert name in pins, f"[dgl] names {req} but scripts/dgl_test.sh does not test it"
        assert req.specifier.contains(pins[name], prereleases=True), f"[dgl] {req} excludes the tested {name}=={pins[name]}"


def test_dgl_extra_names_what_dgl_imports_undeclared():
    extra = _extra("dgl")
    for name in ("pandas", "pyyaml", "pydantic"):
        assert name in extra, f"[dgl] lacks {name}, which DGL 2.1.0 imports"
    assert not extra["numpy"].specifier.contains("2.0.0"), "[dgl] must hold numpy below 2 (torch 2.2.1)"
