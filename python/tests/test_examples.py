"""The examples, run on this rank's job: the seed's call with numpy, the MoE layer."""
import numpy as np
import pytest

from conftest import load_example, sync


def test_seed_example(size, capsys):
    result = load_example("seed_all_to_all_v").main()
    out = capsys.readouterr().out
    assert "refused" in out and "overlap" in out and "verified" in out
    assert result.shape == (3 * size,) and result.dtype == np.float32
    sync()


def test_moe_example(size):
    pytest.importorskip("torch")
    moe = load_example("moe_dispatch")
    assert moe.main(tokens=48, dim=16, hidden=32, experts_per_rank=2, quiet=True) < 1e-5
    assert moe.main(tokens=7, dim=8, hidden=8, experts_per_rank=1, seed=3, quiet=True) < 1e-5
    sync()
