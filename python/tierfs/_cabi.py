"""What the generated declarations of the C ABI (_abi.py) are made of.

* :func:`check_value`: whether a Python value crosses the ABI as its C type unchanged (ctypes would
  wrap 2**32 + 4 into an int32 as 4, and C would cut a string at a NUL);
* :class:`Checked`: the base of every generated struct; an assignment to a field is checked first;
* :func:`ptr`: the argtype of a pointer parameter ``T *``: what ``POINTER(T)`` takes (a ``byref``
  of a T or of an array of T, an array of T, a pointer to T), plus an address as an int (``addr()``
  of a numpy array or torch tensor) and None for NULL. A ctypes object of another type is refused.

No library is loaded here: _abi.py and this module import without libtierfs.so.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, Structure, c_char_p, c_int, c_int32, c_int64, c_size_t, c_uint64, c_void_p
from typing import Any

# Range of each C integer type that crosses the ABI as a value.
INT_RANGES = {
    c_int32: (-(1 << 31), (1 << 31) - 1, "a 32-bit signed integer"),
    c_int: (-(1 << 31), (1 << 31) - 1, "a 32-bit signed integer"),
    c_int64: (-(1 << 63), (1 << 63) - 1, "a 64-bit signed integer"),
    c_uint64: (0, (1 << 64) - 1, "a 64-bit unsigned integer"),
    c_size_t: (0, (1 << 64) - 1, "a 64-bit unsigned integer"),
}


def check_value(ctype: Any, value: Any, what: str) -> None:
    """Raises InvalidArgumentError when value would not cross the C ABI as ctype unchanged: an
    integer outside the type's range, or a string with a NUL character (C would cut it there)."""
    if ctype is c_char_p:
        if isinstance(value, (bytes, bytearray)) and b"\0" in value:
            raise _invalid(f"tierfs: {what} contains a NUL character: {bytes(value)!r}")
        return
    rng = INT_RANGES.get(ctype)
    if rng is not None and isinstance(value, int) and not rng[0] <= value <= rng[1]:
        raise _invalid(f"tierfs: {what} = {value} does not fit {rng[2]}")


#: The exception check_value raises: tierfs.errors sets it to its InvalidArgumentError when it
#: loads (errors takes its status codes from _abi, which imports this module, so this module
#: cannot import errors).
invalid_argument: type = ValueError


def _invalid(message: str) -> Exception:
    return invalid_argument(message)


class Checked(Structure):
    """A C struct whose fields check what is assigned (check_value), naming the field."""

    def __setattr__(self, name: str, value: Any) -> None:
        for fname, ctype in type(self)._fields_:
            if fname == name:
                check_value(ctype, value, name)
                break
        super().__setattr__(name, value)


_PTRS: dict[Any, type] = {}


def ptr(target: Any) -> type:
    """The argtype of a ``target *`` parameter (see the module doc); one class per target."""
    got = _PTRS.get(target)
    if got is not None:
        return got
    pointer = POINTER(target)
    # Any pointer converts to void *: an array of c_void_p may stand for an array of pointers.
    of_pointers = target in (c_void_p, c_char_p) or issubclass(target, ctypes._Pointer)

    class Ptr:
        _type_ = target

        @classmethod
        def from_param(cls, value: Any) -> Any:
            if value is None:
                return None
            if isinstance(value, int):
                return c_void_p(value)
            obj = getattr(value, "_obj", None) if type(value).__name__ == "CArgObject" else None
            if obj is not None:  # byref(x[, offset])
                if isinstance(obj, target) or (isinstance(obj, ctypes.Array) and obj._type_ is target):
                    return value
                raise TypeError(f"byref of {type(obj).__name__} where {target.__name__} * is expected")
            if of_pointers and isinstance(value, ctypes.Array) and value._type_ is c_void_p:
                return value
            return pointer.from_param(value)

    Ptr.__name__ = Ptr.__qualname__ = f"ptr({target.__name__})"
    _PTRS[target] = Ptr
    return Ptr
