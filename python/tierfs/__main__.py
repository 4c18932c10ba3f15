"""``python -m tierfs``: with only --cflags / --libs / --includedir / --library, prints how to build
C programs against this package's tierfs.h and libtierfs.so (as ``pkg-config --cflags --libs
tierfs`` after ``make install``):

    cc first.c $(python -m tierfs --cflags --libs) -o first

Any other arguments run the ``tierfs`` command line (``python -m tierfs synth ...``).
"""

import sys

from tierfs import _paths

args = sys.argv[1:]
if args and all(a in _paths.FLAGS for a in args):
    sys.exit(_paths.main(args))
from tierfs import _cli  # noqa: E402

sys.exit(_cli.main(["tierfs", *args]))
