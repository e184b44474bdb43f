"""a2a: alltoallv as a networked service, from Python.

The calls of HCCL's ``hccl_ops.all_to_all_v`` and ``hccl.manage.api`` over liba2a, on numpy
arrays, torch CPU tensors and anything with the buffer protocol::

    import a2a, numpy as np
    rank, size = a2a.get_rank_id(), a2a.get_rank_size()
    send = np.arange(size, dtype=np.float32) + 10 * rank
    recv = a2a.all_to_all_v(send, [1] * size, list(range(size)), [1] * size, list(range(size)))

Run under ``a2a-launch -n 4 -- python3 job.py``: the job is opened from ``A2A_WORKER_URL`` and
``A2A_RANK`` on first use (or explicitly: ``with a2a.Job(url, rank) as job:``). Failures raise
:class:`a2a.Error` subclasses, one per liba2a status, with ``.status`` and liba2a's message.
"""

from __future__ import annotations

import atexit
from typing import Any, Optional, Sequence, Union

import numpy as np

from ._errors import (AlreadyExistsError, CountMismatchError, DeadlineExceededError, Error,
                      InternalError, InvalidArgumentError, NotFoundError, PermissionDeniedError,
                      ResourceExhaustedError, Status, UnavailableError)
from ._job import (DISCOVER, GROUP_NAME_MAX, WORLD_GROUP, Counts, DType, Job, Work, close_default,
                   current)
from ._dtypes import NAMES as DTYPES

__version__ = "0.1.0"

__all__ = [
    "all_to_all_v", "all_to_all_v_async", "all_to_all_single", "create_group", "destroy_group",
    "get_rank_size", "get_rank_id", "get_world_rank_from_group_rank",
    "get_group_rank_from_world_rank", "empty", "zeros", "Job", "Work", "current", "close",
    "Error", "Status", "InvalidArgumentError", "NotFoundError", "AlreadyExistsError",
    "PermissionDeniedError", "CountMismatchError", "DeadlineExceededError", "UnavailableError",
    "ResourceExhaustedError", "InternalError", "WORLD_GROUP", "GROUP_NAME_MAX", "DTYPES",
    "DISCOVER",
]

atexit.register(close_default)


def close() -> None:
    """Closes the job opened from the environment (a later call opens a new one)."""
    close_default()


def all_to_all_v(send_data: Any, send_counts: Counts, send_displacements: Counts,
                 recv_counts: Optional[Counts] = None, recv_displacements: Optional[Counts] = None,
                 group: str = "hccl_world_group", *, dtype: Optional[DType] = None,
                 out: Any = None, timeout_ms: int = 0) -> Any:
    """all_to_all_v(send_data, send_counts, send_displacements, recv_counts, recv_displacements, group="hccl_world_group")

    HCCL's ``hccl_ops.all_to_all_v``: this rank sends ``send_counts[j]`` elements of
    ``send_data``, from element ``send_displacements[j]``, to rank ``j`` of ``group``, and
    receives ``recv_counts[i]`` elements from rank ``i`` at element ``recv_displacements[i]``
    of the result. Counts and displacements are in elements (never bytes), one per group rank,
    as sequences of ints or int64 arrays (numpy arrays or torch tensors).

    Returns the received data: a 1-D array of ``send_data``'s kind (numpy array, torch tensor,
    or a memoryview for other buffers) and dtype, of ``max(recv_displacements[i] +
    recv_counts[i])`` elements (elements no slice covers are left uninitialised).

    Beyond the seed's call:

    - ``recv_counts=a2a.DISCOVER`` with ``out=`` (on every rank of the call): liba2a
      discovers the receive counts in the data's own operation, the slices packed in rank
      order in ``out`` (its length is the capacity: too small on any rank fails the call on
      every rank with ``ResourceExhaustedError``); returns ``(out, recv_counts)``.
    - ``recv_counts=None`` discovers the receive counts with an exchange of the counts first
      (every rank of the group must then omit them in the same call) and returns
      ``(data, recv_counts)``; without ``recv_displacements`` the slices are packed in rank
      order.
    - ``recv_displacements=None`` with ``recv_counts`` given: packed in rank order.
    - ``dtype``: one of ``a2a.DTYPES`` (a name, numpy or torch dtype) when it is not
      ``send_data``'s own, e.g. ``dtype="bfloat16"`` over uint16 numpy data; another type of
      the same size is read as ``dtype``.
    - ``out``: the receive buffer to fill (e.g. from :func:`a2a.empty`) instead of a new one.
    - ``timeout_ms``: the operation's deadline (0: ``$A2A_OP_TIMEOUT_MS``, default 60 s).

    Data must be C-contiguous (``numpy.ascontiguousarray``, ``tensor.contiguous()``):
    a non-contiguous one raises :class:`InvalidArgumentError`, it is never copied silently.
    Bad arguments raise :class:`InvalidArgumentError` (a ``ValueError``) or ``TypeError``,
    naming the argument, before anything is sent; a failed operation raises the
    :class:`Error` subclass of its status (:class:`CountMismatchError`,
    :class:`DeadlineExceededError` ...). The GIL is released while the operation runs.
    """
    return current().all_to_all_v(send_data, send_counts, send_displacements, recv_counts,
                                  recv_displacements, group, dtype=dtype, out=out,
                                  timeout_ms=timeout_ms)


def all_to_all_v_async(send_data: Any, send_counts: Counts, send_displacements: Counts,
                       recv_counts: Optional[Counts] = None,
                       recv_displacements: Optional[Counts] = None,
                       group: str = "hccl_world_group", *, dtype: Optional[DType] = None,
                       out: Any = None, timeout_ms: int = 0) -> Work:
    """all_to_all_v_async(send_data, send_counts, send_displacements, recv_counts, recv_displacements, group="hccl_world_group") -> Work

    :func:`all_to_all_v` that returns at once: ``work.wait()`` returns what
    ``all_to_all_v`` would (or raises its exception), ``work.is_completed()`` polls. The
    arguments are checked (and bad ones raised) before it returns. Operations on one group
    run in the order they were issued; the buffers must not be touched until ``wait()``.

    liba2a has no non-blocking call yet (issue 12): the operation runs as a blocking call on
    a thread of the group's own, with the GIL released.
    """
    return current().all_to_all_v_async(send_data, send_counts, send_displacements, recv_counts,
                                        recv_displacements, group, dtype=dtype, out=out,
                                        timeout_ms=timeout_ms)


def all_to_all_single(output: Any, input: Any, output_split_sizes: Optional[Sequence[int]] = None,
                      input_split_sizes: Optional[Sequence[int]] = None,
                      group: Optional[str] = None, async_op: bool = False, *,
                      timeout_ms: int = 0) -> Optional[Work]:
    """all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False)

    torch.distributed's ``all_to_all_single`` on torch tensors or numpy arrays of any number of
    dimensions, split along dim 0: rank ``j`` gets ``input_split_sizes[j]`` rows of ``input``
    and this rank's ``output`` gets ``output_split_sizes[i]`` rows from rank ``i``, packed in
    rank order. ``None`` splits evenly. ``output`` and ``input`` must be contiguous, of the
    same dtype and of the same shape beyond dim 0; ``group`` is a group name (``None``: the
    world group). Returns ``None``, or with ``async_op=True`` a :class:`Work` whose
    ``wait()`` returns ``output``.
    """
    return current().all_to_all_single(output, input, output_split_sizes, input_split_sizes,
                                       group, async_op, timeout_ms=timeout_ms)


def create_group(group: str, rank_num: int, rank_ids: Sequence[int]) -> None:
    """create_group(group, rank_num, rank_ids)

    HCCL's ``create_group``: creates ``group`` (1 to 127 bytes) of ``rank_num`` ranks, world
    ranks ``rank_ids`` in group-rank order. Creating it again with the same members is a no-op;
    with others, :class:`AlreadyExistsError`.
    """
    current().create_group(group, rank_num, rank_ids)


def destroy_group(group: str) -> None:
    """destroy_group(group): HCCL's ``destroy_group`` (:class:`NotFoundError` if unknown)."""
    current().destroy_group(group)


def get_rank_size(group: str = "hccl_world_group") -> int:
    """get_rank_size(group="hccl_world_group"): the number of ranks in ``group``."""
    return current().get_rank_size(group)


def get_rank_id(group: str = "hccl_world_group") -> int:
    """get_rank_id(group="hccl_world_group"): this rank's rank in ``group``."""
    return current().get_rank_id(group)


def get_world_rank_from_group_rank(group: str, group_rank_id: int) -> int:
    """get_world_rank_from_group_rank(group, group_rank_id): the world rank of a group rank."""
    return current().get_world_rank_from_group_rank(group, group_rank_id)


def get_group_rank_from_world_rank(world_rank_id: int, group: str) -> int:
    """get_group_rank_from_world_rank(world_rank_id, group): the group rank of a world rank."""
    return current().get_group_rank_from_world_rank(world_rank_id, group)


def empty(shape: Union[int, Sequence[int]], dtype: DType = "float32") -> np.ndarray:
    """empty(shape, dtype="float32"): a numpy array in memory shared with the worker.

    Slices in such arrays move between the job and the sockets with no copy on either side
    (``a2a_buffer_alloc``); any array works, these are faster for large ones. The memory is
    zeroed. ``dtype="bfloat16"`` gives a uint16 array (numpy has no bfloat16). For torch
    tensors, ``a2a.torch.empty``.
    """
    return current().empty(shape, dtype)


def zeros(shape: Union[int, Sequence[int]], dtype: DType = "float32") -> np.ndarray:
    """zeros(shape, dtype="float32"): :func:`empty` (its memory is zeroed)."""
    return current().zeros(shape, dtype)
