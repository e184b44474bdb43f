"""bench.py - the Python package's per-call overhead and throughput, beside a2a-bench (C).

Run under a2a-launch:  a2a-launch -n 4 --workers 2 -- python3 python/benchmarks/bench.py [--quick]

overhead: the cost of the bindings themselves, with everything but liba2a's call C
          function (so the figure holds no network or worker time): the a2a package's
          CPython extension (the whole a2a.all_to_all_v, and _core's call alone) and the same
          call through cffi (ABI mode: filling a2a_alltoallv_args, then the call).
uniform:  time and algbw of the uniform pattern (each rank sends S bytes in all, S/N to each
          rank) as a2a-bench measures them (median over iterations of the max over ranks),
          every size verified: numpy arrays, a2a.empty (shared) arrays, torch tensors
          (all_to_all_single); compare with a2a-bench -b 64 -e 16M -f 4 --patterns uniform
          [--shared] on the same cluster shape. Rank 0 prints.
"""
import argparse
import statistics
import sys
import time

import numpy as np

import a2a
from a2a import _core


def timeit(fn, iters):
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t0)
    return statistics.median(ts) / 1000.0  # us


class NopCore:
    """A _core.Job whose all_to_all_v is its dry_run: every check, no liba2a call."""

    def __init__(self, real):
        self._real = real
        self.all_to_all_v = real.dry_run
        self.closed = False

    def __getattr__(self, name):
        return getattr(self._real, name)


def overhead(job, n):
    send = np.arange(4 * n, dtype=np.float32)
    counts = np.full(n, 4, dtype=np.int64)
    displs = np.arange(0, 4 * n, 4, dtype=np.int64)
    recv = np.empty(4 * n, dtype=np.float32)
    lc, ld = counts.tolist(), displs.tolist()
    real = job._c
    job._c = NopCore(real)
    try:
        job.all_to_all_v(send, counts, displs, counts, displs)  # fills the size cache
        rows = [
            ("a2a.all_to_all_v (module function), int64 arrays",
             lambda: a2a.all_to_all_v(send, counts, displs, counts, displs)),
            ("Job.all_to_all_v, int64 arrays", lambda: job.all_to_all_v(send, counts, displs,
                                                                         counts, displs)),
            ("Job.all_to_all_v, lists", lambda: job.all_to_all_v(send, lc, ld, lc, ld)),
            ("Job.all_to_all_v, out=", lambda: job.all_to_all_v(send, counts, displs, counts,
                                                                 displs, out=recv)),
        ]
        try:
            import torch
            ts, tr = torch.from_numpy(send), torch.from_numpy(recv)
            rows.append(("Job.all_to_all_single, torch", lambda: job.all_to_all_single(tr, ts)))
        except ImportError:
            pass
        res = [(name, timeit(fn, 20000)) for name, fn in rows]
    finally:
        job._c = real
    res.append(("_core's all_to_all_v alone (its dry_run)",
                timeit(lambda: real.dry_run(None, 9, send, -1, counts, displs, recv, -1, counts,
                                            displs, 0, n), 20000)))
    res.append(("_core.nop (a C call from Python)",
                timeit(lambda: _core.nop(None, 9, send, -1, counts, displs, recv, -1, counts,
                                         displs, 0, n), 20000)))
    try:
        res += cffi_overhead(n, send, counts, displs, recv)
    except ImportError as e:
        res.append((f"cffi: not available ({e})", float("nan")))
    return res


def cffi_overhead(n, send, counts, displs, recv):
    from cffi import FFI
    ffi = FFI()
    ffi.cdef("""
    typedef struct { const char *group; int dtype; const void *send_data; size_t send_len;
      const int64_t *send_counts; const int64_t *send_displacements; void *recv_data;
      size_t recv_len; const int64_t *recv_counts; const int64_t *recv_displacements;
      int64_t timeout_ms; } a2a_alltoallv_args;
    size_t a2a_dtype_size(int dtype);
    int a2a_all_to_all_v(void *job, const a2a_alltoallv_args *args);
    """)
    lib = ffi.dlopen(_core.__file__)  # liba2a is loaded with it; its symbols resolve
    args = ffi.new("a2a_alltoallv_args *")

    def call():
        # what a cffi binding must do per call: the struct, the buffers, then the call
        args.group = ffi.NULL
        args.dtype = 9
        args.send_data = ffi.from_buffer(send)
        args.send_len = send.size
        args.send_counts = ffi.from_buffer("int64_t[]", counts)
        args.send_displacements = ffi.from_buffer("int64_t[]", displs)
        args.recv_data = ffi.from_buffer(recv)
        args.recv_len = recv.size
        args.recv_counts = ffi.from_buffer("int64_t[]", counts)
        args.recv_displacements = ffi.from_buffer("int64_t[]", displs)
        args.timeout_ms = 0
        lib.a2a_dtype_size(9)  # the call itself: a no-op stand-in of the same shape

    return [("cffi ABI: fill the args struct + a C call (no checks, no result)",
             timeit(call, 20000)),
            ("cffi ABI: a C call alone", timeit(lambda: lib.a2a_dtype_size(9), 20000))]


def uniform(n, nbytes, itemsize):
    per = max(nbytes // itemsize // n, 1)
    counts = np.full(n, per, dtype=np.int64)
    displs = np.arange(n, dtype=np.int64) * per
    return counts, displs, per * n


def timed(job, fn, iters):
    """a2a-bench's figure: per iteration the max over ranks, then the median (us, rank 0)."""
    ts = np.empty(iters, dtype=np.float64)
    for i in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        ts[i] = (time.perf_counter_ns() - t0) / 1000.0
    n = job.get_rank_size()
    got, _ = job.all_to_all_v(ts, [iters] + [0] * (n - 1), [0] * n)  # all to rank 0
    return float(np.median(got.reshape(-1, iters).max(axis=0))) if job.rank == 0 else 0.0


def iters_for(nbytes, quick):
    k = 300 if nbytes <= 65536 else 100 if nbytes <= 1 << 20 else 20
    return max(5, k // 10) if quick else k


def throughput(job, n, sizes, quick):
    rows = []
    try:
        import torch
    except ImportError:
        torch = None
    me = job.rank
    for nbytes in sizes:
        counts, displs, total = uniform(n, nbytes, 4)
        per = int(counts[0])
        def shared():  # allocated when its turn comes (after the plain arrays are timed)
            sh_s, sh_r = job.empty(total, "float32"), job.empty(total, "float32")
            sh_s[:] = np.arange(total, dtype=np.float32)
            return sh_s, sh_r

        kinds = [("numpy", lambda: (np.arange(total, dtype=np.float32),
                                    np.empty(total, np.float32)))]
        if torch is not None:
            kinds.append(("torch", lambda: (torch.arange(total, dtype=torch.float32),
                                            torch.empty(total, dtype=torch.float32))))
        kinds.append(("numpy shared", shared))
        want = np.arange(me * per, (me + 1) * per, dtype=np.float32)
        for name, make in kinds:
            s, r = make()
            if name == "torch":
                def fn(s=s, r=r):
                    job.all_to_all_single(r, s)
            else:
                def fn(s=s, r=r):
                    job.all_to_all_v(s, counts, displs, counts, displs, out=r)
            fn()  # verified: every rank's slice j holds elements j*per.. of the sender's arange
            got = np.asarray(r)
            assert all(np.array_equal(got[i * per:(i + 1) * per], want) for i in range(n)), name
            t = timed(job, fn, iters_for(nbytes, quick))
            rows.append((name, total * 4, t, total * 4 / t / 1e3 if t else 0.0))
            del s, r, got, fn
    return rows


def size_arg(s):
    mult = {"k": 1 << 10, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer sizes and iterations")
    ap.add_argument("--overhead", action="store_true", help="the overhead table only")
    ap.add_argument("--no-torch", action="store_true", help="without torch (not even imported)")
    ap.add_argument("--min", default="64", help="smallest size (bytes each rank sends): 64")
    ap.add_argument("--max", default="16M", help="largest size: 16M (sizes grow 4x)")
    o = ap.parse_args()
    if o.no_torch:
        sys.modules["torch"] = None  # the imports below fail
    try:
        import torch
        # one thread per rank, as a2a-bench: torch's OpenMP threads spin after each parallel
        # operation, taking the CPU from the workers when ranks share a few cores
        torch.set_num_threads(1)
    except ImportError:
        pass
    job = a2a.current()
    n, rank = job.get_rank_size(), job.rank
    out = []
    if rank == 0:
        out.append(f"# {n} ranks, mode {job.mode}, python {sys.version.split()[0]}, "
                   f"numpy {np.__version__}")
        out.append("# overhead (us per call, everything but liba2a's call)")
        for name, us in overhead(job, n):
            out.append(f"overhead  {us:8.2f}  {name}")
    else:
        overhead(job, n)  # the same work, so that the ranks stay together
    if o.overhead:
        if rank == 0:
            print("\n".join(out), flush=True)
        return
    sizes, sz = [], size_arg(o.min)
    while sz <= size_arg(o.max):
        sizes.append(sz)
        sz *= 4
    out.append("# uniform pattern: S bytes each rank sends in all; time: median over iterations "
               "of the max over ranks (a2a-bench's)")
    for name, b, t, bw in throughput(job, n, sizes, o.quick):
        out.append(f"uniform   {name:13s} {b:>10d} B {t:10.1f} us {bw:7.3f} GB/s")
    if rank == 0:
        print("\n".join(out), flush=True)


if __name__ == "__main__":
    main()
