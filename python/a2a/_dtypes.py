"""The 12 data types of liba2a (a2a_dtype in a2a.h) and how numpy, torch and buffers map to them."""

from __future__ import annotations

import sys
from typing import Any, Dict, Optional, Tuple

import numpy as np

# a2a_dtype's values, in a2a.h's order
NAMES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
         "float16", "float32", "float64", "bfloat16")
CODE: Dict[str, int] = {n: i for i, n in enumerate(NAMES)}
SIZE = (1, 1, 2, 2, 4, 4, 8, 8, 2, 4, 8, 2)
INT64 = CODE["int64"]
BFLOAT16 = CODE["bfloat16"]

# numpy's dtype for each code (bfloat16: numpy has none; its data lives in uint16 arrays)
NUMPY = tuple(np.dtype(n if n != "bfloat16" else "uint16") for n in NAMES)
_FROM_NUMPY: Dict[np.dtype, int] = {np.dtype(n): CODE[n] for n in NAMES[:-1]}
# struct format characters of the buffer protocol (memoryview.format)
_FROM_FORMAT = {"b": 0, "B": 1, "h": 2, "H": 3, "i": 4, "I": 5, "q": 6, "Q": 7, "e": 8,
                "f": 9, "d": 10}
_FROM_FORMAT.update({"l": 6, "L": 7} if np.dtype("long").itemsize == 8 else {"l": 4, "L": 5})
FORMAT = ("b", "B", "h", "H", "i", "I", "q", "Q", "e", "f", "d", "H")

_torch_map: Optional[Dict[Any, int]] = None


def torch_map() -> Dict[Any, int]:
    """torch dtype -> code, for the dtypes this torch has (uint16/32/64 only from torch 2.3)."""
    global _torch_map
    if _torch_map is None:
        import torch
        m = {}
        for name in NAMES:
            t = getattr(torch, name, None)
            if isinstance(t, torch.dtype):
                m[t] = CODE[name]
        _torch_map = m
    return _torch_map


def torch_dtype(code: int) -> Any:
    """The torch dtype that holds code's elements: its own, else the signed type of its size."""
    import torch
    t = getattr(torch, NAMES[code], None)
    if isinstance(t, torch.dtype):
        return t
    return {2: torch.int16, 4: torch.int32, 8: torch.int64}[SIZE[code]]


def is_torch(x: Any) -> bool:
    """Whether x is a torch.Tensor (without importing torch when it is not loaded)."""
    t = sys.modules.get("torch")
    return t is not None and isinstance(x, t.Tensor)


def parse(dtype: Any, name: str = "dtype") -> int:
    """The code of dtype: a name ("bfloat16"), a numpy dtype or a torch dtype."""
    if isinstance(dtype, str):
        if dtype in CODE:
            return CODE[dtype]
        raise _invalid(f"{name} {dtype!r} is not one of the 12 data types ({', '.join(NAMES)})")
    if "torch" in sys.modules and isinstance(dtype, sys.modules["torch"].dtype):
        code = torch_map().get(dtype)
        if code is None:
            raise _invalid(f"{name} {dtype} is not one of the 12 data types")
        return code
    try:
        nd = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{name} must be a dtype name, a numpy dtype or a torch dtype, "
                        f"not {type(dtype).__name__}") from None
    if nd.newbyteorder("=") in _FROM_NUMPY and nd.isnative:
        return _FROM_NUMPY[nd]
    raise _invalid(f"{name} {nd} is not one of the 12 data types ({', '.join(NAMES)})")


def _invalid(msg: str) -> Exception:
    from ._errors import InvalidArgumentError
    return InvalidArgumentError(msg)


def _reconcile(own: Optional[int], size: int, dtype: Optional[int], what: str, name: str,
               raw: bool = False) -> int:
    """The code for data whose own type is own (None: unknown) and element size size, given
    dtype; raw: plain bytes (a buffer of format B, b or c), which dtype may read as it says."""
    if dtype is None:
        if own is None:
            raise _invalid(f"{name}'s element type {what} is not one of the 12 data types "
                           f"(give dtype= to say how to read it)")
        return own
    if own == dtype:
        return dtype
    # another type of the same size is read as dtype (bfloat16 over uint16, uint32 over int32 ...)
    if SIZE[dtype] == size and (own is None or NAMES[own].startswith(("int", "uint"))
                                or dtype == BFLOAT16 and NAMES[own] == "float16"):
        return dtype
    if raw:
        return dtype
    raise _invalid(f"dtype {NAMES[dtype]} does not match {name}'s element type {what}")


def of(x: Any, dtype: Optional[int], name: str) -> Tuple[int, str]:
    """(code, kind) of data x, kind "numpy", "torch" or "buffer"; dtype None: x's own type."""
    if isinstance(x, np.ndarray):
        return _reconcile(_FROM_NUMPY.get(x.dtype) if x.dtype.isnative else None,
                          x.dtype.itemsize, dtype, str(x.dtype), name), "numpy"
    if is_torch(x):
        return _reconcile(torch_map().get(x.dtype), x.element_size(), dtype, str(x.dtype),
                          name), "torch"
    try:
        m = memoryview(x)
    except TypeError:
        raise TypeError(f"{name} must be a numpy array, a torch tensor or an object with the "
                        f"buffer protocol, not {type(x).__name__}") from None
    with m:
        fmt = m.format.lstrip("@=<")
        return _reconcile(_FROM_FORMAT.get(fmt), m.itemsize, dtype, repr(m.format), name,
                          raw=fmt in ("B", "b", "c")), "buffer"
