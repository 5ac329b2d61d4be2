"""RMSNorm's backward kernel on wide rows: the fused backward op alone
(my_ops::rms_norm_backward, CUDA-graph replays) at 2^27 bf16 elements per
call, hidden 4096 to 65536, as % of the copy ceiling; F.rms_norm's backward
(torch.autograd.grad of its output, events) beside it. Bytes: dy and x read,
dx written (the weight and its gradient are one row each).

  python benchmarks/tuning/wide_rows_backward.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/
import my_ops  # noqa: E402,F401  (registers the ops)
from common import copy_bandwidth, input_sets, time_events, time_graph  # noqa: E402

ELEMENTS = 1 << 27
EPS = 1e-6


def main() -> None:
    device = torch.device("cuda")
    copy = copy_bandwidth(device)
    print(f"torch {torch.__version__}; copy {copy:.0f} GB/s; bf16, {ELEMENTS} elements per call")
    print(f"{'rows x hidden':>16s} {'my_ops bwd':>11s} {'% copy':>7s} {'F.rms_norm bwd':>15s} {'% copy':>7s}")
    for hidden in (4096, 8192, 16384, 32768, 65536):
        rows = ELEMENTS // hidden
        tensor_bytes = ELEMENTS * 2

        def make():
            x = torch.randn(rows, hidden, device=device, dtype=torch.bfloat16)
            return (torch.randn_like(x), x, torch.rand(hidden, device=device, dtype=torch.bfloat16) + 0.5)

        sets = input_sets(make, 3 * tensor_bytes, device, cap=4)
        ours = time_graph(lambda s: torch.ops.my_ops.rms_norm_backward(s[0], s[1], s[2], EPS), sets)

        def torch_backward(s):
            x, w = s[1].detach().requires_grad_(), s[2].detach().requires_grad_()
            y = F.rms_norm(x, (hidden,), w, EPS)
            return torch.autograd.grad(y, (x, w), s[0])

        # F.rms_norm's forward is timed too (events around both): its backward alone is the difference
        both = time_events(torch_backward, sets, reps=10, batch=3)
        forward = time_events(lambda s: F.rms_norm(s[1], (hidden,), s[2], EPS), sets, reps=10, batch=3)
        theirs = both - forward
        gbps = [3 * tensor_bytes / t / 1e3 for t in (ours, theirs)]
        print(f"{rows:>7d} x {hidden:<6d} {ours:9.1f}us {100 * gbps[0] / copy:6.1f}% {theirs:13.1f}us "
              f"{100 * gbps[1] / copy:6.1f}%")


if __name__ == "__main__":
    main()
