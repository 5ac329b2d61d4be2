"""The Triton kernels of my_ops::triton_rms_norm and its backward, and the
launch layout they are tuned for: Triton language only, as src/kernels/ is
C and CUDA C only. rms_norm_triton.py registers, checks, launches and
differentiates them, and is the only module that imports this one.
"""

from __future__ import annotations

import triton
import triton.language as tl

MAX_HIDDEN = 65536  # a row's elements, held in registers by one program


@triton.jit
def _forward_kernel(x_ptr, w_ptr, y_ptr, rows, cols, eps,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, FP64: tl.constexpr):
    """BLOCK_M rows of BLOCK_N columns per program, one pass: y = x * rstd * w."""
    row = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    col = tl.arange(0, BLOCK_N)[None, :]
    mask = (row < rows) & (col < cols)
    acc = tl.float64 if FP64 else tl.float32
    if FP64:  # eps comes as a float64 tensor: Triton takes a Python float as float32
        eps = tl.load(eps)
    x = tl.load(x_ptr + row * cols + col, mask=mask, other=0.0).to(acc)
    w = tl.load(w_ptr + col, mask=col < cols, other=0.0).to(acc)
    rstd = (1.0 / tl.sqrt(tl.sum(x * x, axis=1) / cols + eps)).to(acc)  # (eps may come as float64)
    y = x * rstd[:, None] * w
    tl.store(y_ptr + row * cols + col, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _backward_kernel(dy_ptr, x_ptr, w_ptr, dx_ptr, dw_ptr, rows, cols, eps, rows_per_program, steps,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, FP64: tl.constexpr):
    """grad_x of rows_per_program rows, BLOCK_M at a time (`steps` blocks); this
    program's partial weight gradient (sum over its rows of dy * xhat) into row
    program_id of dw_ptr, a [programs, cols] buffer in the math dtype.

    The next block's x and dy are loaded before this block's reductions, so a
    program always has a load in flight: without that each block waited for
    its own loads (~2 programs per SM, one row each) and the backward ran at
    about half of copy bandwidth."""
    pid = tl.program_id(0)
    col = tl.arange(0, BLOCK_N)[None, :]
    acc = tl.float64 if FP64 else tl.float32
    if FP64:  # eps comes as a float64 tensor: Triton takes a Python float as float32
        eps = tl.load(eps)
    w = tl.load(w_ptr + col, mask=col < cols, other=0.0).to(acc)
    dw = tl.zeros([BLOCK_M, BLOCK_N], dtype=acc)
    start = pid.to(tl.int64) * rows_per_program
    end = tl.minimum(start + rows_per_program, rows)
    row = start + tl.arange(0, BLOCK_M)[:, None]
    mask = (row < end) & (col < cols)
    x_next = tl.load(x_ptr + row * cols + col, mask=mask, other=0.0)
    dy_next = tl.load(dy_ptr + row * cols + col, mask=mask, other=0.0)
    step = 0
    while step < steps:  # not range(): Triton's interpreter fails on a range over a runtime bound (numpy 2.4)
        x = x_next.to(acc)
        dy = dy_next.to(acc)
        this_row, this_mask = row, mask
        row += BLOCK_M
        mask = (row < end) & (col < cols)
        x_next = tl.load(x_ptr + row * cols + col, mask=mask, other=0.0)
        dy_next = tl.load(dy_ptr + row * cols + col, mask=mask, other=0.0)
        # eps in the math dtype: torch.compile passes Python floats as float64 scalars
        rstd = (1.0 / tl.sqrt(tl.sum(x * x, axis=1) / cols + eps)).to(acc)
        xhat = x * rstd[:, None]
        g = dy * w
        dx = rstd[:, None] * (g - xhat * (tl.sum(g * xhat, axis=1) / cols)[:, None])
        tl.store(dx_ptr + this_row * cols + col, dx.to(dx_ptr.dtype.element_ty), mask=this_mask)
        dw += dy * xhat
        step += 1
    tl.store(dw_ptr + pid.to(tl.int64) * cols + col, tl.sum(dw, axis=0)[None, :], mask=col < cols)


def _layout(cols: int) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, num_warps): a whole row per program, several
    narrow rows per program (about 2048 elements), warps as Liger picks them."""
    block_n = triton.next_power_of_2(cols)
    block_m = max(1, min(64, 2048 // block_n))
    size = block_m * block_n
    warps = 32 if size >= 32768 else 16 if size >= 8192 else 8 if size >= 2048 else 4
    return block_m, block_n, warps
