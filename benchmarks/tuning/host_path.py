"""Where the host time of one small eager call goes: each piece of the
op's road (its Autograd kernel, my_ops._runtime) timed on its own ([1, 4096] tensors, median of runs of
20000 calls; no synchronisation: host time only).

  python benchmarks/tuning/host_path.py [--device cuda|cpu]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import my_ops
from my_ops import _torch_compat as compat  # the private torch names the runtime uses

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/
from bench_host import interleaved_us, per_call_us as _timed  # noqa: E402


def per_call_us(fn, device: torch.device) -> float:
    return _timed(fn, device, calls=20000, warmup=1000, synchronize=False)


class _Detach(torch.autograd.Function):
    """The floor of a Python autograd.Function: a graph node around nothing,
    in the form the runtime's eager Functions take (forward with ctx)."""

    @staticmethod
    def forward(ctx, x, keyset=None):  # (the ops' Functions take the call's keyset last)
        return x.detach()

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    device = parser.parse_args().device
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    x = torch.randn(1, 4096, device=device, dtype=dtype)
    w = torch.rand(4096, device=device, dtype=dtype) + 0.5
    op = torch.ops.my_ops.rms_norm.default

    pieces = {
        "torch.compiler.is_compiling()": torch.compiler.is_compiling,
        "torch.compiler.is_dynamo_compiling()": torch.compiler.is_dynamo_compiling,
        "torch.is_inference_mode_enabled()": torch.is_inference_mode_enabled,
        "torch.is_grad_enabled()": torch.is_grad_enabled,
        "compat.forward_ad_active((x, w))": lambda: compat.forward_ad_active((x, w)),
        "op(x, w, eps) through its Autograd kernel": lambda: op(x, w, 1e-6),
        "my_ops.rms_norm(x, w, eps)": lambda: my_ops.rms_norm(x, w, 1e-6),
        "F.rms_norm(x, (4096,), w, eps)": lambda: F.rms_norm(x, (4096,), w, 1e-6),
        "torch.empty_like(x)": lambda: torch.empty_like(x),
        "x * x (an ATen op)": lambda: x * x,
        "my_ops.silu_and_mul(x)": lambda: my_ops.silu_and_mul(x),
    }
    print(f"torch {torch.__version__} on {device}; microseconds per call under torch.no_grad()")
    with torch.no_grad():
        for name, fn in pieces.items():
            print(f"{per_call_us(fn, torch.device(device)):8.2f}  {name}")
    print("microseconds per call under torch.inference_mode() (tensors made outside it)")
    with torch.inference_mode():
        for name, fn in {"op(x, w, eps)": lambda: op(x, w, 1e-6),
                         "my_ops.rms_norm(x, w, eps)": lambda: my_ops.rms_norm(x, w, 1e-6),
                         "F.rms_norm(x, (4096,), w, eps)": lambda: F.rms_norm(x, (4096,), w, 1e-6)}.items():
            print(f"{per_call_us(fn, torch.device(device)):8.2f}  {name}")
    # grad mode, x requires grad: the forward call and its graph node (no backward)
    xg = x.clone().requires_grad_()
    detach_record = compat.record(_Detach)  # recorded as the ops' Autograd kernels record
    grad_pieces = {
        "F.rms_norm(x, (4096,), w, eps)": lambda: F.rms_norm(xg, (4096,), w, 1e-6),
        "my_ops.rms_norm(x, w, eps)": lambda: my_ops.rms_norm(xg, w, 1e-6),
        "an autograd.Function that only detaches": lambda: detach_record(xg),
        "op(x, w, eps) through its Autograd kernel": lambda: op(xg, w, 1e-6),
    }
    # in turns (bench_host.interleaved_us), so the ratios hold on a drifting host
    print("microseconds per call with x requiring grad, timed in turns")
    for name, us in interleaved_us(grad_pieces, torch.device(device)).items():
        print(f"{us:8.2f}  {name}")
    if device == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
