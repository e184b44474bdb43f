"""Every argument error raises before anything is sent, naming the argument (the ranks stay
in step: each test ends with a verified operation); count mismatch and deadline as
exceptions of their own."""
import time

import numpy as np
import pytest

import a2a
from conftest import sync

torch = pytest.importorskip("torch")


def args(n):
    """A good call's arguments: one float32 to each rank."""
    return (np.arange(n, dtype=np.float32), [1] * n, list(range(n)), [1] * n, list(range(n)))


def refused(exc, match, *a, **kw):
    with pytest.raises(exc, match=match) as info:
        a2a.all_to_all_v(*a, **kw)
    return info.value


def test_lengths(size):
    s, sc, sd, rc, rd = args(size)
    for i, name in enumerate(["send_counts", "send_displacements", "recv_counts",
                              "recv_displacements"]):
        bad = list(args(size))
        bad[1 + i] = bad[1 + i][:-1]
        e = refused(a2a.InvalidArgumentError, rf"^INVALID_ARGUMENT: {name} has {size - 1} "
                    rf"elements, but group \"hccl_world_group\" has {size} ranks", *bad)
        assert e.status == a2a.Status.INVALID_ARGUMENT and isinstance(e, ValueError)
        bad[1 + i] = list(bad[1 + i]) + [0, 0]  # too long too
        refused(a2a.InvalidArgumentError, name, *bad)
    # discovery: send_displacements checked before the counts go out
    refused(a2a.InvalidArgumentError, "send_displacements has", s, sc, sd[:-1])
    sync()


def test_discover_too_small(size, rank):
    """recv_counts=a2a.DISCOVER with out one element short on the last rank: every rank gets
    RESOURCE_EXHAUSTED naming that rank, nothing is written past its out, the next call works."""
    s, sc, sd, rc, rd = args(size)
    refused(a2a.InvalidArgumentError, "needs out=", s, sc, sd, a2a.DISCOVER)
    refused(a2a.InvalidArgumentError, "needs out=", s, sc, sd, a2a.DISCOVER, rd,
            out=np.zeros(size, dtype=np.float32))
    short = rank == size - 1
    room = np.full(size + 1, -1, dtype=np.float32)  # out is room[:size - short]
    out = room[:size - 1] if short else room[:size]
    e = refused(a2a.ResourceExhaustedError,
                rf"group rank {size - 1} .* needs {size} float32 elements .* holds {size - 1}",
                s, sc, sd, a2a.DISCOVER, out=out)
    assert e.status == a2a.Status.RESOURCE_EXHAUSTED
    assert room[size - 1 if short else size] == -1  # nothing past its out
    got, counts = a2a.all_to_all_v(s, sc, sd, a2a.DISCOVER, out=np.zeros(size, np.float32))
    assert counts.tolist() == [1] * size and got.tolist() == [float(rank)] * size
    sync()


def test_negative_and_types(size):
    for i, name in enumerate(["send_counts", "send_displacements", "recv_counts",
                              "recv_displacements"]):
        bad = list(args(size))
        bad[1 + i] = list(bad[1 + i])
        bad[1 + i][size - 1] = -1
        refused(a2a.InvalidArgumentError, rf"{name}\[{size - 1}\] is negative \(-1\)", *bad)
        bad[1 + i] = np.array(args(size)[1 + i], dtype=np.int64)
        bad[1 + i][0] = -5
        refused(a2a.InvalidArgumentError, rf"{name}\[0\] is negative \(-5\)", *bad)
        bad[1 + i] = [0.5] * size
        refused(TypeError, rf"{name}\[0\] is not an int", *bad)
        bad[1 + i] = np.zeros((size, 1), dtype=np.int64)
        refused(a2a.InvalidArgumentError, rf"{name} must be 1-D", *bad)
        bad[1 + i] = 7
        refused(TypeError, name, *bad)
    s, sc, sd, rc, rd = args(size)
    refused(a2a.InvalidArgumentError, r"send_counts\[0\] is negative", s, [-1] + sc[1:], sd)
    sync()


def test_buffers(size):
    s, sc, sd, rc, rd = args(size)
    wide = np.zeros((size, 2), dtype=np.float32)
    refused(a2a.InvalidArgumentError, "send_data is not C-contiguous", wide[:, 0], sc, sd, rc,
            rd)
    refused(a2a.InvalidArgumentError, "send_data is not contiguous",
            torch.zeros(size, 2)[:, 0], sc, sd, rc, rd)
    refused(a2a.InvalidArgumentError, "send_data is on meta", torch.zeros(size, device="meta"),
            sc, sd, rc, rd)
    ro = np.zeros(size, dtype=np.float32)
    ro.flags.writeable = False
    refused(a2a.InvalidArgumentError, "out is read-only", s, sc, sd, rc, rd, out=ro)
    refused(a2a.InvalidArgumentError, "out is not C-contiguous", s, sc, sd, rc, rd,
            out=np.zeros((size, 2), dtype=np.float32)[:, 0])
    refused(a2a.InvalidArgumentError, "dtype float32 does not match out's element type float64",
            s, sc, sd, rc, rd, out=np.zeros(size))
    refused(TypeError, "send_data must be a numpy array, a torch tensor or an object with the "
            "buffer protocol, not dict", {}, sc, sd, rc, rd)
    refused(a2a.InvalidArgumentError, "send_data's element type bool is not one of the 12",
            np.zeros(size, dtype=bool), sc, sd, rc, rd)
    refused(a2a.InvalidArgumentError, "send_data's element type complex64",
            np.zeros(size, dtype=np.complex64), sc, sd, rc, rd)
    refused(a2a.InvalidArgumentError, "dtype 'float8' is not one of the 12 data types", s, sc,
            sd, rc, rd, dtype="float8")
    refused(a2a.InvalidArgumentError, "dtype int64 does not match send_data's element type "
            "float32", s, sc, sd, rc, rd, dtype="int64")
    refused(a2a.InvalidArgumentError, "dtype bfloat16 does not match send_data's element type "
            "float32", s, sc, sd, rc, rd, dtype="bfloat16")
    # slices past the buffers, overlapping receive slices (liba2a's own checks, still local)
    refused(a2a.InvalidArgumentError, r"send slice \d+ .* ends past the buffer", s,
            [2] * size, sd, rc, rd)
    refused(a2a.InvalidArgumentError, "send slice 0 .* ends past send_data", s, [size + 1] +
            [0] * (size - 1), sd)  # discovery: refused before the counts go out
    refused(a2a.InvalidArgumentError, "overlap", s, sc, sd, rc, [0] * size)
    refused(a2a.InvalidArgumentError, r"recv slice \d+ .* ends past the buffer", s, sc, sd, rc,
            rd, out=np.zeros(size - 1, dtype=np.float32))
    sync()


def test_group_and_timeout(size):
    s, sc, sd, rc, rd = args(size)
    refused(a2a.InvalidArgumentError, "group name", s, sc, sd, rc, rd, group="g" * 128)
    refused(a2a.InvalidArgumentError, "", s, sc, sd, rc, rd, group="")
    refused(a2a.NotFoundError, "no_such_group", s, sc, sd, rc, rd, group="no_such_group")
    refused(TypeError, "group must be a str", s, sc, sd, rc, rd, group=3)
    refused(a2a.InvalidArgumentError, "timeout_ms", s, sc, sd, rc, rd, timeout_ms=-1)
    refused(a2a.InvalidArgumentError, "timeout_ms", s, sc, sd, timeout_ms=-1)
    sync()


def test_all_to_all_single_errors(size):
    x, y = torch.zeros(size * 2, 3), torch.zeros(size * 2, 3)
    with pytest.raises(a2a.InvalidArgumentError, match="input_split_sizes sum to"):
        a2a.all_to_all_single(y, x, input_split_sizes=[1] * size)
    with pytest.raises(a2a.InvalidArgumentError, match="output_split_sizes has"):
        a2a.all_to_all_single(y, x, output_split_sizes=[2] * (size + 1))
    with pytest.raises(a2a.InvalidArgumentError, match=r"output_split_sizes\[0\] is negative"):
        a2a.all_to_all_single(y, x, output_split_sizes=[-2, 4] + [2] * (size - 2))
    with pytest.raises(a2a.InvalidArgumentError, match="do not split evenly"):
        a2a.all_to_all_single(torch.zeros(size * 2 + 1), torch.zeros(size * 2 + 1))
    with pytest.raises(a2a.InvalidArgumentError, match="differ beyond dim 0"):
        a2a.all_to_all_single(torch.zeros(size * 2, 4), x)
    with pytest.raises(a2a.InvalidArgumentError, match="does not match input's"):
        a2a.all_to_all_single(torch.zeros(size * 2, 3, dtype=torch.float64), x)
    with pytest.raises(a2a.InvalidArgumentError, match="output is not contiguous"):
        a2a.all_to_all_single(torch.zeros(3, size * 2).t(), x)
    with pytest.raises(a2a.InvalidArgumentError, match="scalar"):
        a2a.all_to_all_single(torch.zeros(()), x)
    with pytest.raises(a2a.InvalidArgumentError, match="rank_num is 3 but rank_ids has 2"):
        a2a.create_group("py_bad", 3, [0, 1])
    sync()


def test_count_mismatch(size, rank):
    """Rank 0 expects one element more from rank 1 than rank 1 sends: both raise
    CountMismatchError naming the ranks and counts; the next operation works."""
    s, sc, sd, rc, rd = args(size)
    if rank == 0:
        rc = [1, 2] + [1] * (size - 2)
        rd = [0, 1] + [i + 1 for i in range(2, size)]
    try:
        a2a.all_to_all_v(s, sc, sd, rc, rd, timeout_ms=10000)
    except a2a.CountMismatchError as e:
        assert e.status == a2a.Status.COUNT_MISMATCH
        assert "COUNT_MISMATCH" in str(e) and "1" in e.message and "2" in e.message, e.message
    else:
        # a third rank whose own slices had all arrived may return OK (the contract)
        assert rank not in (0, 1), f"rank {rank}: no CountMismatchError"
    sync()


def test_deadline(size, rank):
    """Rank 0 alone calls on a group of everyone: DeadlineExceededError naming the missing
    ranks, within the deadline and 0.5 s (plus the load of a shared machine)."""
    name = f"py_deadline_{size}"
    a2a.create_group(name, size, list(range(size)))
    sync()
    if rank == 0:
        t0 = time.monotonic()
        with pytest.raises(a2a.DeadlineExceededError) as info:
            a2a.all_to_all_v(np.zeros(size, dtype=np.float32), [1] * size, list(range(size)),
                             [1] * size, list(range(size)), group=name, timeout_ms=500)
        took = time.monotonic() - t0
        assert info.value.status == a2a.Status.DEADLINE_EXCEEDED
        assert "1" in info.value.message, info.value.message  # names a missing rank
        assert took < 3.0, f"DEADLINE_EXCEEDED after {took:.2f} s for a 0.5 s deadline"
    sync()
    if rank == 0:
        a2a.destroy_group(name)
    sync()
