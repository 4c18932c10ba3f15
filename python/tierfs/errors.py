"""Exceptions of tierfs.

Every error raised by tierfs is a :class:`tierfs.Error`. Each class also derives from the built-in
exception a Python caller would expect, so ``except ValueError`` and ``except tierfs.Error`` both
catch a bad argument. The message is the core's (``tfs_last_error()``), unchanged.

=================  ================================  =========================================
C status           class                             also a
=================  ================================  =========================================
TFS_EINVAL         :class:`InvalidArgumentError`     ``ValueError``
TFS_ENOENT         :class:`NotFoundError`            ``FileNotFoundError`` (files, datasets)
TFS_ENOENT         :class:`KeyNotFoundError`         ``KeyError`` (a split, feature or type by name)
TFS_ERANGE         :class:`OutOfRangeError`          ``IndexError`` and ``ValueError``
TFS_ECORRUPT       :class:`CorruptError`             ``OSError``
TFS_EIO            :class:`IOFailedError`            ``OSError``
TFS_ENOMEM         :class:`OutOfMemoryError`         ``MemoryError``
TFS_ECLOSED        :class:`ClosedError`              ``ValueError`` (as a closed Python file)
TFS_ENOTSUP        :class:`NotSupportedError`        ``NotImplementedError``
TFS_EVERSION       :class:`VersionError`             ``RuntimeError``
TFS_EINTERNAL      :class:`InternalError`            ``RuntimeError``
(Python side)      :class:`DTypeError`               ``TypeError`` (ids of a non-integer dtype)
(Python side)      :class:`ForkedProcessError`       ``RuntimeError``
(Python side)      :class:`PeerError`                ``RuntimeError`` (a rank of a distributed store failed)
=================  ================================  =========================================
"""

from __future__ import annotations

import re

from . import _abi, _cabi

__all__ = [
    "Error",
    "InvalidArgumentError",
    "NotFoundError",
    "KeyNotFoundError",
    "OutOfRangeError",
    "CorruptError",
    "IOFailedError",
    "OutOfMemoryError",
    "ClosedError",
    "NotSupportedError",
    "VersionError",
    "InternalError",
    "PeerError",
    "DTypeError",
    "ForkedProcessError",
    "STATUS_NAMES",
]

# tfs_status codes (capi/tierfs.h, generated into _abi.py). They never change meaning.
OK = _abi.TFS_OK
EINVAL = _abi.TFS_EINVAL
ENOENT = _abi.TFS_ENOENT
ERANGE = _abi.TFS_ERANGE
ECORRUPT = _abi.TFS_ECORRUPT
EIO = _abi.TFS_EIO
ENOMEM = _abi.TFS_ENOMEM
ECLOSED = _abi.TFS_ECLOSED
ENOTSUP = _abi.TFS_ENOTSUP
EVERSION = _abi.TFS_EVERSION
EINTERNAL = _abi.TFS_EINTERNAL

#: status code -> its C name ("TFS_EIO"), every tfs_status of the header.
STATUS_NAMES = {v: k for k, v in _abi.ENUMS["tfs_status"].items()}


class Error(Exception):
    """Base class of every tierfs error. Its ``__init__`` comes first in every subclass's MRO,
    so an ``OSError`` subclass takes ``(message, status)`` too (not OSError's ``(errno,
    strerror)``).

    Attributes:
        status: the ``tfs_status`` code of the failed native call (0 for errors raised by the
            Python layer itself).
        message: the core's message, or the Python layer's.
    """

    status: int = 0

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status

    def __str__(self) -> str:  # KeyError would otherwise print repr(message)
        return self.message

    @property
    def status_name(self) -> str:
        """The status code's name, e.g. ``"TFS_ERANGE"``."""
        return STATUS_NAMES.get(self.status, f"status {self.status}")


class InvalidArgumentError(Error, ValueError):
    """A bad argument: wrong size, shape, option or value (``TFS_EINVAL``)."""

    status = EINVAL


_cabi.invalid_argument = InvalidArgumentError  # what a value that cannot cross the C ABI raises


class NotFoundError(Error, FileNotFoundError):
    """A file or dataset that does not exist (``TFS_ENOENT``)."""

    status = ENOENT


class KeyNotFoundError(Error, KeyError):
    """A split, feature or node/edge type the dataset does not have (``TFS_ENOENT``)."""

    status = ENOENT


class OutOfRangeError(Error, IndexError, ValueError):
    """A node id outside ``[0, num_nodes)`` (``TFS_ERANGE``)."""

    status = ERANGE


class CorruptError(Error, OSError):
    """Data that does not match its checksum or manifest (``TFS_ECORRUPT``)."""

    status = ECORRUPT


class IOFailedError(Error, OSError):
    """A read or write that failed (``TFS_EIO``)."""

    status = EIO


class OutOfMemoryError(Error, MemoryError):
    """Memory could not be had (``TFS_ENOMEM``)."""

    status = ENOMEM


class ClosedError(Error, ValueError):
    """A call on a closed store, or a freed sampler (``TFS_ECLOSED``)."""

    status = ECLOSED


class NotSupportedError(Error, NotImplementedError):
    """Not supported by this build or machine, e.g. no GPU (``TFS_ENOTSUP``)."""

    status = ENOTSUP


class VersionError(Error, RuntimeError):
    """A dataset format or ABI version this library does not support (``TFS_EVERSION``)."""

    status = EVERSION


class InternalError(Error, RuntimeError):
    """A bug in tierfs; the message says where (``TFS_EINTERNAL``)."""

    status = EINTERNAL


class DTypeError(Error, TypeError):
    """Node ids (or an output buffer) of the wrong dtype, e.g. floats as ids."""

    status = EINVAL


class ForkedProcessError(Error, RuntimeError):
    """A tierfs call in a process forked after the library was loaded.

    The library runs a Go runtime, whose threads do not survive ``fork()``: a forked child that
    called into it could hang. Start worker processes with the ``spawn`` method instead.
    """

    status = EINVAL


class PeerError(Error, RuntimeError):
    """A peer exchange of a distributed store (:mod:`tierfs.distributed`) failed: a rank died,
    stopped calling gather, or its own gather failed. The message names the rank (where known),
    the batch and the process group timeout. The store is unusable afterwards (the ranks'
    collectives no longer line up): close it and restart the job."""

    status = EIO


_BY_STATUS: dict[int, type[Error]] = {
    EINVAL: InvalidArgumentError,
    ENOENT: NotFoundError,
    ERANGE: OutOfRangeError,
    ECORRUPT: CorruptError,
    EIO: IOFailedError,
    ENOMEM: OutOfMemoryError,
    ECLOSED: ClosedError,
    ENOTSUP: NotSupportedError,
    EVERSION: VersionError,
    EINTERNAL: InternalError,
}


def _is_name_lookup(message: str) -> bool:
    """Whether an ENOENT message is about a named split, feature or node/edge type rather than a
    file."""
    m = message.lower()
    return ("split" in m or "feature" in m or re.search(r"\btypes?\b", m) is not None) and ("no such file" not in m)


def from_status(status: int, message: str) -> Error:
    """The exception for a failed native call's status and message."""
    if not message:
        message = f"tierfs call failed with {STATUS_NAMES.get(status, f'status {status}')}"
    if status == ENOENT and _is_name_lookup(message):
        return KeyNotFoundError(message, status)
    cls = _BY_STATUS.get(status, Error)
    return cls(message, status)
