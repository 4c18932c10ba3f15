"""README.md's figures against what this machine prints (issue 29, item 6): the ratios the README
quotes from `make demo` (scripts/demo.sh) against the ones the demo prints here, and the
`tierfs advise` formulas of docs/advise.md (moved there from the README) against the model line
the command prints.

CPU and disk timings swing with the machine and its load, so a printed ratio agrees with the
README's range [lo, hi] when it lies within [lo / TOLERANCE, hi * TOLERANCE]; where one does not,
the demo's benchmark step runs twice more and the median of the three decides. A 5× disagreement
(the demo printing 0.17 where the README said 1.0–1.25) fails.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("TIERFS_REPO") or Path(__file__).resolve().parents[2])
README = ROOT / "README.md"
ADVISE_DOC = ROOT / "docs" / "advise.md"  # where the advisor's formulas are stated
DEMO = ROOT / "scripts" / "demo.sh"
TOLERANCE = 2.5

_NUM = r"(\d+(?:\.\d+)?)"
# (the start of the ratio line the demo prints, the README phrase quoting it: lo and hi as groups).
# The README's whitespace is collapsed to single spaces before matching.
FIGURES = [
    ("ssd tier disk IOPS / raw random-read IOPS", rf"SSD tier's disk IOPS at {_NUM}–{_NUM} of a bare io_uring"),
    ("host tier rows/s / in-memory gather rows/s", rf"host tier (?:gathers )?at {_NUM}–{_NUM} of (?:a plain |an )in-memory gather"),
    ("mixed rows/s / in-memory gather rows/s", rf"host cache, at {_NUM}–{_NUM} of an in-memory gather"),
]
# A README phrase that quotes one of these ratios in a form FIGURES does not parse would go
# unchecked: each of these must be one FIGURES parses.
QUOTES = [r"SSD tier[^;]{0,40}? of (?:a bare |raw )io_uring", r"host tier[^;]{0,40}? of (?:a plain |an )in-memory gather",
          r"host cache[^;]{0,20}? of an in-memory gather"]

pytestmark = pytest.mark.skipif(not DEMO.exists(), reason=f"no {DEMO} (the checkout's scripts/ is not beside python/)")


def _readme() -> str:
    return re.sub(r"\s+", " ", README.read_text())


def _ratios(out: str) -> dict[str, float]:
    """The demo's ratio lines, by their label (FIGURES' first column)."""
    found = {}
    for label, _ in FIGURES:
        for line in out.splitlines():
            if line.startswith(label):
                m = re.search(r":\s+(\d+(?:\.\d+)?)", line)
                assert m, f"cannot read the ratio of the demo's line {line!r}"
                found[label] = float(m.group(1))
    return found


def _run(args: list[str], timeout: int) -> str:
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert p.returncode == 0, f"{' '.join(args)} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p.stdout


@pytest.fixture(scope="module")
def demo(cli):
    """(the demo's output, its dataset directory): scripts/demo.sh into build/demo, as `make demo`
    runs it (a dataset already there of the same size is reused)."""
    data = ROOT / "build" / "demo"
    out = _run(["bash", str(DEMO), cli, str(data)], timeout=1200)
    assert "demo done" in out, out[-3000:]
    return out, data


def _agrees(value: float, lo: float, hi: float) -> bool:
    return lo / TOLERANCE <= value <= hi * TOLERANCE


def _machine() -> str:
    return f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"


def test_readme_quotes_every_demo_ratio_in_a_form_this_test_checks():
    text = _readme()
    for quote in QUOTES:
        for m in re.finditer(quote, text):
            # The parsed phrase must cover this quote: some FIGURES pattern matches at the same place.
            start = m.start()
            assert any(re.match(pattern, text[start:]) for _, pattern in FIGURES), (
                f"README.md quotes a demo ratio as {text[start:start + 120]!r}, which FIGURES in {__file__} does not "
                "parse: write it as the other quotes are, or teach FIGURES the new form")
    for label, pattern in FIGURES:
        assert re.search(pattern, text), f"README.md no longer quotes the demo's {label!r} as /{pattern}/ (update FIGURES)"


def test_readme_figures_agree_with_make_demo(demo, cli):
    out, data = demo
    text = _readme()
    printed = _ratios(out)
    missing = [label for label, _ in FIGURES if label not in printed]
    # The host tier and its in-memory reference run only where 3x the features fit in memory.
    assert not [m for m in missing if not m.startswith(("host tier", "mixed"))], f"the demo printed no {missing}:\n{out[-3000:]}"
    claims = [(label, float(lo), float(hi)) for label, pattern in FIGURES if label in printed for lo, hi in re.findall(pattern, text)]
    runs = {label: [v] for label, v in printed.items()}
    if any(not _agrees(printed[label], lo, hi) for label, lo, hi in claims):
        # Timings swing: run the demo's benchmark step (its command line, from demo.sh) twice more.
        m = re.search(r'"\$tierfs" bench gather "\$dir" (.*?) --json', DEMO.read_text())
        assert m, f"{DEMO} has no `\"$tierfs\" bench gather \"$dir\" ... --json` line"
        for _ in range(2):
            for label, v in _ratios(_run([cli, "bench", "gather", str(data), *m.group(1).split()], timeout=600)).items():
                runs[label].append(v)
    wrong = []
    for label, lo, hi in claims:
        value = statistics.median(runs[label])
        if not _agrees(value, lo, hi):
            wrong.append(f"README.md says {lo}–{hi} for {label!r}; the demo printed {runs[label]} (median {value:.2f}), "
                         f"outside [{lo / TOLERANCE:.2f}, {hi * TOLERANCE:.2f}]")
    print(f"demo ratios on this machine ({_machine()}): {runs}")
    assert not wrong, f"on this machine ({_machine()}):\n" + "\n".join(wrong)
    if missing:
        pytest.skip(f"the demo printed no {missing} here (features x 3 do not fit this machine's memory)")


def _equations(formulas: str) -> list[str]:
    """`A = ...; B = ..., C = ...` as ['A=...', 'B=...', 'C=...'], whitespace removed (commas inside
    parentheses, as in max(a, b), do not split)."""
    return [re.sub(r"\s+", "", e) for e in re.split(r"[;,]\s*(?=[A-Za-z_]+\s*=)", formulas) if e.strip()]


def test_readme_advise_formulas_are_the_ones_tierfs_advise_prints(demo, cli):
    """The formulas of docs/advise.md (the README links it) are the ones the command prints."""
    _, data = demo
    printed = {}  # mode -> the equations of its model line
    for mode in ("serial", "overlapped"):
        out = _run([cli, "advise", str(data), "--fanouts", "10,5", "--batch-size", "1024", "--host-cache", "64MB",
                    "--ssd-price", "150", "--machine-price", "3000", "--train-ms", "20", "--mode", mode], timeout=600)
        model = [line for line in out.splitlines() if line.startswith("model")]
        assert len(model) == 1, f"tierfs advise --mode {mode} printed no single `model` line:\n{out}"
        printed[mode] = _equations(model[0].removeprefix("model"))
        assert any(e.startswith("T_batch=") for e in printed[mode]), model[0]
    every = {e for equations in printed.values() for e in equations}
    # The page's formulas: its backticked spans that define one of the model's quantities.
    names = {e.split("=", 1)[0] for e in every}
    prose = re.sub(r"^```.*?^```", "", ADVISE_DOC.read_text(), flags=re.S | re.M)  # inline spans only
    spans = [re.sub(r"\s+", "", s) for s in re.findall(r"`([^`]+)`", prose)]
    quoted = [s for s in spans if "=" in s and s.split("=", 1)[0] in names]
    for mode, equations in printed.items():
        for e in equations:
            assert e in quoted, f"{ADVISE_DOC.name} does not state `{e}` of tierfs advise --mode {mode}; it states {quoted}"
    stale = [s for s in quoted if s not in every]
    assert not stale, f"{ADVISE_DOC.name} states {stale}, which tierfs advise prints in neither mode ({sorted(every)})"


def test_tolerance_takes_swings_and_fails_a_5x_disagreement():
    assert _agrees(0.6, 0.5, 0.7) and _agrees(1.6, 0.5, 0.7) and _agrees(0.21, 0.5, 0.7)
    assert not _agrees(0.17, 1.0, 1.25)  # what issue 29 saw: 0.17 printed, 1.0–1.25 quoted
    assert not _agrees(6.5, 1.0, 1.25)
