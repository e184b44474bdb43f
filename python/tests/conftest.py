"""pytest under a2a-launch: every rank runs the same tests in the same order, in step.

Each test makes the same collective calls on every rank, so a failure on one rank shows up
on the others as an error of theirs; -x stops a rank at its first failure and a2a-launch
then stops the others. Operations get a 20 s deadline (A2A_OP_TIMEOUT_MS) so that nothing
waits long for a rank that stopped.
"""
import os
import sys

import numpy as np
import pytest

os.environ.setdefault("A2A_OP_TIMEOUT_MS", "20000")
if "A2A_RANK" not in os.environ or "A2A_WORKER_URL" not in os.environ:
    pytest.exit("run these tests under a2a-launch, e.g. a2a-launch -n 4 --workers 2 -- "
                "python3 -m pytest python/tests", returncode=2)

import a2a  # noqa: E402

EXAMPLES = os.environ.get("A2A_EXAMPLES",
                          os.path.join(os.path.dirname(__file__), "..", "..", "examples"))


@pytest.fixture(scope="session")
def size() -> int:
    return a2a.get_rank_size()


@pytest.fixture(scope="session")
def rank() -> int:
    return a2a.get_rank_id()


def sync() -> None:
    """A verified all_to_all_v of one int64 per pair: the ranks meet, and the world group works."""
    n, me = a2a.get_rank_size(), a2a.get_rank_id()
    got = a2a.all_to_all_v(np.full(n, me, dtype=np.int64), [1] * n, list(range(n)), [1] * n,
                           list(range(n)))
    assert got.tolist() == list(range(n))


def load_example(name: str):
    """examples/NAME.py as a module (its main() runs on this rank's job)."""
    import importlib.util
    path = os.path.join(EXAMPLES, name + ".py")
    spec = importlib.util.spec_from_file_location("example_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod
