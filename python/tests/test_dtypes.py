"""Random count matrices in all 12 dtypes: numpy, torch and plain buffers; counts given or
discovered; 1-D and N-D all_to_all_single."""
import array

import numpy as np
import pytest

import a2a
from a2a_testlib import DTYPES, Layout, bf16_bits, from_bf16_bits, matrix

torch = pytest.importorskip("torch")


def np_data(values: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return bf16_bits(values)  # numpy has no bfloat16: uint16 bit patterns, dtype= says so
    return values.astype(dtype)


def np_values(got: np.ndarray, dtype: str) -> np.ndarray:
    return (from_bf16_bits(got) if dtype == "bfloat16" else got).astype(np.int64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_random(dtype, size, rank):
    for seed in (1, 2):
        lay = Layout(matrix(size, seed + DTYPES.index(dtype) * 10), rank, seed)
        send = np_data(lay.send_values(), dtype)
        kw = {"dtype": "bfloat16"} if dtype == "bfloat16" else {}
        got = a2a.all_to_all_v(send, lay.sc, lay.sd, lay.rc, lay.rd, **kw)
        assert type(got) is np.ndarray and got.dtype == send.dtype
        assert len(got) == lay.recv_len
        lay.check(np_values(got, dtype))
    # counts as lists, receive counts discovered (packed in rank order)
    lay = Layout(matrix(size, 99 + DTYPES.index(dtype)), rank, 3)
    send = np_data(lay.send_values(), dtype)
    kw = {"dtype": "bfloat16"} if dtype == "bfloat16" else {}
    got, rc = a2a.all_to_all_v(send, lay.sc.tolist(), lay.sd.tolist(), **kw)
    assert rc.tolist() == lay.rc.tolist()
    lay.rd = np.concatenate([[0], np.cumsum(lay.rc)[:-1]]).astype(np.int64)
    assert len(got) == int(lay.rc.sum())
    lay.check(np_values(got, dtype))
    # liba2a's own discovery (one operation) into out, 3 elements of room to spare, poisoned
    total = int(lay.rc.sum())
    out = np.full(total + 3, 77, dtype=send.dtype)
    got, rc = a2a.all_to_all_v(send, lay.sc, lay.sd, a2a.DISCOVER, out=out, **kw)
    assert got is out and rc.dtype == np.int64 and rc.tolist() == lay.rc.tolist()
    lay.check(np_values(got[:total], dtype))
    assert (out[total:] == 77).all()  # nothing past what came


def torch_dtype(dtype: str):
    """torch's own dtype, else (uint16/32/64 before torch 2.3) the signed one of its size."""
    t = getattr(torch, dtype, None)
    if isinstance(t, torch.dtype):
        return t, None
    return {"uint16": torch.int16, "uint32": torch.int32, "uint64": torch.int64}[dtype], dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_random(dtype, size, rank):
    tdt, override = torch_dtype(dtype)
    kw = {"dtype": override} if override else {}
    lay = Layout(matrix(size, 7 + DTYPES.index(dtype)), rank, 4)
    send = torch.tensor(lay.send_values()).to(tdt)
    got = a2a.all_to_all_v(send, lay.sc, lay.sd, lay.rc, lay.rd, **kw)
    assert isinstance(got, torch.Tensor) and got.dtype == tdt and got.shape == (lay.recv_len,)
    lay.check(got.to(torch.int64).numpy())
    # torch counts, discovery
    got, rc = a2a.all_to_all_v(send, torch.from_numpy(lay.sc), torch.from_numpy(lay.sd), **kw)
    assert isinstance(rc, torch.Tensor) and rc.tolist() == lay.rc.tolist()
    lay.rd = np.concatenate([[0], np.cumsum(lay.rc)[:-1]]).astype(np.int64)
    lay.check(got.to(torch.int64).numpy())
    # liba2a's own discovery into a tensor of exactly the room needed
    out = torch.empty(int(lay.rc.sum()), dtype=tdt)
    got, rc = a2a.all_to_all_v(send, lay.sc, lay.sd, a2a.DISCOVER, out=out, **kw)
    assert got is out and isinstance(rc, torch.Tensor) and rc.tolist() == lay.rc.tolist()
    lay.check(got.to(torch.int64).numpy())


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "float16"])
def test_all_to_all_single_nd(dtype, size, rank):
    tdt = getattr(torch, dtype)
    m = matrix(size, 50 + DTYPES.index(dtype))  # rows from i to j
    rows_out, rows_in = m[rank].tolist(), m[:, rank].tolist()
    inp = torch.empty(sum(rows_out), 3, 2, dtype=tdt)
    r = 0
    for j in range(size):
        for k in range(rows_out[j]):
            inp[r] = Layout.value(rank, j, k)
            r += 1
    out = torch.full((sum(rows_in), 3, 2), -1, dtype=tdt)
    assert a2a.all_to_all_single(out, inp, rows_in, rows_out) is None
    r = 0
    for i in range(size):
        for k in range(rows_in[i]):
            assert torch.all(out[r] == Layout.value(i, rank, k)), (i, k, out[r])
            r += 1
    # even splits (None), numpy arrays
    x = np.repeat(np.arange(size, dtype=np.float64) + 100 * rank, 2).reshape(size * 2, 1)
    y = np.zeros_like(x)
    a2a.all_to_all_single(y, x)
    assert y.ravel().tolist() == [float(100 * i + rank) for i in range(size) for _ in range(2)]


def test_buffer_protocol(size, rank):
    """array.array and bytearray in, a memoryview of the same format out."""
    send = array.array("i", [rank * 10 + j for j in range(size)])
    got = a2a.all_to_all_v(send, [1] * size, list(range(size)), [1] * size, list(range(size)))
    assert isinstance(got, memoryview) and got.format == "i"
    assert got.tolist() == [i * 10 + rank for i in range(size)]
    raw = bytearray(np.arange(size, dtype=np.float32).tobytes())  # bytes read as float32
    got = a2a.all_to_all_v(raw, [1] * size, list(range(size)), [1] * size, list(range(size)),
                           dtype="float32")
    assert got.format == "f" and got.tolist() == [float(rank)] * size
    out = bytearray(4 * size)
    a2a.all_to_all_v(send, [1] * size, list(range(size)), [1] * size, list(range(size)),
                     out=out)
    assert np.frombuffer(out, dtype=np.int32).tolist() == [i * 10 + rank for i in range(size)]


def test_large_numpy_and_torch(size, rank):
    """A few MiB per rank, numpy and torch, every element checked."""
    per = 1 << 18  # floats to each rank: 1 MiB
    send = (np.arange(size * per, dtype=np.float32) + rank * 1e7)
    counts, displs = [per] * size, [per * j for j in range(size)]
    got = a2a.all_to_all_v(send, counts, displs, counts, displs)
    want = np.concatenate([np.arange(rank * per, (rank + 1) * per, dtype=np.float32) + i * 1e7
                           for i in range(size)])
    assert np.array_equal(got, want)
    out = torch.empty(size * per, dtype=torch.float32)
    a2a.all_to_all_single(out, torch.from_numpy(send))
    assert np.array_equal(out.numpy(), want)
