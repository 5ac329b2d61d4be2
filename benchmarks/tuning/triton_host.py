#!/usr/bin/env python3
"""Host time of my_ops.triton_rms_norm's roads, piece by piece: where the CPU
time of one eager forward + backward goes (benchmarks/NOTES.md, "Triton RMSNorm").

  python benchmarks/tuning/triton_host.py                       (CUDA: the real kernels)
  TRITON_INTERPRET=1 python benchmarks/tuning/triton_host.py    (CPU: the launches stubbed out)

A [ROWS, 4096] tensor, small enough that the device keeps up, so each
number is host time: calls timed in turns (bench_host.interleaved_us), no
synchronisation inside a run. On the CPU the Triton launches are replaced
by a no-op (the interpreter would run them), so the numbers are the road
around the launches: Python, autograd and dispatch. The rows:

- the raw launches (CUDA only), the launch code of each road (_launch_*:
  allocation and launch, no checks), the checks (_check);
- the forward under torch.no_grad(): the eager road (my_ops.triton_rms_norm)
  and the op through torch.ops;
- forward + backward (torch.autograd.grad, as the benchmark's step): the
  eager road, and the op's road (the autograd.Function that torch.func needs
  around the op) that compiled code and torch.func take.

On CUDA, then, the same forward + backward at the lab's [8, 4096, 4096] bf16,
beside torch.compile of the composite: the host time per iteration (50
queued, perf_counter, no synchronisation inside) and the device time per
iteration as the three-way benchmark takes it (CUDA events around batches
of 10 queued iterations, median: common.time_call). Host time above the
kernels' shows as device time; "kernels alone" (the launch code of both
kernels and the weight gradient's sum, no checks, no autograd) is the bound
of any road.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/
import my_ops  # noqa: E402
import my_ops.rms_norm_triton as lab  # noqa: E402  (the module of the Triton op)
import providers  # noqa: E402
from bench_host import interleaved_us  # noqa: E402
from common import time_call  # noqa: E402

ROWS, HIDDEN, EPS = 64, 4096, 1e-6


class _NoLaunch:
    """kernel[grid](...) that launches nothing: the host road without Triton's interpreter."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: None


def main() -> int:
    cuda = torch.cuda.is_available()
    if not cuda and os.environ.get("TRITON_INTERPRET") != "1":
        print("needs a CUDA device, or TRITON_INTERPRET=1 (the launches are then stubbed out)", file=sys.stderr)
        return 2
    device = torch.device("cuda" if cuda else "cpu")
    if not cuda:
        lab._forward_kernel = lab._backward_kernel = _NoLaunch()
        torch.set_num_threads(1)  # (the weight gradient's sum: no thread pool waking on a shared machine)
    dtype = torch.bfloat16
    x = torch.randn(ROWS, HIDDEN, device=device, dtype=dtype, requires_grad=True)
    w = (torch.rand(HIDDEN, device=device, dtype=dtype) + 0.5).requires_grad_()
    dy = torch.randn_like(x)
    xd, wd = x.detach(), w.detach()
    ops = torch.ops.my_ops
    block_m, block_n, warps = lab._layout(HIDDEN)
    sms = torch.cuda.get_device_properties(device).multi_processor_count if cuda else 4
    programs, per_program = lab._backward_grid(ROWS, block_m, warps, sms)
    y, partial = torch.empty_like(xd), torch.empty(programs, HIDDEN, device=device)

    def raw_forward():
        lab._forward_kernel[(ROWS // block_m,)](xd, wd, y, ROWS, HIDDEN, EPS, BLOCK_M=block_m, BLOCK_N=block_n,
                                                FP64=False, num_warps=warps)

    def raw_backward():
        lab._backward_kernel[(programs,)](dy, xd, wd, y, partial, ROWS, HIDDEN, EPS, per_program,
                                          lab._cdiv(per_program, block_m), BLOCK_M=block_m, BLOCK_N=block_n,
                                          FP64=False, num_warps=warps)

    pieces = {
        "_check (the op's argument checks)": lambda: lab._check("triton_rms_norm", xd, wd, EPS),
        "_launch_forward (allocate, launch)": lambda: lab._launch_forward(xd, wd, EPS, wrap=lab._as_is),
        "_launch_backward (allocate, launch, sum)": lambda: lab._launch_backward(dy, xd, wd, EPS, wrap=lab._as_is),
        "no_grad: my_ops.triton_rms_norm": lambda: my_ops.triton_rms_norm(xd, wd, EPS),
        "no_grad: torch.ops forward": lambda: ops.triton_rms_norm(xd, wd, EPS),
        "no_grad: torch.ops backward": lambda: ops.triton_rms_norm_backward(dy, xd, wd, EPS),
    }
    if cuda:
        pieces = {"raw forward launch": raw_forward, "raw backward launch": raw_backward, **pieces}
    op_road = lab._FORWARD  # the autograd.Function around the op: torch.func's road, and the eager one before
    both = {
        "fwd+bwd: my_ops.triton_rms_norm (eager road)":
            lambda: torch.autograd.grad(my_ops.triton_rms_norm(x, w, EPS), (x, w), dy),
        "fwd+bwd: the op's road (Function around torch.ops)":
            lambda: torch.autograd.grad(op_road.apply(x, w, EPS), (x, w), dy),
        "fwd+bwd: my_ops.rms_norm (CUDA C)" if cuda else "fwd+bwd: my_ops.rms_norm (C)":
            lambda: torch.autograd.grad(my_ops.rms_norm(x, w, EPS), (x, w), dy),
    }
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name() if cuda else 'cpu (launches stubbed)'}; "
          f"[{ROWS}, {HIDDEN}] bf16; host microseconds per call, timed in turns")
    with torch.no_grad():
        for name, us in interleaved_us(pieces, device, rounds=7, per_round=300).items():
            print(f"{us:9.1f}  {name}")
    for name, us in interleaved_us(both, device, rounds=7, per_round=200).items():
        print(f"{us:9.1f}  {name}")
    if cuda:
        lab_shape()
    return 0


def lab_shape() -> None:
    """Forward + backward at the lab's shape: host and device time per iteration."""
    device = torch.device("cuda")
    x = torch.randn(8, 4096, 4096, device=device, dtype=torch.bfloat16, requires_grad=True)
    w = (torch.rand(4096, device=device, dtype=torch.bfloat16) + 0.5).requires_grad_()
    dy = torch.randn_like(x)
    compiled = providers.compiled(providers.rms_norm_eager)
    def kernels_alone(x, w, eps):
        xd, wd = x.detach(), w.detach()
        y = lab._launch_forward(xd, wd, eps, wrap=lab._as_is)
        return lab._launch_backward(dy, xd, wd, eps, wrap=lab._as_is), y

    roads = {"kernels alone (no checks, no autograd)": kernels_alone,
             "eager road (my_ops.triton_rms_norm)": my_ops.triton_rms_norm,
             "op's road (Function around torch.ops)": lab._FORWARD.apply,
             "torch.compile of the composite": compiled}
    print("[8, 4096, 4096] bf16 forward + backward: host us per iteration (50 queued), device us (events)")
    for name, fn in roads.items():
        def step(s=None, fn=fn):
            if fn is kernels_alone:
                return fn(x, w, EPS)
            return torch.autograd.grad(fn(x, w, EPS), (x, w), dy)

        for _ in range(5):
            step()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(50):
            step()
        host_us = (time.perf_counter() - start) * 1e6 / 50
        torch.cuda.synchronize()
        device_us, _ = time_call(step, [None], device, graph=False)
        print(f"{host_us:9.1f} {device_us:9.1f}  {name}")


if __name__ == "__main__":
    sys.exit(main())
