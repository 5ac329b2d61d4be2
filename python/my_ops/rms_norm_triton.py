"""RMSNorm as Triton kernels: my_ops::triton_rms_norm and its backward (the
kernels themselves are in _rms_norm_triton_kernels.py).

The third way of the same op (beside the float64 torch reference and the
CUDA C op my_ops.rms_norm), registered with torch.library.triton_op so
torch.compile sees the kernels themselves. Math in float32 (float64, eps
included, for float64 inputs), output in x's dtype, the weight gradient in
weight's dtype, summed per program then reduced once: no atomics, the same
bits on every run. CUDA only (CPU tensors only under TRITON_INTERPRET=1,
Triton's interpreter); rows of up to 65536 elements; a non-contiguous x is
copied first. my_ops imports this module on the first use of
my_ops.triton_rms_norm: import it before torch.export.load of a program that
calls the ops. Forward-mode AD is refused (in the op body: a triton_op's
Autograd kernel cannot be replaced, and torch's would drop the tangent).

Two roads to the same kernels: torch.compile, torch.export, torch.func and
torch.ops calls go through the op; an eager call of my_ops.triton_rms_norm
on plain CUDA tensors launches them from one autograd.Function (_Eager),
because the op's Python layers cost more host time than the kernels take
("the eager road" below).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os

import torch
from torch import Tensor
from torch.library import triton_op, wrap_triton

from . import _formulas, _rules, _runtime, _torch_compat
from ._rms_norm_triton_kernels import MAX_HIDDEN, _backward_kernel, _forward_kernel, _layout
from ._vmap import register_batching
from .families.rms_norm import _eps, _rms_norm_backward_math, _rms_norm_setup

__all__ = ["triton_rms_norm"]

_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
# Triton's interpreter (TRITON_INTERPRET=1, read when the kernels are defined)
# runs them on CPU tensors, called directly: wrap_triton takes compiled kernels only.
_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


@functools.cache
def _programs_per_sm(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _cdiv(a: int, b: int) -> int:
    # not triton.cdiv: its constexpr unwrapping is host time on every call
    return -(-a // b)


def _refuse_dual(op, *tensors: Tensor) -> None:
    """Forward-mode AD has no formula here: a dual tensor reaching the op (also
    through torch.ops, where torch's custom-op autograd would drop its
    tangent) is refused. The tangent is still visible below autograd."""
    if not torch.compiler.is_compiling() and _torch_compat.forward_ad_active(tensors):
        raise _runtime._forward_ad_error(op)


def _eps_argument(eps: float, x: Tensor):
    """eps as the kernels take it: a Python float (Triton passes it as float32), or
    for float64 math a one-element float64 tensor, so it keeps every bit."""
    return torch.full((1,), eps, dtype=torch.float64, device=x.device) if x.dtype == torch.float64 else eps


def _on_device(x: Tensor):
    """Launch on x's GPU: Triton launches on the current device and its stream,
    so a tensor on another GPU switches devices for the launch. (Asked this
    way, not with torch.cuda.is_available() and a device guard on every call:
    host time. CUDA is initialized wherever a real CUDA tensor exists; a fake
    one, traced on a machine without a GPU, launches nothing.)"""
    if x.is_cuda and torch.cuda.is_initialized() and x.get_device() != torch.cuda.current_device():
        return torch.cuda.device(x.device)
    return contextlib.nullcontext()


@functools.cache
def _cached_layout(cols: int) -> tuple[int, int, int]:
    return _layout(cols)


def _layout_of(cols) -> tuple[int, int, int]:
    """_layout, computed once per width (a symbolic width, while tracing, each time)."""
    return _cached_layout(cols) if type(cols) is int else _layout(cols)


def _check(op: str, x: Tensor, weight: Tensor, eps: float, grad_out: Tensor | None = None) -> None:
    def fail(message: str):
        raise RuntimeError(f"my_ops.{op}: {message}")

    for name, t in (("x", x), ("weight", weight)) + ((("grad_out", grad_out),) if grad_out is not None else ()):
        if t.layout != torch.strided or t.is_nested:
            fail(f"expected {name} to be a dense (strided) tensor, but got "
                 f"{'a nested tensor' if t.is_nested else f'layout {t.layout}'}")
        if t.dtype not in _DTYPES:
            fail(f"expected {name} to be a float32, float16, bfloat16 or float64 tensor, but got {t.dtype}")
        if t.device.type not in ("cuda", "meta") and not (_INTERPRET and t.device.type == "cpu"):
            fail(f"expected {name} to be a CUDA tensor (Triton kernels run on the GPU), but got a tensor "
                 f"on {t.device}; on the CPU use my_ops.rms_norm")
        if t.device != x.device:
            fail(f"expected {name} to be on the same device as x ({x.device}), but got {t.device}")
    # the weight as my_ops.rms_norm takes it: x's dtype or wider (a float32 weight beside bf16 x)
    if weight.dtype != x.dtype:
        _rules.check_dtype(op, "weight", weight, "x", x, or_wider=True)
    if x.dim() < 1:
        fail("expected x to have at least 1 dimension, but got a 0-D tensor")
    if weight.dim() != 1 or weight.shape[0] != x.shape[-1]:
        fail(f"expected weight to have shape [{x.shape[-1]}] (the last dimension of x), "
             f"but got {list(weight.shape)}")
    if x.shape[-1] > MAX_HIDDEN:
        fail(f"rows of {x.shape[-1]} elements are longer than the Triton kernels hold ({MAX_HIDDEN}); "
             "use my_ops.rms_norm")
    refusal = _rules.eps_refusal("eps", eps, float64=x.dtype == torch.float64)
    if refusal:
        fail(refusal)
    if grad_out is not None:
        if grad_out.shape != x.shape:
            fail(f"expected grad_out to have the same shape as x {list(x.shape)}, but got {list(grad_out.shape)}")
        if grad_out.dtype != x.dtype:
            fail(f"expected grad_out to have the same dtype as x ({x.dtype}), but got {grad_out.dtype}")


def _traceable(kernel):
    """The kernel as the op bodies launch it: through wrap_triton, so that
    torch.compile and torch.export trace the launch (eagerly wrap_triton hands
    back the kernel itself); Triton's interpreter takes the kernel as it is."""
    return kernel if _INTERPRET else wrap_triton(kernel)


def _as_is(kernel):
    """The kernel as the eager road launches it: plain Triton, nothing traced."""
    return kernel


def _launch_forward(x: Tensor, weight: Tensor, eps: float, wrap=_traceable) -> Tensor:
    """The forward once its arguments are checked: output allocated, kernel launched."""
    x = x.contiguous()
    y = torch.empty_like(x)
    cols = x.shape[-1]
    rows = x.numel() // cols if cols else 0
    if rows and cols and x.device.type != "meta":  # meta: shapes only
        block_m, block_n, warps = _layout_of(cols)
        with _on_device(x):
            wrap(_forward_kernel)[(_cdiv(rows, block_m),)](
                x, weight.contiguous(), y, rows, cols, _eps_argument(eps, x), BLOCK_M=block_m, BLOCK_N=block_n,
                FP64=x.dtype == torch.float64, num_warps=warps)
    return y


def _launch_backward(grad_out: Tensor, x: Tensor, weight: Tensor, eps: float, wrap=_traceable,
                     weight_grad: bool = True) -> tuple[Tensor, Tensor | None]:
    """The backward once its arguments are checked: grad_x, and grad_weight
    (None where weight_grad is False: the per-program partials are not summed)."""
    x, grad_out = x.contiguous(), grad_out.contiguous()
    grad_x = torch.empty_like(x)
    cols = x.shape[-1]
    rows = x.numel() // cols if cols else 0
    if not (rows and cols) or x.device.type == "meta":
        return grad_x.zero_(), torch.zeros_like(weight) if weight_grad else None
    block_m, block_n, warps = _layout_of(cols)
    sms = _programs_per_sm(x.device.index or 0) if x.device.type == "cuda" else 4
    programs, rows_per_program = _backward_grid(rows, block_m, warps, sms)
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    partial = torch.empty((programs, cols), dtype=acc, device=x.device)
    with _on_device(x):
        wrap(_backward_kernel)[(programs,)](
            grad_out, x, weight.contiguous(), grad_x, partial, rows, cols, _eps_argument(eps, x), rows_per_program,
            _cdiv(rows_per_program, block_m),
            BLOCK_M=block_m, BLOCK_N=block_n, FP64=x.dtype == torch.float64, num_warps=warps)
    return grad_x, partial.sum(0).to(weight.dtype) if weight_grad else None


@triton_op("my_ops::triton_rms_norm", mutates_args=())
def _forward(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    # Also the fake kernel: triton_op runs this body under FakeTensorMode
    # (the launch is then traced, not run), so the checks hold there too.
    _check("triton_rms_norm", x, weight, eps)
    _refuse_dual(torch.ops.my_ops.triton_rms_norm.default, x, weight)
    return _launch_forward(x, weight, eps)


@triton_op("my_ops::triton_rms_norm_backward", mutates_args=())
def _backward(grad_out: Tensor, x: Tensor, weight: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    _check("triton_rms_norm_backward", x, weight, eps, grad_out)
    _refuse_dual(torch.ops.my_ops.triton_rms_norm_backward.default, grad_out, x, weight)
    return _launch_backward(grad_out, x, weight, eps)


def _backward_grid(rows: int, block_m: int, warps: int, sms: int) -> tuple[int, int]:
    """(programs, rows_per_program) of the backward: a few programs per
    multiprocessor (one resident wave), each a contiguous slice of rows. The
    slices depend on the row count and the device alone, so the weight
    gradient's order of summation is the same on every run. A symbolic row
    count (torch.compile's dynamic shapes) gets a whole wave of programs,
    the last ones empty where rows are few: the nested divisions below take
    sympy minutes to simplify on a symbolic count."""
    per_sm = max(1, 32 // warps)
    if isinstance(rows, torch.SymInt):
        return sms * per_sm, _cdiv(rows, sms * per_sm)
    programs = min(_cdiv(rows, block_m), sms * per_sm)
    rows_per_program = _cdiv(rows, programs)
    return _cdiv(rows, rows_per_program), rows_per_program


def _autograd_backward(ctx, grad: Tensor):
    x, weight = ctx.saved_tensors
    grad_x, grad_weight = _apply(_BACKWARD, torch.ops.my_ops.triton_rms_norm_backward.default, grad, x, weight,
                                 ctx.eps)
    return (grad_x if ctx.needs_input_grad[0] else None,
            grad_weight if ctx.needs_input_grad[1] else None, None)


# Second and higher orders: the vjp of the same backward in torch ops, as my_ops.rms_norm's.
_double_backward, _setup_double = _formulas._vjp_formula(_rms_norm_backward_math, tensor_args=3)
torch.library.register_autograd("my_ops::triton_rms_norm", _autograd_backward, setup_context=_rms_norm_setup)
torch.library.register_autograd("my_ops::triton_rms_norm_backward", _double_backward, setup_context=_setup_double)
# (nested tensors, which reach this key, refused by name as the C ops refuse them, not by torch's bare error)
_runtime._lib.impl("triton_rms_norm", lambda x, weight, eps: _check("triton_rms_norm", x, weight, eps),
                   "CompositeImplicitAutogradNestedTensor")
_runtime._lib.impl("triton_rms_norm_backward", lambda grad_out, x, weight, eps: _check(
    "triton_rms_norm_backward", x, weight, eps, grad_out), "CompositeImplicitAutogradNestedTensor")
register_batching(_runtime._lib, "triton_rms_norm", rows=(0,))
register_batching(_runtime._lib, "triton_rms_norm_backward")  # (the weight gradient sums over rows)


def _function(op, setup, formula) -> type[torch.autograd.Function]:
    """The op's formulas as an autograd.Function with setup_context and a vmap
    rule: what torch.func's transforms need (register_autograd's own lacks them)."""

    class Function(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(*args):
            return op(*args)  # (grad mode is off in here)


        setup_context = staticmethod(setup)
        backward = staticmethod(formula)

        @staticmethod
        def jvp(ctx, *tangents):  # torch.func's forward mode (jvp, jacfwd, hessian): no formula
            raise _runtime._forward_ad_error(op)

    # Function.apply binds the arguments to forward's signature on every call
    # (it has a setup_context): computed once here, not on every call.
    Function.forward.__signature__ = inspect.signature(Function.forward)
    return Function


_FORWARD = _function(torch.ops.my_ops.triton_rms_norm.default, _rms_norm_setup, _autograd_backward)
_BACKWARD = _function(torch.ops.my_ops.triton_rms_norm_backward.default, _setup_double, _double_backward)


def _apply(function, op, *args):
    """op(*args) on the dispatcher's road, through `function` eagerly: torch.func's
    transforms (grad, vjp, jacrev, hessian) need its setup_context, which the
    Autograd kernel that triton_op registers lacks (pytorch#168393); compiled
    code calls the op. With grad mode off nothing is recorded, so the op is
    called directly (torch.func's transforms run their backward with grad mode on)."""
    if torch.compiler.is_compiling() or not torch.is_grad_enabled():
        return op(*args)
    return function.apply(*args)


# ------------------------------------------------------------------ the eager road
#
# The op above is what torch.compile, torch.export and torch.func see: a
# torch.library custom op whose body inductor can read. Each eager call
# through it pays for layers a plain Python program does not need: the custom
# op's Python dispatch and autograd kernel, triton_op's own layer, and on top
# the autograd.Function that torch.func needs (_FORWARD). On the H100's host
# a forward + backward through that road took more host time than its kernels
# take on the GPU, so a training step's GPU waited on Python (benchmarks/NOTES.md,
# "Triton RMSNorm"; benchmarks/tuning/triton_host.py times each piece).
#
# So an eager call on plain CUDA tensors takes a second road: one
# autograd.Function (_Eager) whose forward and backward launch the same
# kernels directly, with the same checks and the same launch code
# (_launch_forward, _launch_backward). It is still safe under torch.func:
# torch.func runs a Function's forward only once every transform is peeled
# off (plain tensors again), its vmap rule hands the batch to the op's road,
# and a backward that must itself be differentiable (create_graph, torch.func)
# takes the op's road too. What the eager road does not show is the op: a
# TorchDispatchMode (make_fx with real tensors, FlopCounterMode) sees the
# kernels' tensor allocations but not my_ops::triton_rms_norm; call
# torch.ops.my_ops.triton_rms_norm to trace it that way.

# Devices whose plain tensors take the eager road (the kernels run there; meta
# tensors take the op's road, whose body computes shapes only).
_EAGER_DEVICES = ("cuda", "cpu") if _INTERPRET else ("cuda",)
_FORWARD_OP = torch.ops.my_ops.triton_rms_norm.default


class _Eager(torch.autograd.Function):
    """my_ops.triton_rms_norm on plain tensors outside torch.compile: the kernels
    launched from the Function itself, no custom-op layers (see above)."""

    @staticmethod
    def forward(x: Tensor, weight: Tensor, eps: float) -> Tensor:
        return _launch_forward(x, weight, eps, wrap=_as_is)  # (checked by the caller)

    setup_context = staticmethod(_rms_norm_setup)  # (saves x, weight and eps, as the op's autograd does)

    @staticmethod
    def backward(ctx, grad: Tensor):
        if torch.is_grad_enabled() or type(grad) is not Tensor:
            # a backward that is itself recorded (create_graph=True, torch.func's
            # transforms) or an unusual gradient: the op's differentiable road
            return _autograd_backward(ctx, grad)
        x, weight = ctx.saved_tensors  # (read once: a non-reentrant checkpoint refuses a second unpack)
        # (autograd hands a gradient of the output's shape and dtype, on its device)
        grad_x, grad_weight = _launch_backward(grad, x, weight, ctx.eps, wrap=_as_is,
                                               weight_grad=ctx.needs_input_grad[1])
        return (grad_x if ctx.needs_input_grad[0] else None, grad_weight, None)

    @staticmethod
    def jvp(ctx, *tangents):  # no forward-mode formula (torch.func.jvp, jacfwd, hessian)
        raise _runtime._forward_ad_error(_FORWARD_OP)

    @staticmethod
    def vmap(info, in_dims, x, weight, eps):
        """Under torch.func.vmap: the op's road, batched by the op's own rule
        (register_batching: one launch over every sample's rows)."""
        def one_sample(x, weight):
            return _apply(_FORWARD, _FORWARD_OP, x, weight, eps)

        batched = torch.vmap(one_sample, in_dims=tuple(in_dims[:2]), randomness=info.randomness)
        return batched(x, weight), 0


# (as in _function: Function.apply binds the arguments to forward's signature on every call)
_Eager.forward.__signature__ = inspect.signature(_Eager.forward)


# Types the eager road takes as they are: a module's weight is a Parameter (its
# subclasses, like a tensor subclass, take the op). jit.trace takes the op too:
# the trace records ops, and the eager road's kernels are none.
_PLAIN = (Tensor, torch.nn.Parameter)


def triton_rms_norm(x: Tensor, weight: Tensor, eps: float | None = 1e-6) -> Tensor:
    """RMSNorm over the last dimension as Triton kernels: ``x / sqrt(mean(x**2, -1) + eps) * weight``.

    The same op as my_ops.rms_norm, for CUDA tensors: x is [..., hidden]
    (hidden <= 65536), weight is [hidden] (x's dtype or a wider float
    dtype, as in my_ops.rms_norm).
    Statistics in float32 (float64 for float64 inputs); eps=None is that
    dtype's machine epsilon. Differentiable in x and weight (higher orders
    through torch ops); forward-mode AD is refused, as in my_ops.rms_norm.
    """
    if type(eps) is not float:  # (a float is the common case: a call less)
        eps = _eps("triton_rms_norm", x, eps)
    if (type(x) is Tensor and type(weight) in _PLAIN and type(eps) is float and x.device.type in _EAGER_DEVICES
            and not torch.compiler.is_compiling() and not torch.jit.is_tracing()):
        # the eager road (see _Eager): the op body's checks, then the kernels
        _check("triton_rms_norm", x, weight, eps)
        if _torch_compat.forward_ad_active((x, weight)):
            raise _runtime._forward_ad_error(_FORWARD_OP)
        return _Eager.apply(x, weight, eps)
    # compiling, exporting, tensor subclasses (DTensor, fake and functional tensors), meta tensors
    return _apply(_FORWARD, _FORWARD_OP, x, weight, eps)
