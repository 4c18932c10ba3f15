"""The ``tierfs`` console script: it runs the ``tierfs`` program (the Go binary of cmd/tierfs)
that the package ships as ``tierfs/bin/tierfs``, in place of this Python process (exec), so
output, exit status and signals are the program's own. The C library carries no CLI code.

``tierfs ARGS``, ``python -m tierfs ARGS`` and ``python -m tierfs._cli ARGS`` run the same
program: $TIERFS_CLI when set, else the package's ``bin/tierfs``, else a source checkout's
``build/tierfs`` (``make build``; the package run from the checkout with PYTHONPATH=python).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_PKG = Path(__file__).resolve().parent
CLI_ENV = "TIERFS_CLI"


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def program() -> str:
    """The path of the ``tierfs`` program this package runs; FileNotFoundError names where it
    looked."""
    given = os.environ.get(CLI_ENV)
    if given:
        if not _runnable(Path(given)):
            raise FileNotFoundError(f"tierfs: {CLI_ENV}={given} is not an executable file")
        return given
    candidates = (_PKG / "bin" / "tierfs", _PKG.parent.parent / "build" / "tierfs")
    for path in candidates:
        if _runnable(path):
            return str(path)
    raise FileNotFoundError(
        f"tierfs: no tierfs program at {candidates[0]} (nor a checkout's {candidates[1]}): reinstall the "
        f"package from a wheel or a checkout, run `make build` in the checkout, or set {CLI_ENV}"
    )


def main(argv: list[str] | None = None) -> int:
    """Runs the program with argv[1:] (default sys.argv[1:]); returns only when it cannot start
    (exit status 127, as a shell's for a missing command)."""
    args = list(sys.argv if argv is None else argv)[1:]
    try:
        path = program()
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, ["tierfs", *args])
    return 127  # not reached: execv returns only by raising


if __name__ == "__main__":
    sys.exit(main())
