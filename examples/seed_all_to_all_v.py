"""The seed's example (HCCL's all_to_all_v page), with numpy instead of TensorFlow.

    a2a-launch -n 2 -- python3 examples/seed_all_to_all_v.py

HCCL's example sends each rank's 3 elements to every rank (send_counts [3, 3],
send_displacements [0, 0]) and receives them with recv_displacements [0, 0]: both received
slices would land on elements 0..2. a2a refuses that before anything is sent
(a2a.InvalidArgumentError: "receive slices 0 ([0, 3)) and 1 ([0, 3)) overlap"); the corrected
call puts rank i's slice at element 3 * i. Works with any number of ranks.
"""
import numpy as np

import a2a


def rank_data(rank: int) -> np.ndarray:
    """tf.random_uniform((1, 3), minval=1, maxval=10, dtype=tf.float32), seeded by the rank."""
    return np.random.default_rng(rank).uniform(1, 10, size=(1, 3)).astype(np.float32)


def main() -> np.ndarray:
    size, rank = a2a.get_rank_size(), a2a.get_rank_id()
    send_data = rank_data(rank)
    send_counts = np.array([3] * size, dtype=np.int64)
    send_displacements = np.array([0] * size, dtype=np.int64)
    recv_counts = np.array([3] * size, dtype=np.int64)
    recv_displacements = np.array([0] * size, dtype=np.int64)

    # the seed's call, as written: refused, nothing sent
    try:
        a2a.all_to_all_v(send_data, send_counts, send_displacements, recv_counts,
                         recv_displacements)
    except a2a.InvalidArgumentError as e:
        print(f"rank {rank}: the seed's call is refused: {e}")
    else:
        raise SystemExit(f"rank {rank}: overlapping receive slices were not refused")

    # corrected: rank i's 3 elements at element 3 * i
    recv_displacements = np.arange(size, dtype=np.int64) * 3
    result = a2a.all_to_all_v(send_data, send_counts, send_displacements, recv_counts,
                              recv_displacements)
    expected = np.concatenate([rank_data(i).ravel() for i in range(size)])
    if not np.array_equal(result, expected):
        raise SystemExit(f"rank {rank}: received {result}, expected {expected}")
    print(f"rank {rank}: corrected call received {[round(float(v), 2) for v in result]}: "
          f"verified")
    return result


if __name__ == "__main__":
    main()
