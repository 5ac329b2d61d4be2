#!/usr/bin/env python3
"""The Triton RMSNorm backward's launch layouts side by side with torch.compile.

  python benchmarks/tuning/triton_backward.py

At [8, 4096, 4096] bf16: the shipped backward kernel (next block's loads
issued before this block's reductions) over block rows, warps and programs
per multiprocessor, the previous kernel (no prefetch), torch.compile of the
composite and the CUDA C op, each forward + backward in one run (CUDA
events around 10 queued iterations, medians: benchmarks/common.py). The
backward alone too. Minimum bytes: forward 2 tensors, backward 3 (read x
and dy, write dx), so forward + backward >= 5 x 256 MiB at copy speed.
Every variant's dx and dweight are checked against the float64 reference.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import my_ops  # noqa: E402
import providers  # noqa: E402
from common import check_against, copy_bandwidth, time_call  # noqa: E402
from my_ops import reference  # noqa: E402
from my_ops._rms_norm_triton_kernels import _backward_kernel, _forward_kernel, _layout  # noqa: E402

SHAPE, EPS = (8, 4096, 4096), 1e-6


@triton.jit
def _backward_kernel_v0(dy_ptr, x_ptr, w_ptr, dx_ptr, dw_ptr, rows, cols, eps, rows_per_program,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The backward before the prefetch: each block of rows waits for its own loads."""
    pid = tl.program_id(0)
    col = tl.arange(0, BLOCK_N)[None, :]
    w = tl.load(w_ptr + col, mask=col < cols, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    start = pid.to(tl.int64) * rows_per_program
    end = tl.minimum(start + rows_per_program, rows)
    first = start
    while first < end:
        row = first + tl.arange(0, BLOCK_M)[:, None]
        mask = (row < end) & (col < cols)
        x = tl.load(x_ptr + row * cols + col, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * cols + col, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / cols + eps)
        xhat = x * rstd[:, None]
        g = dy * w
        dx = rstd[:, None] * (g - xhat * (tl.sum(g * xhat, axis=1) / cols)[:, None])
        tl.store(dx_ptr + row * cols + col, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw += dy * xhat
        first += BLOCK_M
    tl.store(dw_ptr + pid.to(tl.int64) * cols + col, tl.sum(dw, axis=0)[None, :], mask=col < cols)


def forward(x, w):
    rows, cols = x.numel() // x.shape[-1], x.shape[-1]
    block_m, block_n, warps = _layout(cols)
    y = torch.empty_like(x)
    _forward_kernel[(triton.cdiv(rows, block_m),)](x, w, y, rows, cols, EPS, BLOCK_M=block_m, BLOCK_N=block_n,
                                                   FP64=False, num_warps=warps)
    return y


def backward(dy, x, w, block_m, warps, per_sm, old=False):
    rows, cols = x.numel() // x.shape[-1], x.shape[-1]
    block_n = triton.next_power_of_2(cols)
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    programs = min(triton.cdiv(rows, block_m), sms * per_sm)
    rows_per_program = triton.cdiv(rows, programs)
    programs = triton.cdiv(rows, rows_per_program)
    dx = torch.empty_like(x)
    partial = torch.empty((programs, cols), dtype=torch.float32, device=x.device)
    if old:
        _backward_kernel_v0[(programs,)](dy, x, w, dx, partial, rows, cols, EPS, rows_per_program,
                                         BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps)
    else:
        _backward_kernel[(programs,)](dy, x, w, dx, partial, rows, cols, EPS, rows_per_program,
                                      triton.cdiv(rows_per_program, block_m), BLOCK_M=block_m, BLOCK_N=block_n,
                                      FP64=False, num_warps=warps)
    return dx, partial.sum(0).to(w.dtype)


def main() -> int:
    device = torch.device("cuda")
    copy = copy_bandwidth(device)
    torch.manual_seed(0)
    x = torch.randn(SHAPE, device=device, dtype=torch.bfloat16)
    w = torch.rand(SHAPE[-1], device=device, dtype=torch.bfloat16) + 0.5
    dy = torch.randn_like(x)
    x64, w64 = x.double().requires_grad_(), w.double().requires_grad_()
    want_dx, want_dw = torch.autograd.grad(reference.rms_norm(x64, w64, EPS), (x64, w64), dy.double())
    del x64, w64
    scale = want_dw.abs().max()
    floor_us = 5 * x.numel() * 2 / copy / 1e3
    print(f"{torch.cuda.get_device_name()}: copy {copy:.0f} GB/s; fwd+bwd floor {floor_us:.1f} us, "
          f"bwd floor {floor_us * 3 / 5:.1f} us")
    results = []

    def record(name, fwd_bwd, bwd=None):
        us, _ = time_call(fwd_bwd, [(x, w, dy)], device, graph=False)
        bus = time_call(bwd, [(x, w, dy)], device, graph=False)[0] if bwd else float("nan")
        results.append((name, us, bus))
        print(f"{name:<34}{us:>9.1f}{bus:>9.1f}{100 * floor_us / us:>7.1f}", flush=True)

    print(f"{'variant':<34}{'fwd+bwd':>9}{'bwd':>9}{'%floor':>7}")
    variants = [("old", 1, 8, 4, True)]
    variants += [(f"prefetch m{m} w{wp} p{p}", m, wp, p, False)
                 for m, wp, p in [(1, 8, 4), (1, 8, 2), (1, 4, 8), (1, 16, 1), (1, 16, 2), (2, 8, 2),
                                  (2, 16, 1)]]
    for name, m, wp, p, old in variants:
        try:
            got_dx, got_dw = backward(dy, x, w, m, wp, p, old)
            check_against(want_dx, got_dx, f"dx {name}")
            check_against(want_dw / scale, got_dw / scale, f"dw {name}")
            again = backward(dy, x, w, m, wp, p, old)
            assert torch.equal(again[0], got_dx) and torch.equal(again[1], got_dw), f"{name}: not deterministic"
        except Exception as error:  # a layout that does not compile or fit: reported, not fatal
            print(f"{name}: {type(error).__name__}: {str(error)[:200]}")
            continue
        def fwd_bwd(s, m=m, wp=wp, p=p, old=old):
            y = forward(s[0], s[1])  # the forward's output feeds nothing: its time is what counts here
            return y, backward(s[2], s[0], s[1], m, wp, p, old)

        record(name, fwd_bwd, lambda s, m=m, wp=wp, p=p, old=old: backward(s[2], s[0], s[1], m, wp, p, old))
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    compiled = providers.compiled(providers.rms_norm_eager)
    for name, fn in (("compile (composite)", compiled), ("my_ops.triton_rms_norm", my_ops.triton_rms_norm),
                     ("my_ops.rms_norm (CUDA C)", my_ops.rms_norm)):
        record(name, lambda s, fn=fn: torch.autograd.grad(fn(xg, wg, EPS), (xg, wg), s[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
