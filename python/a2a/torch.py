"""a2a.torch: torch CPU tensors in memory shared with the worker (``a2a_buffer_alloc``)."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import torch as _torch

from . import _dtypes
from ._errors import InvalidArgumentError
from ._job import Job, current

__all__ = ["empty", "zeros"]


def _size(size: Sequence[Any]) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list, _torch.Size)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def empty(*size: Union[int, Sequence[int]], dtype: Optional[_torch.dtype] = None,
          job: Optional[Job] = None) -> _torch.Tensor:
    """empty(*size, dtype=None): like ``torch.empty``, a CPU tensor in memory shared with the
    worker (its slices move with no copy). The memory is zeroed. ``dtype`` defaults to torch's
    default dtype; ``job`` to :func:`a2a.current`."""
    dtype = _torch.get_default_dtype() if dtype is None else dtype
    if dtype not in _dtypes.torch_map():
        raise InvalidArgumentError(f"dtype {dtype} is not one of the 12 data types")
    shape = _size(size)
    if any(s < 0 for s in shape):
        raise InvalidArgumentError(f"size {shape} has a negative dimension")
    n = math.prod(shape)
    if n == 0:
        return _torch.empty(shape, dtype=dtype)
    esize = _torch.tensor([], dtype=dtype).element_size()
    buf = (job or current()).shared_buffer(n * esize)
    # the tensor keeps buf (and so the job's mapping) alive
    return _torch.frombuffer(buf, dtype=dtype, count=n).view(shape)


def zeros(*size: Union[int, Sequence[int]], dtype: Optional[_torch.dtype] = None,
          job: Optional[Job] = None) -> _torch.Tensor:
    """zeros(*size, dtype=None): :func:`empty` (its memory is zeroed)."""
    return empty(*size, dtype=dtype, job=job)
