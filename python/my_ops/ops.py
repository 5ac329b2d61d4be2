"""The Python API of my_ops: one typed function per op, with its fake kernel
(for torch.compile and meta tensors) and its autograd formula registered
beside it. The kernels themselves are registered from C++ (libmy_ops, loaded
by my_ops._C); the fake kernels check the same argument rules (_rules.py).
"""

from __future__ import annotations

import threading

import torch
from torch import Tensor

from . import _rules
from . import _torch_compat as _compat

__all__ = [
    "short_kernel",
    "mul",
    "muladd",
    "add_out",
    "matmul",
    "rms_norm",
    "fused_add_rms_norm",
    "silu_and_mul",
    "gelu_and_mul",
]

_ops = torch.ops.my_ops
_lib = torch.library.Library("my_ops", "IMPL")

# ------------------------------------------------------- the call itself
# A call through torch.ops passes the op's Autograd kernel, written in Python
# (_autograd below; the stable ABI has no C++ autograd): it costs more host
# time than the op itself (benchmarks/bench_host.py). For plain eager calls the Python API
# takes a shorter road with the same formulas:
#   - autograd has nothing to record (torch.no_grad(), as in generation, or
#     no input requires grad): the call skips the Autograd kernel;
#   - it has: the call goes through a torch.autograd.Function built from the
#     op's own setup_context and backward (_autograd below);
#   - under torch.inference_mode() the dispatcher skips autograd itself.
# Under torch.func transforms (grad, vjp, jacrev, vmap) the call applies that
# Function, which torch.func runs level by level. Anything else takes the op's
# full path: tensor subclasses, dispatch modes (FakeTensorMode), torch.compile.
# Forward-mode AD is refused on every road: the ops have no forward-mode formula.
# The private torch API these roads take comes from _torch_compat, which falls
# back to public behaviour (slower roads) on a torch release without it.
_PLAIN = (torch.Tensor, torch.nn.Parameter)
_BelowAutograd = _compat.below_autograd
_after_autograd = _compat.after_autograd_keyset
_transforms_active = _compat.transforms_active
_any_requires_grad = _compat.any_requires_grad
_dispatch_modes = _compat.dispatch_modes_active
_has_tangent = _compat.has_tangent
# The op's own Autograd kernel needs all three; without them, register_autograd.
_AUTOGRAD_KERNEL = _BelowAutograd is not None and _after_autograd is not None and _compat.knows_transforms
# Without it, the mutating ops' checks run in their Python API, not in a kernel.
_after_inplace = _compat.after_ad_inplace_or_view_keyset
_below_autograd = _compat.call_below_autograd
_below_autograd_traced = _compat.call_below_autograd_traced
_grad_enabled = torch.is_grad_enabled
_is_compiling = torch.compiler.is_compiling
_inference_mode = torch.is_inference_mode_enabled
_FUNCTIONS: dict = {}  # op -> its torch.autograd.Function (_autograd)
_state = threading.local()  # .in_formula: a backward formula is running on this thread
_RECORD: dict = {}  # op -> that Function's apply for plain eager calls
_MUTATE: dict = {}  # mutating op -> how its Python API calls it (_mutating_op)


def _forward_ad_error(op) -> RuntimeError:
    return RuntimeError(f"my_ops.{op.name().split('::')[1].split('.')[0]}: forward-mode AD (dual tensors, "
                        "torch.func.jvp, jacfwd, hessian) is not supported; use reverse mode "
                        "(backward, torch.autograd.grad, torch.func.grad, vjp, jacrev)")


def _refuse_forward_ad(op, tensors) -> None:
    """The ops have no forward-mode formula: a dual tensor's tangent would be dropped."""
    if _has_tangent(tensors):
        raise _forward_ad_error(op)


def _plain_eager(tensors) -> bool:
    """Plain tensors (no subclass) and no dispatch mode."""
    if _dispatch_modes():
        return False
    for t in tensors:
        if type(t) not in _PLAIN:
            return False
    return True


def _call(op, tensors, *args):
    """op(*args), where `tensors` are the tensor arguments among args. Also
    the backward formulas call their ops through here, so that gradients of
    gradients take the same roads."""
    # inference_mode already dispatches past autograd; dynamo folds is_compiling() first
    if _is_compiling() or _inference_mode():
        return op(*args)
    if _has_tangent(tensors):
        raise _forward_ad_error(op)
    if _transforms_active():
        # torch.func (grad, vjp, jacrev, vmap) takes an autograd.Function
        # from here, outside the dispatcher, and runs it level by level
        return _FUNCTIONS[op].apply(*args)
    if _grad_enabled():
        if not _plain_eager(tensors):
            return op(*args)
        for t in tensors:
            if t.requires_grad:
                # In a backward formula, the tensors may be wrappers of a
                # torch.func transform that has ended (vjp_fn called outside
                # it): Function.apply unwraps those; the short record does not,
                # and the gradient would not reach the caller's tensors.
                if getattr(_state, "in_formula", False):
                    return _FUNCTIONS[op].apply(*args)
                return _RECORD[op](*args)
    # Nothing to record. Subclasses and dispatch modes (FakeTensorMode) sit
    # below autograd or are handled before it (__torch_function__), so they
    # take this road too.
    return _below_autograd(op, args)


def _no_context(ctx, inputs, output) -> None:
    pass


def _autograd(name: str, backward, setup_context=_no_context) -> None:
    """The autograd formulas of my_ops::<name> as a torch.autograd.Function,
    and the op's Autograd kernel (for calls through torch.ops), which
    records that Function: what register_autograd would register, plus a
    refusal of what it would answer wrongly."""
    op = getattr(_ops, name).default
    arguments = _compat.schema(op).arguments
    tensor_positions = [i for i, a in enumerate(arguments) if str(a.type) == "Tensor"]
    # The dispatcher drops trailing arguments equal to their defaults; the
    # formulas get them back.
    defaults = tuple(a.default_value if a.has_default_value() else None for a in arguments)

    # setup_context apart from forward and a vmap rule: what torch.func needs
    # (register_autograd's own Function lacks them: pytorch#168393).
    save = setup_context  # (the class body below cannot see a name it assigns)

    class Function(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(*args):
            # grad mode is off in here
            return (_below_autograd_traced if _is_compiling() else _below_autograd)(op, args)

        setup_context = staticmethod(save)

        @staticmethod
        def backward(ctx, *grads):
            outer = getattr(_state, "in_formula", False)
            _state.in_formula = True
            try:
                return backward(ctx, *grads)
            finally:
                _state.in_formula = outer

        @staticmethod
        def jvp(ctx, *tangents):  # torch.func's forward mode (jvp, jacfwd) comes here
            raise _forward_ad_error(op)

    Function.__name__ = Function.__qualname__ = f"{name}_function"
    # Function.apply, minus its Python preamble (binding the arguments with
    # inspect.signature, which costs as much as the call, and the hand-over
    # to torch.func): for calls where no torch.func transform is active.
    record = _compat.record_apply(Function)
    _FUNCTIONS[op] = Function
    _RECORD[op] = record
    if not _AUTOGRAD_KERNEL:
        # torch's own Autograd kernel for the same formulas; torch.func over a
        # torch.ops call then fails in torch's check (pytorch#168393), and the
        # Python API still takes the Function above
        torch.library.register_autograd(f"my_ops::{name}", Function.backward,
                                        setup_context=Function.setup_context, lib=_lib)
        return

    def autograd_kernel(keyset, *args):
        tensors = [args[i] for i in tensor_positions if i < len(args)]
        _refuse_forward_ad(op, tensors)
        if torch.is_grad_enabled() and _any_requires_grad(*tensors):
            if _transforms_active():
                # torch.func runs an autograd.Function from outside the
                # dispatcher, level by level; from in here nested transforms
                # would get wrong gradients. The Python API calls it there.
                # (also reached when torch.compile traces a torch.func
                # transform: dynamo cannot trace the Function there)
                raise RuntimeError(
                    f"torch.ops.my_ops.{name}: differentiating through the op under torch.func "
                    f"transforms (grad, vjp, jacrev) needs the Python API: call "
                    f"my_ops.{name.removesuffix('_backward')} instead (eagerly: torch.compile "
                    "cannot trace torch.func transforms over my_ops)")
            return record(*args, *defaults[len(args):])
        with _BelowAutograd():
            return op.redispatch(keyset & _after_autograd, *args)

    _lib.impl(name, autograd_kernel, "Autograd", with_keyset=True)


def _mutating_op(name: str) -> None:
    """Autograd handling of an op that writes its arguments in place and has no
    derivative: a tensor that requires grad would silently lose its history,
    so refuse it (naming the argument); bump the version counter of every
    written tensor, as PyTorch's own in-place ops do, so autograd notices when
    a tensor it saved was overwritten. One kernel at the ADInplaceOrView key,
    which every call on ordinary tensors passes (the stable ABI has no C++
    Autograd kernels, so this lives here); PyTorch's autograd fallback in
    front of it only passes the call on. (Without the private keyset that
    kernel redispatches with, the Python API makes the same checks and bumps.)"""
    op = getattr(_ops, name).default
    arguments = _compat.schema(op).arguments
    written = [i for i, a in enumerate(arguments) if a.alias_info is not None and a.alias_info.is_write]

    def refuse(args) -> None:
        _refuse_forward_ad(op, [a for a in args if isinstance(a, Tensor)])
        if torch.is_grad_enabled():
            for argument, value in zip(arguments, args):
                if isinstance(value, Tensor) and value.requires_grad:
                    raise RuntimeError(
                        f"my_ops.{name}: argument '{argument.name}' requires grad, but my_ops.{name} "
                        "writes its arguments in place and has no autograd formula; call it under "
                        "torch.no_grad() or pass tensors that do not require grad (e.g. "
                        f"{argument.name}.detach())")

    if _after_inplace is not None:
        def inplace_kernel(keyset, *args):
            refuse(args)
            result = op.redispatch(keyset & _after_inplace, *args)
            torch.autograd.graph.increment_version([args[i] for i in written])
            return result

        _lib.impl(name, inplace_kernel, "ADInplaceOrView", with_keyset=True)
        _MUTATE[op] = op
    else:
        def checked_call(*args):
            # where the kernel would run: not under inference_mode (which
            # skips ADInplaceOrView), nor while dynamo traces (it cannot)
            if _is_compiling() or _inference_mode():
                return op(*args)
            refuse(args)
            result = op(*args)
            torch.autograd.graph.increment_version([args[i] for i in written])
            return result

        _MUTATE[op] = checked_call

    def math_bits_kernel(*args):
        # Reached when an argument carries a lazy negation or conjugation
        # (x.conj().imag, x.conj()). PyTorch's fallback for these keys cannot
        # write such a tensor in place (it aborts the process); refuse a
        # written one before anything is written, resolve the others.
        for argument, value in zip(arguments, args):
            if argument.alias_info is not None and argument.alias_info.is_write and isinstance(value, Tensor) \
                    and (value.is_neg() or value.is_conj()):
                bit = "negative" if value.is_neg() else "conjugate"
                raise RuntimeError(
                    f"my_ops.{name}: argument '{argument.name}' has its {bit} bit set (a lazily "
                    f"{'negated' if bit == 'negative' else 'conjugated'} view, e.g. from .conj().imag), "
                    f"and my_ops.{name} cannot write such a view in place; pass a tensor without it "
                    f"({argument.name}.resolve_{'neg' if bit == 'negative' else 'conj'}() makes a copy)")
        return op(*[a.resolve_neg().resolve_conj() if isinstance(a, Tensor) else a for a in args])

    for key in ("Negative", "Conjugate"):
        _lib.impl(name, math_bits_kernel, key)


# Dispatch keys of tensors the kernels do not take: without a kernel there,
# the dispatcher's error names no argument.
_UNSUPPORTED_KEYS = ("SparseCPU", "SparseCUDA", "SparseCsrCPU", "SparseCsrCUDA", "NestedTensorCPU",
                     "NestedTensorCUDA", "QuantizedCPU", "QuantizedCUDA", "MkldnnCPU")
for _name in _rules.RULES:
    for _key in _UNSUPPORTED_KEYS:
        _lib.impl(_name, _rules.reject(_name), _key)


def _differentiable_backward(name: str, math, tensor_args: int) -> None:
    """Autograd for a fused backward op, for second and higher order
    gradients: the gradient of `math` (the same backward, written in
    differentiable torch ops). First-order backward never comes here: it runs
    the fused op alone."""

    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(*inputs[:tensor_args])
        ctx.extra = inputs[tensor_args:]

    def backward(ctx, *grads):
        # Partial derivatives in each saved tensor (torch.func.vjp treats them as
        # independent, which autograd.grad would not: grad_out's own history
        # leads back to x). Its result stays differentiable for the outer
        # autograd, so third and higher orders work too.
        extra = ctx.extra
        outputs, vjp = torch.func.vjp(lambda *tensors: math(*tensors, *extra), *ctx.saved_tensors)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        cotangents = tuple(torch.zeros_like(o) if g is None else g for o, g in zip(outputs, grads))
        result = vjp(cotangents if len(cotangents) > 1 else cotangents[0])
        return (*result, *([None] * len(extra)))

    _autograd(name, backward, setup_context=setup_context)


def _float(name: str, argument: str, value, also: str = ""):
    """A float argument as the op's schema takes it: a real number; anything
    else (a str, a bool) is refused as torch.ops.my_ops refuses it, instead of
    being converted."""
    if isinstance(value, bool) or not isinstance(value, (int, float, torch.SymInt, torch.SymFloat)):
        raise TypeError(f"my_ops.{name}: expected {argument} to be a float{also}, but got "
                        f"{type(value).__name__} {value!r}")
    return value


def _eps(name: str, x: Tensor, eps):
    """eps, or for None the machine epsilon of the dtype the statistics are
    computed in (float32; float64 for float64), as torch.nn.functional.rms_norm."""
    if type(eps) is float:
        return eps
    if eps is None:
        return torch.finfo(_accumulator(x.dtype)).eps
    return _float(name, "eps", eps, " (or None for the machine epsilon)")


def _refuse_inference_writes(name: str, **written: Tensor) -> None:
    """PyTorch refuses in-place updates of inference tensors outside
    torch.inference_mode(); so do the mutating ops. (Inference tensors carry
    no autograd keys, so no kernel of ours sees them but the CPU/CUDA one,
    which the stable ABI gives no way to ask: the Python API checks.)"""
    # dynamo folds is_compiling() first and cannot trace the rest (compiled
    # code does not run under inference_mode with inference tensors anyway)
    if not _is_compiling() and not _inference_mode():
        for argument, tensor in written.items():
            if tensor.is_inference():
                raise RuntimeError(
                    f"my_ops.{name}: argument '{argument}' is an inference tensor, and in-place updates to "
                    "inference tensors outside torch.inference_mode() are not allowed (as in PyTorch); call "
                    f"it inside torch.inference_mode(), or pass a normal tensor ({argument}.clone())")


def _accumulator(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


# --------------------------------------------------------------- short_kernel
def short_kernel(x: Tensor) -> Tensor:
    """Return ``x * 1.23`` as a new contiguous tensor of x's shape and dtype."""
    return _call(_ops.short_kernel.default, (x,), x)


@torch.library.register_fake("my_ops::short_kernel")
def _(x: Tensor) -> Tensor:
    _rules.check("short_kernel", x)
    return x.new_empty(x.shape)


def _short_kernel_backward(ctx, grad: Tensor):
    return short_kernel(grad)


_autograd("short_kernel", _short_kernel_backward)


# ------------------------------------------------------------------------ mul
def mul(a: Tensor, b: Tensor) -> Tensor:
    """Element-wise ``a * b``; a and b must have the same shape, dtype and device."""
    return _call(_ops.mul.default, (a, b), a, b)


@torch.library.register_fake("my_ops::mul")
def _(a: Tensor, b: Tensor) -> Tensor:
    _rules.check("mul", a, b)
    return a.new_empty(a.shape)


def _save_a_b(ctx, inputs, output) -> None:
    a, b = inputs[0], inputs[1]
    ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)


def _mul_backward(ctx, grad: Tensor):
    a, b = ctx.saved_tensors
    grad_a = mul(grad, b) if ctx.needs_input_grad[0] else None
    grad_b = mul(grad, a) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


_autograd("mul", _mul_backward, setup_context=_save_a_b)


# --------------------------------------------------------------------- muladd
def muladd(a: Tensor, b: Tensor, c: float) -> Tensor:
    """Element-wise ``a * b + c``; a and b must have the same shape, dtype and device."""
    return _call(_ops.muladd.default, (a, b), a, b, _float("muladd", "c", c))


@torch.library.register_fake("my_ops::muladd")
def _(a: Tensor, b: Tensor, c: float) -> Tensor:
    _rules.check("muladd", a, b, c)
    return a.new_empty(a.shape)


def _muladd_backward(ctx, grad: Tensor):
    grad_a, grad_b = _mul_backward(ctx, grad)
    return grad_a, grad_b, None


_autograd("muladd", _muladd_backward, setup_context=_save_a_b)


# -------------------------------------------------------------------- add_out
def add_out(a: Tensor, b: Tensor, out: Tensor) -> Tensor:
    """Write ``a + b`` into ``out`` (same shape, dtype and device) and return ``out``.

    ``out`` may be ``a`` or ``b`` itself. A mutating op: no tensor argument may
    require grad while grad mode is on.
    """
    _refuse_inference_writes("add_out", out=out)
    _MUTATE[_ops.add_out.default](a, b, out)
    return out


@torch.library.register_fake("my_ops::add_out")
def _(a: Tensor, b: Tensor, out: Tensor) -> None:
    _rules.check("add_out", a, b, out)


_mutating_op("add_out")


# --------------------------------------------------------------------- matmul
def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product of ``a`` [M, K] and ``b`` [K, N] -> [M, N], accumulated in float32
    (float64 for float64 inputs)."""
    return _call(_ops.matmul.default, (a, b), a, b)


@torch.library.register_fake("my_ops::matmul")
def _(a: Tensor, b: Tensor) -> Tensor:
    _rules.check("matmul", a, b)
    return a.new_empty((a.shape[0], b.shape[1]))


def _matmul_backward(ctx, grad: Tensor):
    a, b = ctx.saved_tensors
    grad_a = matmul(grad, b.mT) if ctx.needs_input_grad[0] else None
    grad_b = matmul(a.mT, grad) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


_autograd("matmul", _matmul_backward, setup_context=_save_a_b)


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
    return _call(_ops.rms_norm.default, (x, weight), x, weight, _eps("rms_norm", x, eps))


@torch.library.register_fake("my_ops::rms_norm")
def _(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    _rules.check("rms_norm", x, weight, eps)
    return x.new_empty(x.shape)


@torch.library.register_fake("my_ops::rms_norm_backward")
def _(grad_out: Tensor, x: Tensor, weight: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    _rules.check("rms_norm_backward", grad_out, x, weight, eps)
    return x.new_empty(x.shape), weight.new_empty(weight.shape)


def _rms_norm_backward_math(grad_out: Tensor, x: Tensor, weight: Tensor, eps: float):
    """rms_norm_backward in differentiable torch ops (float32 math, float64 for float64)."""
    acc = _accumulator(x.dtype)
    xf, gf, wf = x.to(acc), grad_out.to(acc), weight.to(acc)
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    xhat = xf * rstd
    g_xhat = gf * wf
    grad_x = rstd * (g_xhat - xhat * (g_xhat * xhat).mean(-1, keepdim=True))
    grad_weight = (gf * xhat).reshape(-1, x.shape[-1]).sum(0)
    return grad_x.to(x.dtype), grad_weight.to(weight.dtype)


_differentiable_backward("rms_norm_backward", _rms_norm_backward_math, tensor_args=3)


def _rms_norm_setup(ctx, inputs, output) -> None:
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _rms_norm_backward(ctx, grad: Tensor):
    x, weight = ctx.saved_tensors
    grad_x, grad_weight = _call(_ops.rms_norm_backward.default, (grad, x, weight), grad, x, weight, ctx.eps)
    return (
        grad_x if ctx.needs_input_grad[0] else None,
        grad_weight if ctx.needs_input_grad[1] else None,
        None,
    )


_autograd("rms_norm", _rms_norm_backward, setup_context=_rms_norm_setup)


# --------------------------------------------------------- fused_add_rms_norm
def fused_add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor, eps: float | None = 1e-6) -> None:
    """In place: ``residual += x`` then ``x = rms_norm(residual, weight, eps)``.

    The residual-stream update of a pre-norm transformer block in one pass.
    x and residual must have the same shape and must not share memory; both
    keep their dtype. weight may be wider than them, as in ``rms_norm``. A
    mutating op: no tensor argument may require grad while grad mode is on.
    """
    _refuse_inference_writes("fused_add_rms_norm", x=x, residual=residual)
    _MUTATE[_ops.fused_add_rms_norm.default](x, residual, weight, _eps("fused_add_rms_norm", x, eps))


@torch.library.register_fake("my_ops::fused_add_rms_norm")
def _(x: Tensor, residual: Tensor, weight: Tensor, eps: float) -> None:
    _rules.check("fused_add_rms_norm", x, residual, weight, eps)


_mutating_op("fused_add_rms_norm")


# ------------------------------------------------ silu_and_mul, gelu_and_mul
# Gated units: out = act(x[..., :d]) * x[..., d:]. One kernel family in C and
# CUDA, parametrised by the activation; here one registration helper, fed
# with each activation's derivative in torch ops (for double backward).
def silu_and_mul(x: Tensor) -> Tensor:
    """SwiGLU gate: for x [..., 2 * d], return ``silu(x[..., :d]) * x[..., d:]`` [..., d]."""
    return _call(_ops.silu_and_mul.default, (x,), x)


def gelu_and_mul(x: Tensor, approximate: str = "none") -> Tensor:
    """GeGLU gate: for x [..., 2 * d], return ``gelu(x[..., :d]) * x[..., d:]`` [..., d].

    ``approximate`` is ``"none"`` (erf) or ``"tanh"``, as in ``torch.nn.functional.gelu``.
    """
    return _call(_ops.gelu_and_mul.default, (x,), x, approximate)


def _silu_grad(gate: Tensor) -> Tensor:
    s = torch.sigmoid(gate)
    return s * (1 + gate * (1 - s))


def _gelu_grad(gate: Tensor, approximate: str) -> Tensor:
    if approximate == "tanh":
        k = (2 / torch.pi) ** 0.5
        t = torch.tanh(k * (gate + 0.044715 * gate**3))
        return 0.5 * (1 + t) + 0.5 * gate * (1 - t * t) * k * (1 + 3 * 0.044715 * gate**2)
    return 0.5 * (1 + torch.erf(gate * 0.5**0.5)) + gate * torch.exp(-0.5 * gate * gate) / (2 * torch.pi) ** 0.5


def _gated_unit(name: str, activation, activation_grad) -> None:
    """Fake kernels and autograd of <name> and <name>_backward. activation(gate,
    *extra) and activation_grad(gate, *extra) are the activation and its
    derivative in differentiable torch ops; extra are the op's non-tensor
    arguments (gelu's `approximate`)."""
    backward_op = getattr(_ops, f"{name}_backward").default

    def fake(x: Tensor, *extra) -> Tensor:
        _rules.check(name, x, *extra)
        return x.new_empty((*x.shape[:-1], x.shape[-1] // 2))

    def fake_backward(grad_out: Tensor, x: Tensor, *extra) -> Tensor:
        _rules.check(f"{name}_backward", grad_out, x, *extra)
        return x.new_empty(x.shape)

    torch.library.register_fake(f"my_ops::{name}", fake)
    torch.library.register_fake(f"my_ops::{name}_backward", fake_backward)

    def backward_math(grad_out: Tensor, x: Tensor, *extra) -> Tensor:
        """The backward op in differentiable torch ops (float32 math, float64 for float64)."""
        acc = _accumulator(x.dtype)
        gate, up = x.to(acc).chunk(2, dim=-1)
        g = grad_out.to(acc)
        grad_gate = g * up * activation_grad(gate, *extra)
        grad_up = g * activation(gate, *extra)
        return torch.cat([grad_gate, grad_up], dim=-1).to(x.dtype)

    _differentiable_backward(f"{name}_backward", backward_math, tensor_args=2)

    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(inputs[0])
        ctx.extra = inputs[1:]

    def backward(ctx, grad: Tensor):
        (x,) = ctx.saved_tensors
        return (_call(backward_op, (grad, x), grad, x, *ctx.extra), *([None] * len(ctx.extra)))

    _autograd(name, backward, setup_context=setup_context)


_gated_unit("silu_and_mul", torch.nn.functional.silu, _silu_grad)
_gated_unit("gelu_and_mul", lambda gate, approximate: torch.nn.functional.gelu(gate, approximate=approximate),
            _gelu_grad)
