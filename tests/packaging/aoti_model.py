"""A small transformer MLP block of my_ops ops, its float64 reference, and its
AOTInductor package: what tests/packaging/test_aoti.py compiles and runs
from C++ and from a fresh Python process.

The block: RMSNorm -> linear -> SiluAndMul -> linear, then fused_add_rms_norm,
which adds the result into the residual stream (an input, updated in place)
and normalizes it in place; with `triton_head`, the Triton RMSNorm over that
(a CUDA package). Its batch and sequence dimensions are dynamic in the package.
AddOutStep, a model whose my_ops op (add_out) writes an input and returns
nothing, is packaged alike (its rows dynamic).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

import my_ops
from my_ops import reference

HIDDEN, INTERMEDIATE = 64, 96
EPS = 1e-6
MAX_BATCH, MAX_SEQ = 64, 512


class MLPBlock(nn.Module):
    def __init__(self, triton_head: bool = False, device: str = "cpu") -> None:
        super().__init__()
        self.norm = my_ops.RMSNorm(HIDDEN, EPS, device=device)
        self.up = nn.Linear(HIDDEN, 2 * INTERMEDIATE, bias=False, device=device)
        self.act = my_ops.SiluAndMul()
        self.down = nn.Linear(INTERMEDIATE, HIDDEN, device=device)
        self.post_norm_weight = nn.Parameter(torch.empty(HIDDEN, device=device))
        self.head = my_ops.RMSNorm(HIDDEN, EPS, impl="triton", device=device) if triton_head else None
        with torch.no_grad():  # weights that are not ones, so a dropped weight shows
            for weight in (self.norm.weight, self.post_norm_weight, *([self.head.weight] if triton_head else [])):
                weight.uniform_(0.5, 1.5)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        h = self.down(self.act(self.up(self.norm(x))))
        my_ops.fused_add_rms_norm(h, residual, self.post_norm_weight, EPS)  # residual += h; h = rms_norm(residual)
        return self.head(h) if self.head is not None else h


def reference_forward(block: MLPBlock, x: torch.Tensor, residual: torch.Tensor):
    """(output, residual after the call) in float64 from the float64 references."""
    w = {name: p.detach().double() for name, p in block.named_parameters()}
    h = reference.rms_norm(x.double(), w["norm.weight"], EPS)
    h = reference.silu_and_mul(h @ w["up.weight"].T)
    h = h @ w["down.weight"].T + w["down.bias"]
    out, new_residual = reference.fused_add_rms_norm(h, residual.double(), w["post_norm_weight"], EPS)
    if block.head is not None:
        out = reference.rms_norm(out, w["head.weight"], EPS)
    return out, new_residual


def example_inputs(batch: int, seq: int, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.randn(batch, seq, HIDDEN, device=device), torch.randn(batch, seq, HIDDEN, device=device))


def compile_package(block: MLPBlock, path: Path, inductor_configs: dict | None = None) -> Path:
    """block exported with a dynamic batch and sequence length, compiled into an AOTInductor package at path.

    Under torch.no_grad(), as PyTorch's AOTInductor guide does: compiling runs
    the ops on fake tensors, and fused_add_rms_norm refuses a weight that
    requires grad where grad mode is on (it writes in place and has no
    autograd formula)."""
    device = next(block.parameters()).device.type
    batch = torch.export.Dim("batch", min=1, max=MAX_BATCH)
    seq = torch.export.Dim("seq", min=1, max=MAX_SEQ)
    dims = {0: batch, 1: seq}
    with torch.no_grad():
        # sizes 2 and 3 for the example: torch.export specializes sizes 0 and 1
        program = torch.export.export(block, example_inputs(2, 3, device), dynamic_shapes=(dims, dims))
        configs = dict(inductor_configs or {})  # (a caller's own metadata kept beside my_ops')
        configs["aot_inductor.metadata"] = {**configs.get("aot_inductor.metadata", {}), **package_metadata()}
        return Path(torch._inductor.aoti_compile_and_package(program, package_path=str(path),
                                                             inductor_configs=configs))


def package_metadata() -> dict[str, str]:
    """What a package of my_ops ops records (docs/deploying.md): the my_ops version
    that compiled it, which the serving program checks against its kernel library's,
    and the torch that compiled it (my_ops.check_package refuses another torch minor)."""
    return {"my_ops_version": my_ops.__version__, "torch_version": torch.__version__}


class AddOutStep(nn.Module):
    """add_out into an input (out), read afterwards: its result and the out it wrote."""

    def forward(self, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        my_ops.add_out(a, b, out)
        return out * 2


def add_out_inputs(rows: int, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(a, b, out): out of NaNs, so a call that leaves it unwritten shows."""
    return (torch.randn(rows, HIDDEN, device=device), torch.randn(rows, HIDDEN, device=device),
            torch.full((rows, HIDDEN), float("nan"), device=device))


def compile_add_out_package(path: Path, device: str = "cpu") -> Path:
    """AddOutStep with a dynamic row count shared by a, b and out, compiled as compile_package does."""
    rows = torch.export.Dim("rows", min=1, max=MAX_BATCH)
    with torch.no_grad():
        program = torch.export.export(AddOutStep(), add_out_inputs(4, device), dynamic_shapes=({0: rows},) * 3)
        return Path(torch._inductor.aoti_compile_and_package(program, package_path=str(path), inductor_configs={
            "aot_inductor.metadata": package_metadata(), "aot_inductor.compile_wrapper_opt_level": "O0"}))
