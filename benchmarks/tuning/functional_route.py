"""What the export route of the ops that write their arguments costs
(docs/deploying.md, "When an op refuses inside a package"): the in-place op
against its functional form, alone and with the copies back into the
arguments that an exported program adds (eagerly here: a package fuses the
copies into one kernel of its own). fused_add_rms_norm and add_out; and, for
the fused add, the functional form as it was before its kernels wrote the new
tensors directly: clones of x and residual, updated in place by the op.

CUDA: CUDA events around 20 calls, after 10 warm-up calls, median of 25.
CPU: wall time of one call, after 3 warm-up calls, median of 30.

  python benchmarks/tuning/functional_route.py [cuda|cpu] [rows] [hidden] [dtype]
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

import my_ops

OPS = torch.ops.my_ops


def median_ms(fn, device: str) -> float:
    if device == "cuda":
        for _ in range(10):
            fn()
        times = []
        for _ in range(25):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(20):
                fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 20)
        return statistics.median(times)
    for _ in range(3):
        fn()
    times = []
    for _ in range(30):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
    hidden = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
    dtype = getattr(torch, sys.argv[4]) if len(sys.argv) > 4 else torch.bfloat16
    x, residual = (torch.randn(rows, hidden, device=device, dtype=dtype) for _ in range(2))
    weight = torch.rand(hidden, device=device, dtype=dtype) + 0.5
    b, out = torch.randn_like(x), torch.empty_like(x)
    moved = 2 * x.numel() * x.element_size()  # bytes of one tensor read and one written

    def fused_before():  # the functional form's kernels until now: copies of x and residual, updated in place
        new_x, new_residual = x.clone(), residual.clone()
        OPS.fused_add_rms_norm(new_x, new_residual, weight, 1e-6)
        return new_x, new_residual

    def fused_before_copied_back():
        new_x, new_residual = fused_before()
        x.copy_(new_x)
        residual.copy_(new_residual)

    def fused_functional_copied_back():
        new_x, new_residual = OPS.fused_add_rms_norm_functional(x, residual, weight, 1e-6)
        x.copy_(new_x)
        residual.copy_(new_residual)

    def add_functional_copied_back():
        out.copy_(OPS.add_out_functional(x, b, out))

    cases = [
        ("fused_add_rms_norm in place", lambda: OPS.fused_add_rms_norm(x, residual, weight, 1e-6), 2),
        ("fused_add_rms_norm_functional", lambda: OPS.fused_add_rms_norm_functional(x, residual, weight, 1e-6), 2),
        ("functional + copies back (route)", fused_functional_copied_back, 2),
        ("before: clones + in-place op", fused_before, 2),
        ("before: + copies back (route)", fused_before_copied_back, 2),
        ("add_out in place", lambda: OPS.add_out(x, b, out), 1.5),
        ("add_out_functional", lambda: OPS.add_out_functional(x, b, out), 1.5),
        ("add_out_functional + copy back", add_functional_copied_back, 1.5),
    ]
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(f"my_ops {my_ops.__version__} ({my_ops.__file__}), torch {torch.__version__}, {name}, "
          f"[{rows}, {hidden}] {str(dtype).removeprefix('torch.')}")
    with torch.no_grad():
        for label, fn, traffic in cases:
            if label.startswith("add_out") and not hasattr(OPS, "add_out_functional"):
                continue  # (a my_ops from before add_out's export route: a baseline of the fused add)
            ms = median_ms(fn, device)
            # (the in-place op's traffic: fused add reads x, residual and writes both; add reads 2, writes 1)
            print(f"{label:34s} {ms:9.3f} ms  {traffic * moved / ms / 1e6:8.0f} GB/s at the in-place op's traffic")


if __name__ == "__main__":
    main()
