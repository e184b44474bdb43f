"""An asynchronous operation owns its buffers until it ends: inputs that are temporaries or
that the caller deleted are still sent whole, and outputs the caller let go of are still
there to receive. Freed memory is overwritten on purpose after each drop, so that a handle
reading a buffer it did not hold would return wrong data (and fail these checks). Reference
counting frees a dropped object at once; no gc.collect() is needed for that (and it costs
~0.1 s a call with torch loaded)."""
import gc

import numpy as np
import pytest

import a2a

torch = pytest.importorskip("torch")

ROUNDS = 80  # of 5 operations in flight: with the rest, over 1,000 operations a rank


def _scribble(n, dtype):
    """Allocates and fills tensors of n elements, the size of those just dropped: freed memory
    is taken again and overwritten."""
    return [torch.full((n,), -7, dtype=dtype) for _ in range(4)]


def _expect(size, rank, per, k):
    """What rank receives in operation k: from each rank i, per elements naming (k, i, rank, j)."""
    i = torch.arange(size, dtype=torch.int64).repeat_interleave(per)
    j = torch.arange(per, dtype=torch.int64).repeat(size)
    return ((k * 1000 + i) * 100 + rank) * 1000 + j


def _payload(size, rank, per, k):
    """What rank sends in operation k: to each rank d, per elements naming (k, rank, d, j)."""
    d = torch.arange(size, dtype=torch.int64).repeat_interleave(per)
    j = torch.arange(per, dtype=torch.int64).repeat(size)
    return ((k * 1000 + rank) * 100 + d) * 1000 + j


@pytest.mark.parametrize("per", [8, 65536])  # elements per peer: 64 B, and 512 KiB
def test_single_async_temporaries(size, rank, per):
    """all_to_all_single(async_op=True): the input a temporary (dropped at once) and the
    output reachable only through the handle's result."""
    for r in range(ROUNDS if per == 8 else 2):
        works = []
        for k in range(5):
            kk = r * 5 + k
            out = torch.empty(size * per, dtype=torch.int64)
            works.append((kk, a2a.all_to_all_single(out, _payload(size, rank, per, kk) + 0,
                                                    async_op=True)))
            del out  # the handle holds it (refcounting frees what nothing holds, at once)
            junk = _scribble(size * per, torch.int64)
        for kk, w in works:
            got = w.wait(timeout=60)
            assert torch.equal(got, _expect(size, rank, per, kk)), f"operation {kk}"
        del junk


@pytest.mark.parametrize("per", [8, 65536])
def test_v_async_deleted_input(size, rank, per):
    """all_to_all_v_async with a torch input deleted right after the call returned."""
    counts = [per] * size
    displs = [per * j for j in range(size)]
    for r in range(ROUNDS if per == 8 else 2):
        works = []
        for k in range(5):
            kk = r * 5 + k
            inp = _payload(size, rank, per, kk)
            works.append((kk, a2a.all_to_all_v_async(inp, counts, displs, counts, displs)))
            del inp
            junk = _scribble(size * per, torch.int64)
        for kk, w in works:
            got = w.wait(timeout=60)
            assert torch.equal(got, _expect(size, rank, per, kk)), f"operation {kk}"
        del junk


def test_handle_dropped_before_wait(size, rank):
    """A handle deleted before its operation ended: the operation still runs with its buffers
    (the next one on the group is the next operation for every rank)."""
    for k in range(20):
        w = a2a.all_to_all_single(torch.empty(size, dtype=torch.int64),
                                  torch.full((size,), rank * 100 + k, dtype=torch.int64),
                                  async_op=True)
        del w
        _scribble(size, torch.int64)
    gc.collect()
    out = torch.empty(size, dtype=torch.int64)
    assert a2a.all_to_all_single(out, torch.full((size,), rank, dtype=torch.int64)) is None
    assert out.tolist() == list(range(size))


def test_numpy_async_temporaries(size, rank):
    """The same with numpy arrays: a temporary input and a dropped output."""
    for k in range(100):
        w = a2a.all_to_all_v_async(np.arange(size, dtype=np.int64) * 0 + rank * 1000 + k,
                                   [1] * size, list(range(size)), [1] * size, list(range(size)))
        np.full(size, -7, dtype=np.int64)
        assert w.wait(timeout=60).tolist() == [i * 1000 + k for i in range(size)]
