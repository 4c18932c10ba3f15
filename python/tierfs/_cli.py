"""The ``tierfs`` console script: the command line runs inside libtierfs (``tfs_cli_main``), the
same code as the Go binary's, so a wheel needs no second binary and no Go.

``tierfs ARGS`` and ``python -m tierfs._cli ARGS`` behave as the binary: output on file
descriptors 1 and 2, its exit status, Ctrl-C stops it.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from ctypes import c_char_p


def _program(arg0: str) -> str:
    """What commands that start the CLI again (mount's server) run: this script when it is an
    executable (the console script), else the ``tierfs`` on PATH."""
    if os.path.isfile(arg0) and os.access(arg0, os.X_OK):
        return os.path.abspath(arg0)
    return shutil.which("tierfs") or arg0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv if argv is None else argv)
    args[0:1] = [_program(args[0] if args else "tierfs")]
    from tierfs import _native  # loads the library (numpy is the only other import)

    # As the binary: Ctrl-C and a closed pipe end the process (Python would wait for the call).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.flush()
    sys.stderr.flush()
    _native.check_process()
    argv_c = (c_char_p * len(args))(*(os.fsencode(a) for a in args))
    return int(_native.lib.tfs_cli_main(len(args), argv_c))


if __name__ == "__main__":
    sys.exit(main())
