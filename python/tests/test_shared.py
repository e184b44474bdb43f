"""Arrays and tensors in memory shared with the worker; explicit jobs."""
import gc
import time

import numpy as np
import pytest

import a2a
from conftest import sync

torch = pytest.importorskip("torch")
import a2a.torch  # noqa: E402


def test_empty_numpy(size, rank):
    per = 1000
    send = a2a.empty((size, per), "float32")
    assert send.shape == (size, per) and send.dtype == np.float32 and not send.any()
    send[:] = np.arange(size)[:, None] * 1000 + rank + np.arange(per) * 0.5
    out = a2a.zeros(size * per, dtype=np.float32)
    counts, displs = [per] * size, [per * j for j in range(size)]
    got = a2a.all_to_all_v(send, counts, displs, counts, displs, out=out)
    assert got is out
    want = np.concatenate([rank * 1000 + i + np.arange(per) * 0.5 for i in range(size)])
    assert np.array_equal(out, want.astype(np.float32))
    bf = a2a.empty(4, "bfloat16")
    assert bf.dtype == np.uint16 and bf.shape == (4,)
    assert a2a.empty(0, "int8").shape == (0,)
    with pytest.raises(a2a.InvalidArgumentError, match="negative"):
        a2a.empty((-1, 2))
    with pytest.raises(a2a.InvalidArgumentError, match="float128|not one of"):
        a2a.empty(3, "complex64")


def test_empty_torch(size, rank):
    x = a2a.torch.empty(size, 3, dtype=torch.bfloat16)
    assert x.shape == (size, 3) and x.dtype == torch.bfloat16 and not x.any()
    x[:] = torch.arange(size).unsqueeze(1) + 10 * rank
    y = a2a.torch.zeros(size * 3, dtype=torch.bfloat16).view(size, 3)
    a2a.all_to_all_single(y, x)
    assert y[:, 0].tolist() == [float(10 * i + rank) for i in range(size)]
    d = a2a.torch.empty(2)
    assert d.dtype == torch.get_default_dtype()
    sync()


def test_explicit_job(size, rank):
    """with a2a.Job(): the module functions use it; its arrays outlive close(); then the
    environment's job opens again."""
    a2a.close()  # one live job per rank: let go of the environment's
    with a2a.Job() as job:
        assert a2a.current() is job and job.mode in ("local", "remote")
        assert job.rank == rank
        arr = job.empty(size, "int64")
        arr[:] = rank
        got = a2a.all_to_all_v(arr, [1] * size, list(range(size)), [1] * size,
                               list(range(size)))
        assert got.tolist() == list(range(size))
    assert job.closed
    with pytest.raises(a2a.UnavailableError, match="closed"):
        job.get_rank_size()
    assert arr.tolist() == [rank] * size  # still mapped
    del arr
    gc.collect()  # the last array gone: the job's connection closes, the rank is free
    sync()  # a new environment job
    assert a2a.current() is not job


def test_job_args(rank):
    with pytest.raises(TypeError):
        a2a.Job(rank="x")
    with pytest.raises(a2a.InvalidArgumentError, match="rank must be"):
        a2a.Job(rank=-2)
    with pytest.raises(a2a.UnavailableError, match="127.0.0.1:1"):
        a2a.Job("tcp://127.0.0.1:1", rank)
    with pytest.raises(a2a.AlreadyExistsError):
        a2a.Job()  # the environment's job holds this rank


def open_soon() -> a2a.Job:
    """a2a.Job(), retried for up to 5 s while the worker still holds the rank for the job
    closed just before: the worker learns of a local job's end when it reads the end of its
    socket, and a remote job's claim (over TCP, another thread of the worker) can come
    first. Seen under load in about 1 run in 4 (ALREADY_EXISTS naming the old session)."""
    deadline = time.monotonic() + 5.0
    while True:
        try:
            return a2a.Job()
        except a2a.AlreadyExistsError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_remote_job(size, rank, monkeypatch):
    """A2A_JOB_MODE=remote: the slices go over the job's TCP connection; arrays from
    job.empty still work (as plain memory), numpy and torch alike."""
    a2a.close()
    monkeypatch.setenv("A2A_JOB_MODE", "remote")
    with open_soon() as job:
        assert job.mode == "remote"
        send = job.empty(size * 2, "int32")
        send[:] = np.arange(size * 2) + 100 * rank
        c, d = [2] * size, [2 * j for j in range(size)]
        got = a2a.all_to_all_v(send, c, d, c, d)
        assert got.tolist() == [100 * i + 2 * rank + k for i in range(size) for k in range(2)]
        x = torch.arange(size, dtype=torch.float64) + 10 * rank
        data, counts = a2a.all_to_all_v(x, [1] * size, list(range(size)))
        assert data.tolist() == [10.0 * i + rank for i in range(size)]
        del send
    monkeypatch.delenv("A2A_JOB_MODE")
    gc.collect()
    sync()
    assert a2a.current().mode == "local"
