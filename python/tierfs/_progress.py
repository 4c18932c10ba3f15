"""Progress of long native calls (ingest, synth, verify, planned placement): a Python
callable, or bars, behind the library's tfs_progress_fn.

Shared by build and store; it imports neither.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Union

from . import _native, errors


ProgressLike = Union[None, bool, Callable[[str, int, int], Any]]


def _progress_callback(progress: ProgressLike) -> tuple:
    """(the tfs_progress_fn for progress, or None; a list that collects its first exception).
    progress: a callable(stage, done, total), True for a bar per stage (tqdm where installed,
    else lines on stderr), or None/False."""
    if progress is None or progress is False:
        return None, []
    if progress is True:
        progress = _StageBars()
    if not callable(progress):
        raise errors.DTypeError(f"progress must be a callable(stage, done, total), True or None, got {type(progress).__name__}")
    errs: List[BaseException] = []

    def call(_ctx: Any, stage: bytes, done: int, total: int) -> None:
        if errs:
            return
        try:
            progress(stage.decode(), int(done), int(total))
        except BaseException as e:  # raised once the native call returns
            errs.append(e)

    return _native.ProgressFn(call), errs


class _StageBars:
    """progress=True: one tqdm bar per stage where tqdm is installed, else a line per stage on
    stderr, rewritten in place."""

    def __init__(self) -> None:
        try:
            import tqdm

            self._tqdm: Any = tqdm.tqdm
        except ImportError:
            self._tqdm = None
        self._bars: Dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        finished = total > 0 and done >= total
        if self._tqdm is not None:
            bar = self._bars.get(stage)
            if bar is None:
                bar = self._bars[stage] = self._tqdm(total=total or None, desc=stage, leave=True)
            bar.update(done - bar.n)
            if finished:
                bar.close()
            return
        import sys

        pct = f" ({100 * done / total:.0f}%)" if total > 0 else ""
        sys.stderr.write(f"\r{stage}: {done:,}{f' of {total:,}' if total > 0 else ''}{pct}" + ("\n" if finished else ""))
        sys.stderr.flush()
