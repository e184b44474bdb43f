"""Helpers of the tests: random count matrices the same on every rank, and their layouts."""
import numpy as np

import a2a

DTYPES = a2a.DTYPES  # the 12, in a2a.h's order


def matrix(n: int, seed: int, hi: int = 6) -> np.ndarray:
    """m[i][j]: the elements rank i sends rank j (zeros included), the same on every rank."""
    rng = np.random.default_rng(seed)
    m = rng.integers(0, hi, size=(n, n))
    m[rng.random((n, n)) < 0.2] = 0
    return m


class Layout:
    """Rank me's side of matrix m: send slices in rank order with gaps, receive slices in
    reverse rank order with gaps, and the value each element must hold."""

    def __init__(self, m: np.ndarray, me: int, seed: int) -> None:
        n = len(m)
        rng = np.random.default_rng(seed * 1000 + me)
        self.n, self.me = n, me
        self.sc = m[me].astype(np.int64)
        self.rc = m[:, me].astype(np.int64)
        gaps = rng.integers(0, 3, size=n)
        self.sd = np.zeros(n, dtype=np.int64)
        pos = 0
        for j in range(n):
            pos += int(gaps[j])
            self.sd[j] = pos
            pos += int(self.sc[j])
        self.send_len = pos + 1
        self.rd = np.zeros(n, dtype=np.int64)
        pos = 0
        for i in reversed(range(n)):
            pos += 1
            self.rd[i] = pos
            pos += int(self.rc[i])
        # the receive buffer a2a allocates: up to the end of the last slice that is not empty
        self.recv_len = max([int(self.rd[i] + self.rc[i]) for i in range(n) if self.rc[i]] or [0])

    @staticmethod
    def value(src: int, dst: int, k: int) -> int:
        """Element k of the slice from src to dst: small, exact in every dtype (bfloat16 too)."""
        return (src * 37 + dst * 11 + k * 5) % 100

    def send_values(self) -> np.ndarray:
        v = np.full(self.send_len, 101, dtype=np.int64)  # filler outside the slices
        for j in range(self.n):
            for k in range(int(self.sc[j])):
                v[self.sd[j] + k] = self.value(self.me, j, k)
        return v

    def check(self, got: np.ndarray) -> None:
        """got (the receive buffer, as int64 values) holds every slice where it belongs."""
        for i in range(self.n):
            want = [self.value(i, self.me, k) for k in range(int(self.rc[i]))]
            have = got[self.rd[i]:self.rd[i] + self.rc[i]].tolist()
            assert have == want, f"slice from rank {i}: {have} != {want}"


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) of small integer values."""
    return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def from_bf16_bits(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)
