"""A mixture-of-experts layer over a2a: expert parallelism with torch CPU tensors.

    a2a-launch -n 4 --workers 2 -- python3 examples/moe_dispatch.py

Every rank holds a batch of tokens and `experts_per_rank` of the layer's experts (expert e
lives on rank e // experts_per_rank). The layer:

1. gate: a linear layer scores every expert for every token; each token goes to its top-1
   expert, and its output is later scaled by that expert's softmax weight;
2. dispatch: tokens are sorted by destination rank and sent with a2a.all_to_all_v without
   receive counts: a2a discovers how many tokens come from each rank and returns
   (tokens, recv_counts); the tokens' expert ids follow with the counts now known;
3. experts: each rank runs its experts (two-layer MLPs) on the tokens it received;
4. combine: a2a.all_to_all_single sends every result back to the rank the token came from
   (2-D tensors split along dim 0, the split sizes of the dispatch reversed);
5. the results are put back in token order and scaled by the gate's weights.

Each rank then checks its output against a single-process reference (every expert applied
where the gate says, without any communication) and prints the largest difference.
The send and receive buffers come from a2a.torch.empty: memory shared with the worker, so
the tokens go between the job and the sockets with no copy.
"""
import argparse

import torch

import a2a
import a2a.torch


class Expert(torch.nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.up = torch.nn.Linear(dim, hidden)
        self.down = torch.nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


def make_experts(n_experts: int, dim: int, hidden: int, seed: int) -> list:
    """Every expert of the layer, the same on every rank (seeded)."""
    torch.manual_seed(seed)
    return [Expert(dim, hidden) for _ in range(n_experts)]


class MoELayer(torch.nn.Module):
    """One rank's part of a top-1 MoE layer whose experts are spread over the group."""

    def __init__(self, dim: int, hidden: int, experts_per_rank: int, seed: int = 0,
                 group: str = "hccl_world_group") -> None:
        super().__init__()
        self.group = group
        self.size = a2a.get_rank_size(group)
        self.rank = a2a.get_rank_id(group)
        self.per_rank = experts_per_rank
        n_experts = self.size * experts_per_rank
        torch.manual_seed(seed)
        self.gate = torch.nn.Linear(dim, n_experts, bias=False)  # replicated
        every = make_experts(n_experts, dim, hidden, seed + 1)
        first = self.rank * experts_per_rank
        self.experts = torch.nn.ModuleList(every[first:first + experts_per_rank])  # ours
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens, dim = x.shape
        # 1. gate: top-1 expert and its weight
        probs = torch.softmax(self.gate(x), dim=-1)
        weight, expert = probs.max(dim=-1)
        dest = expert // self.per_rank  # the rank that holds each token's expert
        order = torch.argsort(dest, stable=True)
        send_tokens = torch.bincount(dest, minlength=self.size)  # tokens to each rank

        # 2. dispatch, in shared memory: tokens sorted by destination rank
        send = a2a.torch.empty(tokens, dim)
        send.copy_(x[order])
        send_counts = send_tokens * dim  # in elements
        send_displs = torch.cumsum(send_counts, 0) - send_counts
        recv_buf = a2a.torch.empty(self.size * tokens * dim)  # room for every token at most
        recv, recv_counts = a2a.all_to_all_v(send, send_counts, send_displs, group=self.group,
                                             out=recv_buf)  # receive counts discovered
        recv_tokens = recv_counts // dim
        n_recv = int(recv_tokens.sum())
        recv = recv[:n_recv * dim].view(n_recv, dim)
        local_expert = (expert[order] % self.per_rank).to(torch.int64)
        recv_expert = a2a.all_to_all_v(local_expert, send_tokens, torch.cumsum(send_tokens, 0)
                                       - send_tokens, recv_tokens,
                                       torch.cumsum(recv_tokens, 0) - recv_tokens,
                                       group=self.group)

        # 3. experts
        out = a2a.torch.empty(n_recv, dim)
        for e, mlp in enumerate(self.experts):
            rows = (recv_expert == e).nonzero(as_tuple=True)[0]
            if len(rows):
                out[rows] = mlp(recv[rows])

        # 4. combine: every result back to its token's rank
        back = a2a.torch.empty(tokens, dim)
        a2a.all_to_all_single(back, out, output_split_sizes=send_tokens.tolist(),
                              input_split_sizes=recv_tokens.tolist(), group=self.group)

        # 5. token order, gate weights
        y = torch.empty_like(x)
        y[order] = back
        return y * weight.unsqueeze(-1)


def reference(x: torch.Tensor, layer: MoELayer, every: list) -> torch.Tensor:
    """The same layer in one process: each token through its expert, no communication."""
    probs = torch.softmax(layer.gate(x), dim=-1)
    weight, expert = probs.max(dim=-1)
    y = torch.stack([every[int(e)](x[i:i + 1])[0] for i, e in enumerate(expert)])
    return y * weight.unsqueeze(-1)


def main(tokens: int = 64, dim: int = 32, hidden: int = 64, experts_per_rank: int = 2,
         seed: int = 0, quiet: bool = False) -> float:
    """Runs the layer on this rank's tokens, checks it; returns the largest difference."""
    with torch.no_grad():
        layer = MoELayer(dim, hidden, experts_per_rank, seed)
        torch.manual_seed(1000 + layer.rank)  # each rank its own batch
        x = torch.randn(tokens, dim)
        y = layer(x)
        every = make_experts(layer.size * experts_per_rank, dim, hidden, seed + 1)
        ref = reference(x, layer, every)
    err = float((y - ref).abs().max())
    if not torch.allclose(y, ref, rtol=1e-4, atol=1e-5):
        raise SystemExit(f"rank {layer.rank}: MoE output differs from the reference by {err}")
    if not quiet:
        print(f"rank {layer.rank}: {tokens} tokens through {layer.size * experts_per_rank} "
              f"experts on {layer.size} ranks: matches the single-process reference "
              f"(max difference {err:.2e})")
    return err


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=64, help="tokens per rank (64)")
    ap.add_argument("--dim", type=int, default=32, help="model dimension (32)")
    ap.add_argument("--hidden", type=int, default=64, help="experts' hidden dimension (64)")
    ap.add_argument("--experts-per-rank", type=int, default=2, help="experts per rank (2)")
    o = ap.parse_args()
    main(o.tokens, o.dim, o.hidden, o.experts_per_rank)
