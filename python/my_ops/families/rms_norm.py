"""The rms_norm family (src/binding/rms_norm.cpp): rms_norm, its fused
backward rms_norm_backward, and fused_add_rms_norm, which updates its
arguments in place (and its functional form, which exported programs call
instead); their float64 references and the RMSNorm module. The same
op as Triton kernels (my_ops.triton_rms_norm) is my_ops/rms_norm_triton.py,
imported on first use; it takes eps and the double backward from here.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

import my_ops  # the package, for my_ops.triton_rms_norm (set after this module is loaded)

from .. import _rules
from .._arguments import float_argument as _float
from .._formulas import _accumulator, _vjp_formula
from .._mutating import _mutating_op, op_for_api
from .._runtime import _autograd, _lib, _ops
from .._vmap import register_batching

__all__ = ["rms_norm", "fused_add_rms_norm", "RMSNorm"]


def _eps(name: str, x: Tensor, eps):
    """eps as a float: None is the machine epsilon of the dtype the statistics
    are computed in (float32; float64 for float64), as
    torch.nn.functional.rms_norm takes it (what _eps_value reads; the Triton
    op takes a float); a bool refused, naming the op (_arguments.py)."""
    if eps is None:
        return _eps_value(x, None) if isinstance(x, Tensor) else eps  # (a bad x: the call names it)
    return _float(name, "eps", eps, " (or None for the machine epsilon)")


def _checked_eps(name: str, eps):
    """eps as the C ops' schema takes it (rms_norm's and the fp8 family's
    `float? eps`: the kernels read None as _eps_value does); a bool, which the
    dispatcher would convert, refused, naming the op (_arguments.py)."""
    return None if eps is None else _float(name, "eps", eps, " (or None for the machine epsilon)")


def _eps_value(x: Tensor, eps):
    """eps=None as the kernels read it (src/binding/launch.h, eps_value)."""
    return torch.finfo(_accumulator(x.dtype)).eps if eps is None else eps


# ------------------------------------------------------------------- rms_norm
def rms_norm(x: Tensor, weight: Tensor, eps: float | None = 1e-6) -> Tensor:
    """RMSNorm over the last dimension: ``x / sqrt(mean(x**2, -1) + eps) * weight``.

    x is [..., hidden], weight is [hidden]. Statistics are computed in float32
    (float64 for float64 inputs). eps=None is the machine epsilon of that
    dtype, as in torch.nn.functional.rms_norm. Differentiable in x and weight.

    weight has x's dtype or a wider float dtype: a float32 (or float64)
    weight beside float16/bfloat16 x, as mixed-precision training keeps its
    parameters (e.g. under torch.autocast), or a float64 weight beside float32
    x. It is used unrounded in the float32 arithmetic. The output always has
    x's dtype (no type promotion to the weight's), and the weight's gradient
    the weight's dtype.
    """
    if type(eps) is not float:  # (tested here, not in _checked_eps: a call less on the common road)
        eps = _checked_eps("rms_norm", eps)
    return _ops.rms_norm.default(x, weight, eps)


@torch.library.register_fake("my_ops::rms_norm")
def _(x: Tensor, weight: Tensor, eps: float | None = 1e-6) -> Tensor:
    _rules.check("rms_norm", x, weight, eps)
    return x.new_empty(x.shape)


@torch.library.register_fake("my_ops::rms_norm_backward")
def _(grad_out: Tensor, x: Tensor, weight: Tensor, eps: float | None = None) -> tuple[Tensor, Tensor]:
    _rules.check("rms_norm_backward", grad_out, x, weight, eps)
    return x.new_empty(x.shape), weight.new_empty(weight.shape)


def _rms_norm_backward_math(grad_out: Tensor, x: Tensor, weight: Tensor, eps: float | None):
    """rms_norm_backward in differentiable torch ops (float32 math, float64 for float64)."""
    acc = _accumulator(x.dtype)
    eps = _eps_value(x, eps)
    xf, gf, wf = x.to(acc), grad_out.to(acc), weight.to(acc)
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    xhat = xf * rstd
    g_xhat = gf * wf
    grad_x = rstd * (g_xhat - xhat * (g_xhat * xhat).mean(-1, keepdim=True))
    grad_weight = (gf * xhat).sum_to_size(x.shape[-1:])  # (not reshape(-1, hidden): no hidden size 0 there)
    return grad_x.to(x.dtype), grad_weight.to(weight.dtype)


_autograd("rms_norm_backward", *_vjp_formula(_rms_norm_backward_math, tensor_args=3))
# (the weight gradient sums over rows: once per sample)
register_batching(_lib, "rms_norm_backward")


def _rms_norm_setup(ctx, inputs, output) -> None:
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _rms_norm_backward(ctx, grad: Tensor):
    x, weight = ctx.saved_tensors
    grad_x, grad_weight = _ops.rms_norm_backward.default(grad, x, weight, ctx.eps)
    return (
        grad_x if ctx.needs_input_grad[0] else None,
        grad_weight if ctx.needs_input_grad[1] else None,
        None,
    )


_autograd("rms_norm", _rms_norm_backward, setup_context=_rms_norm_setup)
register_batching(_lib, "rms_norm", rows=(0,))


def rms_norm_ref(x: Tensor, weight: Tensor, eps: float | None) -> Tensor:
    eps = _eps_value(x, eps)
    x64 = x.double()
    return x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * weight.double()


# --------------------------------------------------------- fused_add_rms_norm
def fused_add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor, eps: float | None = 1e-6) -> None:
    """In place: ``residual += x`` then ``x = rms_norm(residual, weight, eps)``.

    The residual-stream update of a pre-norm transformer block in one pass.
    x and residual must have the same shape and must not share memory; both
    keep their dtype. weight may be wider than them, as in ``rms_norm``. A
    mutating op: no tensor argument may require grad while grad mode is on.
    """
    if type(eps) is not float:
        eps = _checked_eps("fused_add_rms_norm", eps)
    _fused_add_rms_norm(x, residual, weight, eps)


@torch.library.register_fake("my_ops::fused_add_rms_norm")
def _(x: Tensor, residual: Tensor, weight: Tensor, eps: float | None = 1e-6) -> None:
    _rules.check("fused_add_rms_norm", x, residual, weight, eps)


_mutating_op("fused_add_rms_norm")
_fused_add_rms_norm = op_for_api("fused_add_rms_norm")
register_batching(_lib, "fused_add_rms_norm", rows=(0, 1))


@torch.library.register_fake("my_ops::fused_add_rms_norm_functional")
def _(x: Tensor, residual: Tensor, weight: Tensor, eps: float | None = 1e-6) -> tuple[Tensor, Tensor]:
    _rules.check("fused_add_rms_norm_functional", x, residual, weight, eps)
    return x.new_empty(x.shape), residual.new_empty(residual.shape)


_mutating_op("fused_add_rms_norm_functional")  # (an inference op: its requires-grad refusal)
register_batching(_lib, "fused_add_rms_norm_functional", rows=(0, 1))


def fused_add_rms_norm_ref(x: Tensor, residual: Tensor, weight: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """(new x, new residual): the residual stream holds x's dtype, so the sum is rounded to it first."""
    new_residual = (x + residual).double()
    return rms_norm_ref(new_residual, weight, eps), new_residual


# -------------------------------------------------------------------- RMSNorm
class RMSNorm(nn.Module):
    """RMSNorm over the last dimension with a learned scale, backed by ``my_ops.rms_norm``
    (impl="cuda", the default: the C and CUDA C kernels) or ``my_ops.triton_rms_norm``
    (impl="triton": the Triton kernels, CUDA tensors only; needs Triton).

    eps=None is the machine epsilon of the dtype the statistics are computed in, as in torch.nn.RMSNorm
    (whose default it is; the default here is 1e-6, the usual LLM value). normalized_shape is the
    last dimension's size (torch.nn.RMSNorm also normalizes over several trailing dimensions);
    elementwise_affine=False has no weight, as there.

    Mixed precision: the weight may stay float32 while the activations are float16 or bfloat16 (e.g.
    under ``torch.autocast``); impl="cuda" then returns x's dtype and gives the weight a float32
    gradient. The output keeps x's dtype whatever the weight's: no type promotion to float32.
    """

    def __init__(self, normalized_shape: int | tuple[int] | list[int], eps: float | None = 1e-6,
                 elementwise_affine: bool = True, *, impl: str = "cuda", device=None, dtype=None) -> None:
        super().__init__()
        if impl not in ("cuda", "triton"):
            raise ValueError(f"my_ops.RMSNorm: expected impl to be 'cuda' or 'triton', but got {impl!r}")
        if impl == "triton" and not my_ops.HAVE_TRITON:
            my_ops.triton_rms_norm(None, None)  # the stand-in: raises its ImportError, naming the fix
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        if len(shape) != 1:
            raise ValueError(f"my_ops.RMSNorm: normalizes over the last dimension only, so normalized_shape must "
                             f"be one size, but got {normalized_shape!r} (torch.nn.RMSNorm normalizes over several)")
        self.normalized_shape = shape
        # (a NumPy scalar as a float: torch.compile would trace it as a tensor, which eps is not)
        self.eps = _checked_eps("RMSNorm", eps)
        if self.eps is not None and not isinstance(self.eps, (float, torch.Tensor)):
            raise ValueError(f"my_ops.RMSNorm: expected eps to be a float (or None for the machine epsilon), "
                             f"but got {type(self.eps).__name__}")
        # (refused here, as the forward would refuse it, not at the first call; float32's range is the
        # forward's to hold, which knows x's dtype)
        refusal = isinstance(self.eps, float) and _rules.eps_refusal(
            "eps", self.eps, float64=True, also=" (or None for the machine epsilon)")
        if refusal:
            raise ValueError("my_ops.RMSNorm: " + refusal)
        self.elementwise_affine = elementwise_affine
        self.impl = impl
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)  # as torch.nn.RMSNorm: nothing in the state_dict

    def forward(self, x: Tensor) -> Tensor:
        weight = self.weight
        if weight is None:  # the kernels take a weight: ones, in x's dtype
            weight = torch.ones(self.normalized_shape, device=x.device, dtype=x.dtype)
        if self.impl == "triton":
            return my_ops.triton_rms_norm(x, weight, self.eps)
        return rms_norm(x, weight, self.eps)

    def extra_repr(self) -> str:
        affine = "" if self.elementwise_affine else ", elementwise_affine=False"
        impl = ", impl='triton'" if self.impl == "triton" else ""
        return f"{self.normalized_shape[0]}, eps={self.eps}{affine}{impl}"


# my_ops.reference.<op>, as families.references() gathers them
REFERENCES = (rms_norm_ref, fused_add_rms_norm_ref)
