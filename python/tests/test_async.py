"""Asynchronous operations: all_to_all_v_async and all_to_all_single(async_op=True)."""
import time

import numpy as np
import pytest

import a2a
from conftest import sync

torch = pytest.importorskip("torch")


def test_async_basic(size, rank):
    send = np.arange(size, dtype=np.float32) + 10 * rank
    w = a2a.all_to_all_v_async(send, [1] * size, list(range(size)), [1] * size,
                               list(range(size)))
    assert isinstance(w, a2a.Work)
    got = w.wait(timeout=30)
    assert w.is_completed()
    assert got.tolist() == [10.0 * i + rank for i in range(size)]
    assert w.wait() is got  # again: the same result


def test_async_is_not_blocking(size, rank):
    """Rank 0 comes 1 s late: the others' calls return at once and poll as not completed."""
    send = np.full(size, rank, dtype=np.int64)
    sync()  # together here, so that rank 0 is the late one by its 1 s
    if rank == 0:
        time.sleep(1.0)
    t0 = time.monotonic()
    w = a2a.all_to_all_v_async(send, [1] * size, list(range(size)), [1] * size,
                               list(range(size)))
    issued = time.monotonic() - t0
    if rank != 0 and size > 1:
        assert issued < 0.5, f"the call took {issued:.2f} s to return"
        assert not w.is_completed()
        with pytest.raises(TimeoutError):
            w.wait(timeout=0.05)
    assert w.wait(timeout=30).tolist() == list(range(size))


def test_async_order_and_discovery(size, rank):
    """Several operations in flight on one group complete in issue order; a blocking call
    after them waits its turn; count discovery returns (data, counts)."""
    works = []
    for k in range(5):
        send = np.full(size * (k + 1), k * 100 + rank, dtype=np.int32)
        c = [k + 1] * size
        d = [(k + 1) * j for j in range(size)]
        works.append(a2a.all_to_all_v_async(send, c, d, c, d))
    disc = a2a.all_to_all_v_async(np.full(size, rank, dtype=np.int16), [1] * size,
                                  list(range(size)))
    blocking = a2a.all_to_all_v(np.full(size, 7, dtype=np.int8), [1] * size,
                                list(range(size)), [1] * size, list(range(size)))
    assert blocking.tolist() == [7] * size
    assert all(w.is_completed() for w in works) and disc.is_completed()
    for k, w in enumerate(works):
        assert w.wait().tolist() == [k * 100 + i for i in range(size) for _ in range(k + 1)]
    data, counts = disc.wait()
    assert data.tolist() == list(range(size)) and counts.tolist() == [1] * size


def test_async_errors(size, rank):
    """Argument errors raise at the call; an operation's failure at wait()."""
    with pytest.raises(a2a.InvalidArgumentError, match="send_counts"):
        a2a.all_to_all_v_async(np.zeros(size, np.float32), [1] * (size + 1), [0] * size,
                               [1] * size, list(range(size)))
    name = f"py_async_{size}"
    a2a.create_group(name, size, list(range(size)))
    sync()
    if rank == 0:
        w = a2a.all_to_all_v_async(np.zeros(size, np.float32), [1] * size, list(range(size)),
                                   [1] * size, list(range(size)), group=name, timeout_ms=300)
        with pytest.raises(a2a.DeadlineExceededError):
            w.wait(timeout=30)
        assert w.is_completed()
    sync()
    if rank == 0:
        a2a.destroy_group(name)
    sync()


def test_all_to_all_single_async(size, rank):
    x = torch.arange(size * 2, dtype=torch.float64).view(size, 2) + 100 * rank
    y = torch.empty(size, 2, dtype=torch.float64)
    w = a2a.all_to_all_single(y, x, async_op=True)
    assert w.wait(timeout=30) is y
    assert y[:, 0].tolist() == [100.0 * i + 2 * rank for i in range(size)]
