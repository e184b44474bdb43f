"""HCCL's group management, with a name of 127 bytes (the limit) and one of 128."""
import numpy as np
import pytest

import a2a
from conftest import sync

NAME = ("py_group_" + "x" * 127)[:127]


def test_world(size, rank):
    assert a2a.get_rank_size() == size == a2a.get_rank_size("hccl_world_group")
    assert a2a.get_rank_id("hccl_world_group") == rank == a2a.current().rank
    assert a2a.get_world_rank_from_group_rank("hccl_world_group", rank) == rank
    assert a2a.get_group_rank_from_world_rank(rank, "hccl_world_group") == rank


def test_create_use_destroy_127(size, rank):
    assert len(NAME.encode()) == 127 == a2a.GROUP_NAME_MAX
    members = list(reversed(range(size)))  # group rank g is world rank size - 1 - g
    a2a.create_group(NAME, size, members)  # every rank creates it: the same members, no-op
    a2a.create_group(NAME, size, np.array(members))
    sync()
    assert a2a.get_rank_size(NAME) == size
    me = a2a.get_rank_id(NAME)
    assert me == size - 1 - rank
    assert a2a.get_world_rank_from_group_rank(NAME, 0) == size - 1
    assert a2a.get_group_rank_from_world_rank(rank, NAME) == me
    with pytest.raises(a2a.InvalidArgumentError, match=f"group rank {size} is out of range"):
        a2a.get_world_rank_from_group_rank(NAME, size)
    # an operation on it, in group ranks: group rank g sends g * 10 + k to group rank k
    send = np.array([me * 10 + k for k in range(size)], dtype=np.int32)
    got = a2a.all_to_all_v(send, [1] * size, list(range(size)), [1] * size, list(range(size)),
                           NAME)
    assert got.tolist() == [g * 10 + me for g in range(size)]
    if rank == 0:
        with pytest.raises(a2a.AlreadyExistsError):
            a2a.create_group(NAME, size, list(range(size)) if size > 1 else [0, 0])
    sync()
    if rank == 0:
        a2a.destroy_group(NAME)
    sync()
    with pytest.raises(a2a.NotFoundError):
        a2a.get_rank_size(NAME)
    with pytest.raises(a2a.NotFoundError):
        a2a.destroy_group(NAME)
    sync()


def test_name_limits():
    with pytest.raises(a2a.InvalidArgumentError, match="128 bytes is too long"):
        a2a.create_group(NAME + "y", 1, [0])
    with pytest.raises(a2a.InvalidArgumentError, match="128 bytes is too long"):
        a2a.get_rank_size(NAME + "y")
    with pytest.raises(a2a.InvalidArgumentError, match="empty"):
        a2a.get_rank_id("")


def test_subgroup(size, rank):
    """Even world ranks only: members exchange, others are refused (PermissionDeniedError)."""
    even = list(range(0, size, 2))
    name = f"py_even_{size}"
    a2a.create_group(name, len(even), even)
    sync()
    n = len(even)
    send = np.full(n, rank, dtype=np.int64)
    if rank % 2 == 0:
        got = a2a.all_to_all_v(send, [1] * n, list(range(n)), [1] * n, list(range(n)), name)
        assert got.tolist() == even
        assert a2a.get_rank_id(name) == rank // 2
    else:
        with pytest.raises(a2a.PermissionDeniedError):
            a2a.all_to_all_v(send, [1] * n, list(range(n)), [1] * n, list(range(n)), name)
        with pytest.raises(a2a.Error):
            a2a.get_rank_id(name)
    sync()
    if rank == 0:
        a2a.destroy_group(name)
    sync()
