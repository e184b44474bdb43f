"""a2a.Job: one rank's handle on its worker, and everything the package does through it."""

from __future__ import annotations

import collections
import itertools
import math
import operator
import threading
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core, _dtypes
from ._errors import Error, InvalidArgumentError, UnavailableError

WORLD_GROUP = "hccl_world_group"


class _Discover:
    """The type of a2a.DISCOVER (one instance)."""
    __slots__ = ()

    def __repr__(self) -> str:
        return "a2a.DISCOVER"


DISCOVER = _Discover()
"""recv_counts=a2a.DISCOVER (with out=, on every rank of the call): liba2a discovers the receive
counts in the data's own operation, the slices packed in rank order in out; returns
(out, recv_counts). recv_counts=None also discovers, with an exchange of the counts first,
and sizes the result itself."""
GROUP_NAME_MAX = _core.GROUP_NAME_MAX

Counts = Union[Sequence[int], np.ndarray, Any]  # sequences of ints, int64 arrays, torch tensors
DType = Union[str, np.dtype, type, Any]  # "bfloat16", numpy dtypes, torch dtypes


def _group_name(group: Optional[str]) -> str:
    if group is None:
        return WORLD_GROUP
    if not isinstance(group, str):
        raise TypeError(f"group must be a str (a group name) or None, not {type(group).__name__}")
    return group


def _counts(x: Counts, name: str) -> Any:
    """x as _core takes it: int64 numpy arrays as they are, everything else converted or as is."""
    if isinstance(x, np.ndarray):
        if x.ndim != 1:
            raise InvalidArgumentError(f"{name} must be 1-D (its shape is {x.shape})")
        if x.dtype.kind not in "iu":
            raise InvalidArgumentError(f"{name} must hold integers, not {x.dtype}")
        if x.dtype != np.int64 or not x.flags.c_contiguous:
            if x.dtype == np.uint64 and x.size and int(x.max()) > np.iinfo(np.int64).max:
                raise InvalidArgumentError(f"{name}[{int(x.argmax())}] does not fit in int64")
            return x.astype(np.int64)
        return x
    if _dtypes.is_torch(x):
        if x.dim() != 1 or x.is_floating_point() or x.is_complex():
            raise InvalidArgumentError(f"{name} must be a 1-D integer tensor "
                                       f"(got {x.dtype} of shape {tuple(x.shape)})")
        return x.tolist()
    return x


def _as_i64(x: Any, name: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"{name} must be a sequence of ints or an int64 array") from None
    if a.ndim != 1:
        raise InvalidArgumentError(f"{name} must be 1-D (its shape is {a.shape})")
    return a


def _packed(counts: Any) -> np.ndarray:
    """Displacements that pack the slices one after the other, in order."""
    c = np.asarray(counts, dtype=np.int64)
    d = np.zeros(len(c), dtype=np.int64)
    if len(c) > 1:
        np.cumsum(c[:-1], out=d[1:])
    return d


def _check_len(a: Any, n: int, name: str, group: str) -> None:
    if len(a) != n:
        raise InvalidArgumentError(f"{name} has {len(a)} elements, but group \"{group}\" has "
                                   f"{n} ranks (one element per group rank)")


def _data(x: Any, kind: str, write: bool, name: str) -> Tuple[Any, int]:
    """(object, byte length) of data x as _core takes it; checks what would make it fail."""
    if kind == "numpy":
        if not x.flags.c_contiguous:
            raise InvalidArgumentError(f"{name} is not C-contiguous (pass "
                                       f"numpy.ascontiguousarray({name}))")
        if write and not x.flags.writeable:
            raise InvalidArgumentError(f"{name} is read-only")
        return x, -1
    if kind == "torch":
        return _torch_data(x, x.element_size(), name)
    return x, -1


def _torch_data(x: Any, esize: int, name: str) -> Tuple[int, int]:
    """(address, byte length) of tensor x of esize-byte elements (is_cpu, not device.type:
    a tenth of the cost)."""
    if not x.is_cpu:
        raise InvalidArgumentError(f"{name} is on {x.device}; a2a takes CPU tensors only")
    if not x.is_contiguous():
        raise InvalidArgumentError(f"{name} is not contiguous (pass {name}.contiguous())")
    return x.data_ptr(), x.numel() * esize


def _alloc(kind: str, code: int, n: int, like: Any) -> Any:
    """A receive buffer of n elements of code, of like's kind and dtype."""
    if kind == "numpy":
        return np.empty(n, dtype=like.dtype)
    if kind == "torch":
        import torch
        return torch.empty(n, dtype=like.dtype)
    return memoryview(bytearray(n * _dtypes.SIZE[code])).cast(_dtypes.FORMAT[code])


class Work:
    """The handle of an asynchronous operation (``async_op=True``, ``all_to_all_v_async``).

    ``wait()`` blocks until the operation ends and returns its result (the received data, or
    ``(data, recv_counts)`` when receive counts were discovered; the output of
    ``all_to_all_single``), or raises its :class:`a2a.Error`; ``is_completed()`` says whether
    it has ended, without blocking.
    """

    __slots__ = ("_fn", "_keep", "_done", "_result", "_exc")

    def __init__(self, fn: Callable[[], Any], keep: Tuple[Any, ...] = ()) -> None:
        self._fn: Optional[Callable[[], Any]] = fn
        # every object whose memory the operation reads or writes (a torch tensor goes down as
        # its address only): held until the operation ended, whatever the caller drops
        self._keep: Tuple[Any, ...] = keep
        self._done = threading.Event()
        self._result: Any = None
        self._exc: Optional[BaseException] = None

    def _run(self) -> None:
        try:
            assert self._fn is not None
            self._result = self._fn()
        except BaseException as e:  # handed to wait()
            self._exc = e
        finally:
            self._fn = None  # lets go of the buffers: the operation has ended
            self._keep = ()
            self._done.set()

    def is_completed(self) -> bool:
        """Whether the operation has ended (successfully or not)."""
        return self._done.is_set()

    def wait(self, timeout: Optional[float] = None) -> Any:
        """Wait for the operation; its result, or its exception raised here.

        ``timeout`` (seconds) bounds only this wait: the builtin ``TimeoutError`` when the
        operation is still running then (the operation itself ends by its own deadline).
        """
        if not self._done.wait(timeout):
            raise TimeoutError(f"the operation is still running after {timeout} s")
        if self._exc is not None:
            raise self._exc
        return self._result

    def result(self) -> Any:
        """The same as ``wait()``."""
        return self.wait()


class _Lane:
    """One group's asynchronous operations, run in the order they were issued.

    liba2a has no non-blocking calls yet (issue 12): an asynchronous operation is the blocking
    call made on this lane's thread (the GIL is released meanwhile). The lane is the one place
    to switch to liba2a's non-blocking calls when they land. A blocking call on a group with
    operations pending goes through the lane too, so that every rank numbers the group's
    operations in the order its program issued them.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._q: Deque[Work] = collections.deque()
        self._cv = threading.Condition()
        self._pending = 0
        self._thread: Optional[threading.Thread] = None
        self._stop = False

    def busy(self) -> bool:
        return self._pending > 0

    def submit(self, fn: Callable[[], Any], keep: Tuple[Any, ...] = ()) -> Work:
        w = Work(fn, keep)
        with self._cv:
            if self._stop:
                raise UnavailableError("the job is closed")
            self._q.append(w)
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name=f"a2a lane {self._name[:40]}")
                self._thread.start()
            self._cv.notify_all()
        return w

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._q and not self._stop:
                    self._cv.wait()
                if not self._q:
                    return
                w = self._q.popleft()
            w._run()
            with self._cv:
                self._pending -= 1
                self._cv.notify_all()

    def close(self) -> None:
        """Runs what is queued, then ends the thread."""
        with self._cv:
            self._stop = True
            self._cv.notify_all()
            t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join()


_stack: List["Job"] = []  # the jobs of the `with a2a.Job()` blocks in progress
_default: Optional["Job"] = None
_default_lock = threading.Lock()


def current() -> "Job":
    """The job the module's functions use: the innermost ``with a2a.Job()``, else the job
    opened from the environment (``A2A_WORKER_URL``, ``A2A_RANK``) on first use."""
    global _default
    if _stack:
        return _stack[-1]
    j = _default
    if j is None or j.closed:
        with _default_lock:
            if _default is None or _default.closed:
                _default = Job()
            j = _default
    return j


def close_default() -> None:
    """Closes the job opened from the environment, if any (at exit too)."""
    global _default
    with _default_lock:
        j, _default = _default, None
    if j is not None:
        j.close()


class Job:
    """One rank's handle on its host's worker (liba2a's ``a2a_job``).

    ``Job(worker_url=None, rank=None)``: ``None`` takes ``A2A_WORKER_URL`` and ``A2A_RANK``
    from the environment, as ``a2a_job_open(&job, NULL, -1)``; ``A2A_JOB_MODE``,
    ``A2A_OP_TIMEOUT_MS``, ``A2A_TOKEN_FILE`` and the other variables of liba2a apply.
    As a context manager (``with a2a.Job() as job:``) it is also what the module's functions
    (``a2a.all_to_all_v`` ...) use inside the block, and it is closed at its end.

    Arrays from ``empty``/``zeros`` stay valid after ``close()``: the job's connection ends when
    the last of them is freed.
    """

    def __init__(self, worker_url: Optional[str] = None, rank: Optional[int] = None) -> None:
        if rank is not None and (operator.index(rank) < 0):
            raise InvalidArgumentError(f"rank must be a world rank >= 0 (got {rank})")
        self._c = _core.Job(worker_url, -1 if rank is None else operator.index(rank))
        self._sizes: Dict[str, int] = {}
        self._lanes: Dict[str, _Lane] = {}
        self._lock = threading.Lock()
        self._vecs: Dict[int, Tuple[np.ndarray, np.ndarray]] = {}

    # ---- the job -------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether close() was called."""
        return bool(self._c.closed)

    @property
    def mode(self) -> str:
        """How this job's memory reaches its worker: ``"local"`` (memfds on the worker's Unix
        socket, same kernel) or ``"remote"`` (over TCP); ``A2A_JOB_MODE`` picks one."""
        return "remote" if self._c.mode() == 1 else "local"

    @property
    def rank(self) -> int:
        """This job's world rank."""
        return self.get_rank_id(WORLD_GROUP)

    def close(self) -> None:
        """Waits for the asynchronous operations in progress, then closes the job."""
        with self._lock:
            lanes, self._lanes = list(self._lanes.values()), {}
        for lane in lanes:
            lane.close()
        self._c.close()

    def __enter__(self) -> "Job":
        _stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self in _stack:
            _stack.remove(self)
        self.close()

    def __repr__(self) -> str:
        if not hasattr(self, "_c"):
            return "<a2a.Job not open>"
        return f"<a2a.Job {'closed' if self.closed else self.mode}>"

    # ---- groups (HCCL's hccl.manage.api) -------------------------------------------------

    def create_group(self, group: str, rank_num: int, rank_ids: Sequence[int]) -> None:
        """Creates ``group`` of ``rank_num`` ranks: world ranks ``rank_ids``, in group-rank order."""
        ids = _counts(rank_ids, "rank_ids")
        if len(ids) != rank_num:
            raise InvalidArgumentError(f"rank_num is {rank_num} but rank_ids has {len(ids)} "
                                       f"ranks")
        self._sizes.pop(group, None)
        self._c.create_group(_group_name(group), ids)

    def destroy_group(self, group: str) -> None:
        """Destroys ``group`` (one created at run time)."""
        self._sizes.pop(group, None)
        self._c.destroy_group(_group_name(group))

    def get_rank_size(self, group: str = WORLD_GROUP) -> int:
        """The number of ranks in ``group``."""
        return self._c.get_rank_size(_group_name(group))

    def get_rank_id(self, group: str = WORLD_GROUP) -> int:
        """This job's rank in ``group``."""
        return self._c.get_rank_id(_group_name(group))

    def get_world_rank_from_group_rank(self, group: str, group_rank_id: int) -> int:
        """The world rank of ``group``'s rank ``group_rank_id``."""
        return self._c.get_world_rank_from_group_rank(_group_name(group), group_rank_id)

    def get_group_rank_from_world_rank(self, world_rank_id: int, group: str) -> int:
        """The rank in ``group`` of world rank ``world_rank_id``."""
        return self._c.get_group_rank_from_world_rank(_group_name(group), world_rank_id)

    def _group_size(self, group: str) -> int:
        n = self._sizes.get(group)
        if n is None:
            n = self._sizes[group] = self._c.get_rank_size(group)
        return n

    # ---- shared memory -------------------------------------------------------------------

    def empty(self, shape: Union[int, Sequence[int]], dtype: DType = "float32") -> np.ndarray:
        """A numpy array in memory shared with the worker (``a2a_buffer_alloc``): slices in it
        move with no copy. Its memory is zeroed. ``dtype="bfloat16"`` gives a uint16 array."""
        code = _dtypes.parse(dtype)
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
        n = math.prod(shape)
        if n < 0 or any(s < 0 for s in shape):
            raise InvalidArgumentError(f"shape {shape} has a negative dimension")
        npdt = _dtypes.NUMPY[code]
        if n == 0:
            return np.empty(shape, dtype=npdt)
        buf = self._c.buffer(n * npdt.itemsize)
        return np.frombuffer(buf, dtype=npdt, count=n).reshape(shape)

    zeros = empty

    def shared_buffer(self, nbytes: int) -> Any:
        """``nbytes`` of memory shared with the worker, as an object with the buffer protocol."""
        return self._c.buffer(nbytes)

    # ---- all_to_all_v --------------------------------------------------------------------

    def _vectors(self, n: int) -> Tuple[np.ndarray, np.ndarray]:
        v = self._vecs.get(n)
        if v is None:
            v = self._vecs[n] = (np.ones(n, dtype=np.int64), np.arange(n, dtype=np.int64))
        return v

    def _discover_into(self, c: Any, group: str, code: int, sobj: Any, snb: int, sc: np.ndarray,
                       sd: Any, robj: Any, rnb: int, timeout_ms: int, n: int) -> np.ndarray:
        """recv_counts=a2a.DISCOVER: liba2a's own count discovery, one operation (the counts
        travel with the data), the slices packed in rank order in out (its capacity)."""
        return np.array(c.all_to_all_v(group, code, sobj, snb, sc, sd, robj, rnb, None, None,
                                       timeout_ms, n), dtype=np.int64)

    def _exchange_counts(self, group: str, send_counts: np.ndarray, n: int,
                         timeout_ms: int) -> np.ndarray:
        """Count discovery: every rank tells rank j its send_counts[j] in an all_to_all_v of
        one int64 per pair, before the data. liba2a has no count discovery yet (issue 12);
        this is the one place to switch to it when it lands."""
        ones, idx = self._vectors(n)
        recv = np.empty(n, dtype=np.int64)
        self._c.all_to_all_v(group, _dtypes.INT64, send_counts, -1, ones, idx, recv, -1, ones, idx,
                             timeout_ms, n)
        return recv

    def _a2av(self, send_data: Any, send_counts: Counts, send_displacements: Counts,
              recv_counts: Optional[Counts], recv_displacements: Optional[Counts], group: str,
              dtype: Optional[DType], out: Any, timeout_ms: int, dry: bool = False) -> Any:
        """Checks the arguments (raising before anything is sent); returns the function that runs
        the call. dry: everything _core checks too, now (for calls that run later)."""
        group = _group_name(group)
        try:
            if operator.index(timeout_ms) < 0:
                raise TypeError
        except TypeError:
            raise InvalidArgumentError(f"timeout_ms must be an int >= 0 (got {timeout_ms!r})") \
                from None
        code, kind = _dtypes.of(send_data, None if dtype is None else _dtypes.parse(dtype),
                                "send_data")
        sobj, snb = _data(send_data, kind, False, "send_data")
        sc = _counts(send_counts, "send_counts")
        sd = _counts(send_displacements, "send_displacements")
        n = self._group_size(group)
        if out is not None:
            _, okind = _dtypes.of(out, code, "out")
            robj, rnb = _data(out, okind, True, "out")
        inline = recv_counts is DISCOVER
        discover = recv_counts is None or inline
        rc = rd = None
        if inline and (out is None or recv_displacements is not None):
            raise InvalidArgumentError(
                "recv_counts=a2a.DISCOVER needs out= (its length is the capacity) and no "
                "recv_displacements (the slices land packed in rank order)")
        if discover:
            # everything the data call would refuse, refused before the counts go out
            sc = _as_i64(sc, "send_counts")
            sda = _as_i64(sd, "send_displacements")
            _check_len(sc, n, "send_counts", group)
            _check_len(sda, n, "send_displacements", group)
            for name, a in (("send_counts", sc), ("send_displacements", sda)):
                if (a < 0).any():
                    i = int(np.argmax(a < 0))
                    raise InvalidArgumentError(f"{name}[{i}] is negative ({int(a[i])})")
            send_len = snb // _dtypes.SIZE[code] if snb >= 0 else \
                memoryview(send_data).nbytes // _dtypes.SIZE[code]
            end = np.where(sc > 0, sc + sda, 0)
            if (end > send_len).any():
                i = int(np.argmax(end > send_len))
                raise InvalidArgumentError(
                    f"send slice {i} ({int(sc[i])} elements at displacement {int(sda[i])}) ends "
                    f"past send_data's {send_len} elements")
            if recv_displacements is not None:
                rd = _counts(recv_displacements, "recv_displacements")
                _check_len(rd, n, "recv_displacements", group)
        else:
            rc = _counts(recv_counts, "recv_counts")
            rd = _packed(rc) if recv_displacements is None else \
                _counts(recv_displacements, "recv_displacements")
            if out is None:
                out = _alloc(kind, code, _core.recv_extent(rc, rd), send_data)
                robj, rnb = _data(out, kind, True, "out")
            if dry:  # what _core checks, checked now
                self._c.dry_run(group, code, sobj, snb, sc, sd, robj, rnb, rc, rd, timeout_ms, n)
        c = self._c

        def run() -> Any:
            nonlocal rc, rd, out, robj, rnb
            try:
                if inline:
                    rc = self._discover_into(c, group, code, sobj, snb, sc, sd, robj, rnb,
                                             timeout_ms, n)
                elif discover:
                    rc = self._exchange_counts(group, sc, n, timeout_ms)
                    if rd is None:
                        rd = _packed(rc)
                    if out is None:
                        out = _alloc(kind, code, _core.recv_extent(rc, rd), send_data)
                        robj, rnb = _data(out, kind, True, "out")
                if not inline:
                    c.all_to_all_v(group, code, sobj, snb, sc, sd, robj, rnb, rc, rd, timeout_ms,
                                   n)
            except Error:
                self._sizes.pop(group, None)  # the group may have changed: ask again next time
                raise
            if discover:
                if kind == "torch":
                    import torch
                    return out, torch.from_numpy(rc)
                return out, rc
            return out

        return run

    def _lane(self, group: str) -> _Lane:
        with self._lock:
            lane = self._lanes.get(group)
            if lane is None:
                if self.closed:
                    raise UnavailableError("the job is closed")
                lane = self._lanes[group] = _Lane(group)
            return lane

    def _busy(self, group: Any) -> bool:
        lane = self._lanes.get(group)
        return lane is not None and lane.busy()

    def _sync(self, group: Optional[str], run: Callable[[], Any]) -> Any:
        lane = self._lanes.get(_group_name(group))
        if lane is not None and lane.busy():
            return lane.submit(run).wait()
        return run()

    def all_to_all_v(self, send_data: Any, send_counts: Counts, send_displacements: Counts,
                     recv_counts: Optional[Counts] = None,
                     recv_displacements: Optional[Counts] = None, group: str = WORLD_GROUP, *,
                     dtype: Optional[DType] = None, out: Any = None, timeout_ms: int = 0) -> Any:
        """``all_to_all_v(send_data, send_counts, send_displacements, recv_counts,
        recv_displacements, group="hccl_world_group")``: see :func:`a2a.all_to_all_v`."""
        # the fast path: a numpy array, counts given, a known group, nothing pending. _core
        # checks the rest (contiguity, counts, lengths) before anything is sent.
        if (type(send_data) is np.ndarray and recv_displacements is not None and dtype is None
                and recv_counts is not None and recv_counts is not DISCOVER
                and (not self._lanes or not self._busy(group))):
            code = _NP_CODE.get(send_data.dtype)
            n = self._sizes.get(group)  # type: ignore[arg-type]
            if code is not None and n is not None and (
                    out is None or type(out) is np.ndarray and out.dtype == send_data.dtype):
                if out is None:
                    out = np.empty(_core.recv_extent(recv_counts, recv_displacements),
                                   dtype=send_data.dtype)
                try:
                    self._c.all_to_all_v(group, code, send_data, -1, send_counts,
                                         send_displacements, out, -1, recv_counts,
                                         recv_displacements, timeout_ms, n)
                except Error:
                    self._sizes.pop(group, None)  # type: ignore[arg-type]
                    raise
                return out
        run = self._a2av(send_data, send_counts, send_displacements, recv_counts,
                         recv_displacements, group, dtype, out, timeout_ms)
        return self._sync(group, run)

    def all_to_all_v_async(self, send_data: Any, send_counts: Counts, send_displacements: Counts,
                           recv_counts: Optional[Counts] = None,
                           recv_displacements: Optional[Counts] = None,
                           group: str = WORLD_GROUP, *, dtype: Optional[DType] = None,
                           out: Any = None, timeout_ms: int = 0) -> Work:
        """:func:`a2a.all_to_all_v` that returns at once with a :class:`Work` handle.

        The operation holds send_data and out until it ended (the handle's result is out, or
        the array it made), and takes the counts and displacements as they are now."""
        send_counts, send_displacements, recv_counts, recv_displacements = (
            _snapshot(x) for x in (send_counts, send_displacements, recv_counts,
                                   recv_displacements))
        run = self._a2av(send_data, send_counts, send_displacements, recv_counts,
                         recv_displacements, group, dtype, out, timeout_ms, dry=True)
        return self._lane(_group_name(group)).submit(run, (send_data, out))

    def all_to_all_single(self, output: Any, input: Any,
                          output_split_sizes: Optional[Sequence[int]] = None,
                          input_split_sizes: Optional[Sequence[int]] = None,
                          group: Optional[str] = None, async_op: bool = False,
                          *, timeout_ms: int = 0) -> Optional[Work]:
        """torch.distributed's ``all_to_all_single``: see :func:`a2a.all_to_all_single`."""
        g = _group_name(group)
        n = self._sizes.get(g)
        if n is None:
            n = self._group_size(g)
        ishape, oshape = input.shape, output.shape  # torch.Size and numpy shapes are tuples
        if not ishape or not oshape:
            raise InvalidArgumentError(f"{'output' if ishape else 'input'} is a scalar; "
                                       f"tensors are split along dim 0")
        if ishape[1:] != oshape[1:]:
            raise InvalidArgumentError(f"output's shape {oshape} and input's {ishape} differ "
                                       f"beyond dim 0")
        row = math.prod(ishape[1:])
        sc = _splits(input_split_sizes, ishape[0], n, row, "input_split_sizes", "input", g)
        rc = _splits(output_split_sizes, oshape[0], n, row, "output_split_sizes", "output", g)
        if _dtypes.is_torch(input) and _dtypes.is_torch(output):
            idt = input.dtype
            if output.dtype != idt:
                raise InvalidArgumentError(f"output's dtype {output.dtype} does not match "
                                           f"input's {idt}")
            code = _dtypes.torch_map().get(idt)
            if code is None:
                raise InvalidArgumentError(f"input's dtype {idt} is not one of the 12 data "
                                           f"types")
            esize = _dtypes.SIZE[code]
            sobj, snb = _torch_data(input, esize, "input")
            robj, rnb = _torch_data(output, esize, "output")
        else:
            (code, ikind), (ocode, okind) = (_dtypes.of(input, None, "input"),
                                             _dtypes.of(output, None, "output"))
            if ocode != code:
                raise InvalidArgumentError(f"output's dtype {_dtypes.NAMES[ocode]} does not "
                                           f"match input's {_dtypes.NAMES[code]}")
            sobj, snb = _data(input, ikind, False, "input")
            robj, rnb = _data(output, okind, True, "output")
        sd, rd = _offsets(sc), _offsets(rc)
        c = self._c
        if async_op:
            c.dry_run(g, code, sobj, snb, sc, sd, robj, rnb, rc, rd, timeout_ms, n)

        def run() -> Any:
            try:
                c.all_to_all_v(g, code, sobj, snb, sc, sd, robj, rnb, rc, rd, timeout_ms, n)
            except Error:
                self._sizes.pop(g, None)
                raise
            return output

        if async_op:
            return self._lane(g).submit(run, (input, output))
        self._sync(g, run)
        return None


_NP_CODE = {d: i for i, d in enumerate(_dtypes.NUMPY[:-1])}


def _snapshot(x: Any) -> Any:
    """Counts as they are now, for an operation that runs later: a copy of an array or tensor
    the caller may change meanwhile (sequences are converted when the call is checked)."""
    if isinstance(x, np.ndarray):
        return x.copy()
    if _dtypes.is_torch(x):
        return x.clone()
    if isinstance(x, list):
        return list(x)
    return x


def _offsets(counts: List[int]) -> List[int]:
    """Displacements that pack counts one after the other."""
    return [0, *itertools.accumulate(counts[:-1])] if counts else []


def _splits(sizes: Any, rows: int, n: int, row: int, name: str, tname: str,
            group: str) -> List[int]:
    """The element counts of all_to_all_single's split sizes (None: even)."""
    if sizes is None or (hasattr(sizes, "__len__") and len(sizes) == 0):
        if rows % n:
            raise InvalidArgumentError(
                f"{tname} has {rows} rows along dim 0, which do not split evenly into the {n} "
                f"ranks of group \"{group}\" (give {name})")
        return [rows // n * row] * n
    if _dtypes.is_torch(sizes) or isinstance(sizes, np.ndarray):
        sizes = sizes.tolist()
    try:
        s = [operator.index(x) for x in sizes]
    except TypeError:
        raise TypeError(f"{name} must be a sequence of ints") from None
    _check_len(s, n, name, group)
    for i, x in enumerate(s):
        if x < 0:
            raise InvalidArgumentError(f"{name}[{i}] is negative ({x})")
    if sum(s) != rows:
        raise InvalidArgumentError(f"{name} sum to {sum(s)} but {tname} has {rows} rows along "
                                   f"dim 0")
    return [x * row for x in s] if row != 1 else s
