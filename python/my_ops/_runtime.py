"""The dispatch and autograd runtime of the typed Python API: the roads a call
takes (_call), each op's autograd formulas as an autograd.Function and its
Autograd kernel (_autograd), autograd for the fused backward ops
(_differentiable_backward), and the argument helpers the op families share.
The kernels themselves are registered from C++ (libmy_ops, loaded by
my_ops._C); each op family's module (my_ops/families/<family>.py) builds its
ops on this. The mutating ops' handling is in _mutating.py.
"""

from __future__ import annotations

import threading

import torch
from torch import Tensor

from . import _rules, _torch_compat as _compat
from ._arguments import reraise_explained
from ._formulas import _vjp_formula

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
# Function, which torch.func runs level by level. With grad enabled, anything
# else takes the op's full path: tensor subclasses, dispatch modes
# (FakeTensorMode); so does torch.compile.
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
_below_autograd = _compat.call_below_autograd
_below_autograd_traced = _compat.call_below_autograd_traced
_grad_enabled = torch.is_grad_enabled
_is_compiling = torch.compiler.is_compiling
_dynamo_compiling = torch.compiler.is_dynamo_compiling
_inference_mode = torch.is_inference_mode_enabled
_FUNCTIONS: dict = {}  # op -> its torch.autograd.Function (_autograd)


class _ThreadState(threading.local):
    # a class default: reading an attribute a thread has not set yet would
    # otherwise raise and catch AttributeError on every grad-path call
    in_formula = False  # a backward formula is running on this thread


_state = _ThreadState()
_RECORD: dict = {}  # op -> that Function's apply for plain eager calls


def _forward_ad_error(op) -> RuntimeError:
    return RuntimeError(f"my_ops.{op.name().split('::')[1].split('.')[0]}: forward-mode AD (dual tensors, "
                        "torch.func.jvp, jacfwd, hessian) is not supported; use reverse mode "
                        "(backward, torch.autograd.grad, torch.func.grad, vjp, jacrev)")


def _refuse_forward_ad(op, tensors) -> None:
    """The ops have no forward-mode formula: a dual tensor's tangent would be dropped."""
    if _has_tangent(tensors):
        raise _forward_ad_error(op)


def _call(op, tensors, *args):
    """op(*args), where `tensors` are the tensor arguments among args. Also
    the backward formulas call their ops through here, so that gradients of
    gradients take the same roads."""
    try:
        # inference_mode already dispatches past autograd; dynamo folds
        # is_dynamo_compiling() first (non-strict export, which runs this
        # eagerly, has its dispatch modes on: op(*args) below, or under a
        # torch.func transform at the test of is_compiling())
        if _dynamo_compiling() or _inference_mode():
            return op(*args)
        if _has_tangent(tensors):
            raise _forward_ad_error(op)
        if _transforms_active():
            if _is_compiling():  # non-strict export: the op's full path, which it traces
                return op(*args)
            # torch.func (grad, vjp, jacrev, vmap) takes an autograd.Function
            # from here, outside the dispatcher, and runs it level by level
            return _FUNCTIONS[op].apply(*args)
        # dispatch modes and tensor subclasses take the op's full path (a
        # __torch_function__ handler must run with autograd on, as torch.ops runs it)
        if _dispatch_modes():
            return op(*args)
        for t in tensors:
            if type(t) not in _PLAIN:
                return op(*args)
        if _grad_enabled():
            for t in tensors:
                if t.requires_grad:
                    # In a backward formula, the tensors may be wrappers of a
                    # torch.func transform that has ended (vjp_fn called outside
                    # it): Function.apply unwraps those; the short record does not,
                    # and the gradient would not reach the caller's tensors.
                    if _state.in_formula:
                        return _FUNCTIONS[op].apply(*args)
                    for u in tensors:
                        if u.is_inference():
                            # torch refuses to save an inference tensor for backward (one
                            # made under inference_mode, used outside it beside a weight
                            # that requires grad); its own ops save tensors computed from it
                            return _RECORD[op](*_copies_of_inference_tensors(args))
                    return _RECORD[op](*args)
        return _below_autograd(op, args)  # nothing to record
    except (TypeError, RuntimeError, NotImplementedError, AttributeError) as failure:
        reraise_explained(op, tensors, failure)


def _has_inference_tensor(args) -> bool:
    for a in args:
        if isinstance(a, Tensor) and a.is_inference():
            return True
    return False


def _copies_of_inference_tensors(args) -> tuple:
    # with grad on (setup_context runs with it off): the copy of an inference
    # tensor that requires grad (a parameter made under inference_mode) must
    # lead back to it, or gradients of gradients through it are lost
    with torch.enable_grad():
        return tuple(a.clone() if isinstance(a, Tensor) and a.is_inference() else a for a in args)


def _saving_copies_of_inference_tensors(setup, name: str):
    """setup_context, given a copy of each inference tensor among the inputs
    (which torch refuses to save for backward, see _call)."""
    def setup_context(ctx, inputs, output):
        if _has_inference_tensor(inputs):
            copies = _copies_of_inference_tensors(inputs)
            for a, c in zip(inputs, copies):
                if c is not a and a.requires_grad and c.grad_fn is None:
                    # Called below the Autograd key (torch's register_autograd
                    # kernel, where _torch_compat lacks what the op's own needs):
                    # the copy cannot lead back to the tensor, and gradients of
                    # gradients through it would be lost. Refused, as torch refuses it.
                    raise RuntimeError(
                        f"my_ops.{name}: an inference tensor that requires grad (made under "
                        "torch.inference_mode()) cannot be saved for backward through torch.ops on "
                        "this torch; call the op through the Python API (my_ops), or clone the "
                        "tensor outside inference_mode")
            inputs = copies
        setup(ctx, inputs, output)

    return setup_context


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
    save = _saving_copies_of_inference_tensors(setup_context, name)

    def run_backward(ctx, *grads):
        outer = _state.in_formula
        try:
            _state.in_formula = True
            return backward(ctx, *grads)
        finally:
            _state.in_formula = outer

    def refuse_jvp(ctx, *tangents):  # torch.func's forward mode (jvp, jacfwd) comes here
        raise _forward_ad_error(op)

    def forward(*args):
        # grad mode is off in here. is_compiling() is true here only in
        # non-strict export, which runs this eagerly (torch.compile folds
        # it in _call and calls the op itself); the guard is its road
        return (_below_autograd_traced if _is_compiling() else _below_autograd)(op, args)

    def forward_and_setup(ctx, *args):
        output = _below_autograd(op, args)
        setup_context(ctx, args, output)
        return output

    # (built with type() so that the graph nodes take the name: <name>_functionBackward)
    Function = type(f"{name}_function", (torch.autograd.Function,), {
        "generate_vmap_rule": True,
        "forward": staticmethod(forward),
        "setup_context": staticmethod(save),
        "backward": staticmethod(run_backward),
        "jvp": staticmethod(refuse_jvp),
    })

    def apply_as_function(cls, *args):
        return Function.apply(*args)

    # The same graph node for the Python API's plain eager calls (no torch.func
    # transform, nothing compiling, no inference tensor to copy): forward and
    # setup_context in one Python call, a form torch.func cannot take. The road
    # calls the C apply under its apply (_compat.record_apply); its own apply is
    # what a torch.jit.trace replay calls, and that takes the Function, which
    # torch.func and inference tensors can take.
    EagerFunction = type(f"{name}_function", (torch.autograd.Function,), {
        "forward": staticmethod(forward_and_setup),
        "backward": staticmethod(run_backward),
        "jvp": staticmethod(refuse_jvp),
        "apply": classmethod(apply_as_function),
    })

    # Function.apply, minus its Python preamble (binding the arguments with
    # inspect.signature, which costs as much as the call, and the hand-over
    # to torch.func): for calls where no torch.func transform is active.
    record = _compat.record_apply(Function)
    _FUNCTIONS[op] = Function
    _RECORD[op] = _compat.record_apply(EagerFunction)
    if not _AUTOGRAD_KERNEL:
        # torch's own Autograd kernel for the same formulas; torch.func over a
        # torch.ops call then fails in torch's check (pytorch#168393), and the
        # Python API still takes the Function above
        torch.library.register_autograd(f"my_ops::{name}", Function.backward,
                                        setup_context=save, lib=_lib)
        return

    def autograd_kernel(keyset, *args):
        tensors = [args[i] for i in tensor_positions if i < len(args)]
        _refuse_forward_ad(op, tensors)
        if torch.is_grad_enabled() and _any_requires_grad(*tensors):
            if _transforms_active():
                # torch.func runs an autograd.Function from outside the
                # dispatcher, level by level; from in here nested transforms
                # would get wrong gradients. The Python API calls it there.
                # (also reached when torch.compile or non-strict torch.export
                # traces a torch.func transform: neither can trace the Function)
                raise RuntimeError(
                    f"torch.ops.my_ops.{name}: differentiating through the op under torch.func "
                    f"transforms (grad, vjp, jacrev) works through the Python API, eagerly: call "
                    f"my_ops.{name.removesuffix('_backward')}, outside torch.compile and torch.export "
                    "(torch.compile cannot trace torch.func transforms over my_ops, nor can torch.export; "
                    "compiling or exporting the function without the transform works, with ordinary "
                    "autograd)")
            return record(*args, *defaults[len(args):])
        with _BelowAutograd():
            return op.redispatch(keyset & _after_autograd, *args)

    _lib.impl(name, autograd_kernel, "Autograd", with_keyset=True)


# Dispatch keys of tensors the kernels do not take: without a kernel there,
# the dispatcher's error names no argument.
_UNSUPPORTED_KEYS = ("SparseCPU", "SparseCUDA", "SparseCsrCPU", "SparseCsrCUDA", "NestedTensorCPU",
                     "NestedTensorCUDA", "QuantizedCPU", "QuantizedCUDA", "MkldnnCPU")
for _name in _rules.RULES:
    for _key in _UNSUPPORTED_KEYS:
        _lib.impl(_name, _rules.reject(_name), _key)


def _differentiable_backward(name: str, math, tensor_args: int) -> None:
    """Autograd for the fused backward op <name> (_vjp_formula's). First-order
    backward never comes here: it runs the fused op alone."""
    setup_context, backward = _vjp_formula(math, tensor_args)
    _autograd(name, backward, setup_context=setup_context)
