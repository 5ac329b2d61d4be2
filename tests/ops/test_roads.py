"""Every op through every road: the Python API, torch.ops.my_ops, the nn
module, torch.compile(fullgraph=True; aot_eager and the default inductor
backend), torch.export (strict and non-strict),
torch.func.functionalize, torch.vmap (every tensor batched, or only x and the
written arguments, on contiguous and sliced samples), torch.func.vjp and
torch.jit.trace (its check on). Each road gets the same fresh arguments and must give the same
results as the op's own call through torch.ops (the same kernels: the same
bits), the same gradients, and, for every bad call of the op's spec, the
same refusal. Driven by the specs (tests/ops/specs/): a new op is covered
by its spec alone, so the roads cannot drift apart again.
"""

from __future__ import annotations

import functools
import inspect
import re
import threading

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch import nn

import specs
from conftest import make_input

# my_ops::check_memory, registered from Python (the in-place ops' check in compiled graphs): its smoke test
# is test_overlap_refused_after_a_graph_compiled_for_apart_arguments
SMOKE_OPS = ("check_memory",)

FUNCTIONAL_ROADS = ("api", "torch.ops", "compile", "compile inductor", "export strict", "export non-strict",
                    "functionalize", "vmap", "jit.trace")


class _Call(nn.Module):
    """fn as a module (what torch.export and torch.jit.trace take)."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _through(road: str, fn, args: tuple, spec_module=None):
    """fn(*args) taken by `road`; fn returns its outputs (for a mutating op: the written arguments)."""
    if road in ("api", "torch.ops"):
        return fn(*args)
    if road.startswith("compile"):
        torch._dynamo.reset()
        backend = "inductor" if road == "compile inductor" else "aot_eager"
        return torch.compile(fn, fullgraph=True, dynamic=road == "compile dynamic", backend=backend)(*args)
    if road.startswith("export"):
        program = torch.export.export(_Call(fn), args, strict=road == "export strict")
        return program.module()(*args)
    if road == "functionalize":
        return torch.func.functionalize(fn)(*args)
    if road == "vmap":  # a batch of one of every tensor argument
        batched = tuple(a.unsqueeze(0) if isinstance(a, torch.Tensor) else a for a in args)
        out = torch.vmap(fn, in_dims=tuple(0 if isinstance(a, torch.Tensor) else None for a in args))(*batched)
        return tuple(o.squeeze(0) for o in out) if isinstance(out, tuple) else out.squeeze(0)
    if road == "module":  # (the specs' modules take the op's first argument; the others are the op's defaults)
        if spec_module is None:
            pytest.skip("no nn.Module")
        return spec_module()(args[0])
    if road == "jit.trace":
        tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]

        def on_tensors(*ts):  # (trace takes tensor inputs: the others are constants of the trace)
            full = list(args)
            for i, t in zip(tensors, ts):
                full[i] = t
            return fn(*full)

        inputs = tuple(args[i] for i in tensors)
        copies = tuple(t.clone() for t in inputs)  # (the trace runs the call, writes included)
        traced = torch.jit.trace(on_tensors, copies, check_trace=True,
                                 check_inputs=[tuple(t.clone() for t in inputs)])
        return traced(*inputs)
    raise AssertionError(road)


def _callable(spec, road: str):
    """The op as `road` calls it, returning its outputs (mutating ops: the written arguments, cloned)."""
    op = spec.op if road == "torch.ops" or spec.api is None else spec.api
    if not spec.mutates:
        return op
    written = [spec.argument_names().index(name) for name in spec.mutates]

    def mutate(*args):
        op(*args)
        return tuple(args[i].clone() for i in written)

    return mutate


def _fresh(spec, device, dtype=torch.float64) -> tuple:
    return spec.resolve(make_input(spec.input_shape, dtype, device))


def _copy(args) -> tuple:
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def _roads(spec) -> list:
    roads = list(FUNCTIONAL_ROADS)
    if spec.api is None:
        roads.remove("api")
    return roads


@pytest.mark.parametrize("spec, road", [(s, r) for s in specs.ALL for r in _roads(s)],
                         ids=lambda v: v if isinstance(v, str) else v.id)
def test_same_results(spec, road, device):
    args = _fresh(spec, device)
    if road == "functionalize" and spec.mutates:
        # torch's eager functionalization takes no custom op that writes its
        # arguments (torch.compile and torch.export functionalize them): one
        # refusal, whichever way the op is called
        with pytest.raises(RuntimeError, match=r"Found a custom \(non-ATen\) operator whose output has alias"):
            _through(road, _callable(spec, road), _copy(args))
        return
    with torch.no_grad():
        want = _callable(spec, "torch.ops")(*_copy(args))
        got = _through(road, _callable(spec, road), _copy(args))
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def _vmap_of_x(spec, fn, args: tuple, sliced: bool):
    """fn under torch.vmap over a batch of one, with only the first argument and
    the written ones batched: a row-wise op folds the batch into its rows and
    runs once with the other arguments shared (the vmap road batches every
    tensor, so runs per sample). sliced: each batched sample read in place from
    a buffer twice as wide."""
    names = spec.argument_names()
    batched = {0, *(names.index(n) for n in spec.mutates)}
    in_dims = tuple(0 if i in batched and isinstance(a, torch.Tensor) else None for i, a in enumerate(args))

    def batch(a):
        if not sliced or a.dim() == 0:
            return a.unsqueeze(0)
        wide = torch.zeros(1, *a.shape[:-1], 2 * a.shape[-1], dtype=a.dtype, device=a.device)
        wide[..., :a.shape[-1]] = a
        return wide[..., :a.shape[-1]]

    inputs = tuple(batch(a) if d == 0 else a for a, d in zip(args, in_dims))
    out = torch.vmap(fn, in_dims=in_dims)(*inputs)
    return tuple(o.squeeze(0) for o in out) if isinstance(out, tuple) else out.squeeze(0)


@pytest.mark.parametrize("sliced", [False, True], ids=["contiguous", "sliced"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("spec", specs.ALL, ids=lambda s: s.id)
def test_same_results_under_vmap_of_x(spec, dtype, sliced, device):
    """As test_same_results, with only x (and what the op writes) batched: the
    batch folded into a row-wise op's rows, the other arguments shared."""
    if dtype not in spec.dtypes:
        pytest.skip(f"{spec.id} does not take {dtype}")
    args = _fresh(spec, device, dtype)
    with torch.no_grad():
        want = _callable(spec, "torch.ops")(*_copy(args))
        for road in ("api", "torch.ops"):
            got = _vmap_of_x(spec, _callable(spec, road), _copy(args), sliced)
            torch.testing.assert_close(got, want, rtol=0, atol=0, msg=lambda m: f"{road}: {m}")


BFLOAT16_ROADS = ("api", "compile", "compile inductor", "export non-strict", "vmap", "jit.trace")


@pytest.mark.parametrize("spec, road", [(s, r) for s in specs.ALL if torch.bfloat16 in s.dtypes
                                        for r in BFLOAT16_ROADS if r in _roads(s)],
                         ids=lambda v: v if isinstance(v, str) else v.id)
def test_same_results_in_bfloat16(spec, road, device):
    """As test_same_results, on bfloat16 arguments (the kernels' other paths:
    float32 statistics, rounding on the way out)."""
    if road == "functionalize" and spec.mutates:
        pytest.skip("torch's eager functionalization takes no mutating custom op (test_same_results)")
    args = _fresh(spec, device, torch.bfloat16)
    with torch.no_grad():
        want = _callable(spec, "torch.ops")(*_copy(args))
        got = _through(road, _callable(spec, road), _copy(args))
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("spec", specs.where(differentiable=True), ids=repr)
@pytest.mark.parametrize("road", ["api", "torch.ops", "module", "torch.func.vjp", "compile", "jit.trace"])
def test_same_gradients(spec, road, device):
    """The gradient of every floating tensor argument, as the op's own call
    through torch.ops records it; that one against the float64 reference's."""
    args = _fresh(spec, device)
    if road == "module" and spec.module is None and spec.name != "rms_norm":
        pytest.skip("no nn.Module")
    if road == "api" and spec.api is None:
        pytest.skip("no Python API")
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    cotangent = torch.randn_like(spec.op(*args))

    def grads(fn, inputs):
        leaves = [a.detach().requires_grad_() if isinstance(a, torch.Tensor) else a for a in inputs]
        out = fn(*leaves)
        return torch.autograd.grad(out, [leaves[i] for i in tensors], cotangent)

    want = grads(spec.op, args)
    if road == "torch.ops":  # (float64 arguments: the reference's own gradient, by torch's autograd)
        torch.testing.assert_close(want, grads(spec.reference, args))
        return
    if road == "torch.func.vjp":
        def on_tensors(*ts):
            full = list(args)
            for i, t in zip(tensors, ts):
                full[i] = t
            return (spec.api or spec.op)(*full)

        _, vjp = torch.func.vjp(on_tensors, *[args[i] for i in tensors])
        got = vjp(cotangent)
    elif road == "module":
        module = _module_with(spec, args)
        x = args[0].detach().requires_grad_()
        out = module(x)
        got = torch.autograd.grad(out, [x, *module.parameters()], cotangent)
    elif road == "compile":
        torch._dynamo.reset()
        got = grads(torch.compile(spec.api or spec.op, fullgraph=True, backend="aot_eager"), args)
    elif road == "jit.trace":
        leaves = [a.detach().requires_grad_() if isinstance(a, torch.Tensor) else a for a in args]
        traced = torch.jit.trace(lambda *ts: (spec.api or spec.op)(*ts, *args[len(tensors):]),
                                 tuple(leaves[i] for i in tensors), check_trace=True)
        got = torch.autograd.grad(traced(*[leaves[i] for i in tensors]), [leaves[i] for i in tensors], cotangent)
    else:
        got = grads(spec.api, args)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def _module_with(spec, args):
    """The op's nn.Module holding args[1:] as its state, so that module(x) is the op on args."""
    import my_ops

    if spec.name == "rms_norm":
        module = my_ops.RMSNorm(args[0].shape[-1], eps=args[2], dtype=args[1].dtype, device=args[1].device)
        with torch.no_grad():
            module.weight.copy_(args[1])
        return module
    return spec.module()


def _none_calls() -> list:
    """(spec, bad call): None for each tensor argument of every op, which the
    op's rules name on every road (also where it is the call's only tensor,
    which the dispatcher alone would refuse as "no tensor arguments")."""
    calls = []
    for spec in specs.ALL:
        for i, argument in enumerate(spec.op._schema.arguments):
            if str(argument.type) == "Tensor":
                def make(device, spec=spec, i=i):
                    return tuple(None if j == i else a for j, a in enumerate(_fresh(spec, device)))

                calls.append((spec, specs.BadCall(f"{argument.name} None", make,
                                                  rf"expected {argument.name} to be a tensor, but got None$")))
    return calls


def _optional_eps(spec) -> int | None:
    """The position of the op's `float? eps` argument, or None."""
    names = [(a.name, str(a.type)) for a in spec.op._schema.arguments]
    return next((i for i, (name, kind) in enumerate(names) if name == "eps" and kind == "Optional[float]"), None)


EPS_SPECS = [s for s in specs.ALL if _optional_eps(s) is not None]


def _one_spec_per_op() -> list:
    first = {}
    for spec in specs.ALL:
        first.setdefault(spec.name, spec)
    return list(first.values())


def _with(spec, device, position: int, value) -> tuple:
    """Fresh arguments of spec, the one at `position` replaced by value (the
    arguments the spec leaves to their defaults given theirs)."""
    arguments = spec.op._schema.arguments
    args = list(_fresh(spec, device))
    args += [a.default_value for a in arguments[len(args):]]
    args[position] = value
    return tuple(args)


def _float_calls(value, kind: str, got: str) -> list:
    """(spec, bad call): value for each float argument of every op with a
    Python API, which the API refuses with the op's name and the argument's:
    "expected <argument> to be a float, but got <got>"."""
    calls = []
    for spec in _one_spec_per_op():
        if spec.api is None:
            continue
        for i, argument in enumerate(spec.op._schema.arguments):
            if str(argument.type) in ("float", "Optional[float]"):
                also = r" \(or None for the machine epsilon\)" if argument.name == "eps" else ""
                calls.append((spec, specs.BadCall(f"{argument.name} {kind}", lambda d, spec=spec, i=i: _with(
                    spec, d, i, value), rf"expected {argument.name} to be a float{also}, but got {got}")))
    return calls


def _bool_calls(numpy: bool = False) -> list:
    """True (numpy: NumPy's True) for each float argument, refused by the API
    on every road with the op's name. (torch.ops takes it: the dispatcher
    converts it to 1.0 before any kernel runs, and the stable ABI has no
    Scalar argument that would keep its type:
    test_a_bool_is_converted_by_torch_ops_alone.)"""
    import numpy as np

    return _float_calls(np.True_, "numpy bool", "bool True") if numpy else _float_calls(True, "bool", "bool True")


def _overflow_calls() -> list:
    """An int too large for a float for each float argument: Python's float()
    raises an OverflowError naming neither the op nor the argument; the API
    refuses it by name, with a RuntimeError as the dispatcher's on torch.ops."""
    return _float_calls(10**400, "int too large", "int too large to convert to float")


# a value of another Python type for each kind of argument
_WRONG_TYPES = {"Tensor": (0.5,), "Optional[Tensor]": (0.5,), "float": ("0.5", None, 1 + 2j),
                "Optional[float]": ("0.5", 1 + 2j), "str": (None, 1)}


def _type_calls() -> list:
    """(spec, bad call): a value of another Python type for each argument of
    every op, which the dispatcher refuses on torch.ops before any my_ops
    code runs; the API passes it on, for the same refusal on every road."""
    calls = []
    for spec in _one_spec_per_op():
        for i, argument in enumerate(spec.op._schema.arguments):
            kind = str(argument.type)
            for value in _WRONG_TYPES.get(kind, ()):
                message = (rf"my_ops::{spec.name}\(\) Expected a value of type '{re.escape(kind)}' for argument "
                           rf"'{argument.name}' but instead found type '{type(value).__name__}'")
                calls.append((spec, specs.BadCall(f"{argument.name} {type(value).__name__}",
                                                  lambda d, spec=spec, i=i, value=value: _with(spec, d, i, value),
                                                  message)))
    return calls


REFUSAL_ROADS = ["api", "torch.ops", "compile", "compile dynamic", "export non-strict", "functionalize", "vmap"]
# the roads that trace with dynamo or TorchScript, and the nn module: for the specs' own bad calls
MORE_REFUSAL_ROADS = ["export strict", "jit.trace", "module"]


def _refused(spec, bad, road, device, own: bool = True) -> None:
    """bad's call refused on `road` with a RuntimeError (compile's own
    errors are RuntimeErrors that quote it) holding the op's message (own:
    "my_ops.<op>: <message>"; else the dispatcher's, bad.message whole)."""
    if road == "api" and spec.api is None:
        pytest.skip("no Python API")
    args = bad.make(device)
    if road == "vmap" and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        pytest.skip("vmap refuses to batch a tensor that requires grad before the op is called")
    if road == "vmap" and not any(isinstance(a, torch.Tensor) for a in args):
        pytest.skip("vmap refuses a call without a tensor to batch before the op is called")
    if road == "functionalize" and spec.mutates:
        pytest.skip("torch's eager functionalization takes no mutating custom op (test_same_results)")
    if road == "module" and (spec.module is None or any(isinstance(a, torch.Tensor) for a in args[1:])
                             or list(args[1:]) != list(spec.args_for(args[0]))):
        pytest.skip("no nn.Module, or a bad argument the module does not take")
    # (the message ends where the op's does: dynamo quotes it inside its own)
    message = bad.message.removesuffix("$")
    if road == "compile dynamic":  # (a float argument is a SymFloat there)
        message = re.sub(r"found type '(float|int)'", lambda m: f"found type '({m[1]}|Sym{m[1].title()})'", message)
    if road.startswith("export") and any(isinstance(a, complex) for a in args):
        pytest.skip("torch.export refuses a complex input before the op is called")
    pattern = rf"my_ops\.{spec.name}: {message}(?![\w.])" if own else message
    with pytest.raises(RuntimeError) as refusal:
        _through(road, _callable(spec, road), args, spec.module)
    text = str(refusal.value)
    if road.startswith(("compile", "export strict")):  # (dynamo quotes the op's error as a repr: \' for ')
        text = text.replace("\\'", "'")
    assert re.search(pattern, text), (pattern, text)


def _ids(v):
    return getattr(v, "id", None) or getattr(v, "name", None)


@pytest.mark.parametrize("spec, bad", [(s, b) for s, b in specs.bad_calls()], ids=_ids)
@pytest.mark.parametrize("road", REFUSAL_ROADS + MORE_REFUSAL_ROADS)
def test_same_refusals(spec, bad, road, device):
    """Each bad call of the spec is refused on every road, with the op's own message."""
    _refused(spec, bad, road, device)


@pytest.mark.parametrize("spec, bad", _none_calls(), ids=_ids)
@pytest.mark.parametrize("road", REFUSAL_ROADS)
def test_none_for_a_tensor_refused_alike(spec, bad, road, device):
    """None for any tensor argument, the only one included, is named by the op on every road."""
    _refused(spec, bad, road, device)


@pytest.mark.parametrize("spec, bad", _bool_calls(), ids=_ids)
@pytest.mark.parametrize("road", [r for r in REFUSAL_ROADS if r != "torch.ops"])
def test_a_bool_for_a_float_refused_alike(spec, bad, road, device):
    _refused(spec, bad, road, device)


@pytest.mark.parametrize("spec, bad", _bool_calls(numpy=True), ids=_ids)
@pytest.mark.parametrize("road", ["api", "functionalize", "vmap"])
def test_a_numpy_bool_for_a_float_refused_alike(spec, bad, road, device):
    """As a bool, on the roads that pass a NumPy scalar to the API as it is
    (torch.export refuses one as an input; torch.compile makes it a tensor,
    which the dispatcher refuses for a float, as any NumPy scalar)."""
    _refused(spec, bad, road, device)


@pytest.mark.parametrize("spec, bad", _overflow_calls(), ids=_ids)
@pytest.mark.parametrize("road", [r for r in REFUSAL_ROADS if r not in ("torch.ops", "compile dynamic")])
def test_an_int_too_large_for_a_float_refused_alike(spec, bad, road, device):
    """(Not with dynamic=True: the int is a SymInt there, which dynamo's own
    float() of it refuses while tracing, before the API can name it.)"""
    _refused(spec, bad, road, device)


@pytest.mark.parametrize("spec, bad", _overflow_calls(), ids=_ids)
def test_an_int_too_large_for_a_float_refused_by_torch_ops_too(spec, bad, device):
    """torch.ops refuses it too, with the dispatcher's RuntimeError (the class the API raises)."""
    argument = next(a for a in spec.op._schema.arguments if a.name == bad.name.split()[0])
    with pytest.raises(RuntimeError, match=rf"my_ops::{spec.name}\(\) Expected a value of type "
                                           rf"'{re.escape(str(argument.type))}' for argument '{argument.name}' "
                                           r"but instead found type 'int'"):
        spec.op(*bad.make(device))


def test_rms_norm_module_refuses_an_eps_too_large_for_a_float():
    """Refused when the module is made, as a bool eps is, naming the module and the argument."""
    import my_ops

    with pytest.raises(RuntimeError, match=r"^my_ops\.RMSNorm: expected eps to be a float \(or None for the "
                                           r"machine epsilon\), but got int too large to convert to float$"):
        my_ops.RMSNorm(8, eps=10**400)


@pytest.mark.parametrize("spec, bad", _type_calls(), ids=_ids)
@pytest.mark.parametrize("road", REFUSAL_ROADS)
def test_a_value_of_another_type_refused_alike(spec, bad, road, device):
    """The dispatcher's refusal (the schema's type named), whichever way the op is called."""
    _refused(spec, bad, road, device, own=False)


@pytest.mark.parametrize("spec, bad", [(s, b) for s, b in [*specs.bad_calls(), *_none_calls(), *_type_calls()]
                                       if s.api is not None], ids=_ids)
def test_the_api_raises_what_torch_ops_raises(spec, bad, device):
    """Each bad call raises one exception through the Python API and through
    torch.ops: the same class, RuntimeError (that of the dispatcher's own
    refusals, which come first on torch.ops), and the same message."""
    errors = []
    for call in (spec.op, _callable(spec, "api")):
        with pytest.raises(Exception) as info:
            call(*bad.make(device))
        errors.append(info.value)
    through_ops, through_api = errors
    assert type(through_ops) is RuntimeError, repr(through_ops)
    assert (type(through_api), str(through_api)) == (type(through_ops), str(through_ops))


@pytest.mark.parametrize("spec, bad", [*_bool_calls(), *_bool_calls(numpy=True)], ids=_ids)
def test_a_bool_is_converted_by_torch_ops_alone(spec, bad, device):
    """The one difference between the roads' refusals, which my_ops cannot
    close: torch.ops reads True for a float as 1.0 (the dispatcher converts it
    before any my_ops code runs); the API refuses it (the other roads: above)."""
    args = bad.make(device)
    position = next(i for i, a in enumerate(args) if type(a).__name__ in ("bool", "bool_") and a)
    as_number = list(_copy(args))
    as_number[position] = 1.0
    want = _callable(spec, "torch.ops")(*as_number)
    torch.testing.assert_close(_callable(spec, "torch.ops")(*_copy(args)), want, rtol=0, atol=0)


def _tensor_for_a_float_calls() -> list:
    """(spec, position, value): a 0-dim tensor for each float argument of every op."""
    return [pytest.param(spec, i, id=f"{spec.id}-{argument.name}") for spec in _one_spec_per_op()
            for i, argument in enumerate(spec.op._schema.arguments)
            if str(argument.type) in ("float", "Optional[float]")]


@pytest.mark.parametrize("spec, position", _tensor_for_a_float_calls())
def test_a_tensor_for_a_float_is_its_value_on_both_eager_roads(spec, position, device):
    """A one-element tensor for a float argument (muladd's c, an eps) is its
    value through torch.ops (the dispatcher converts it) and through the API
    alike, which passes it on. (Under torch.compile both roads fail alike:
    the conversion needs the tensor's value, which tracing has not.)"""
    value = float(_fresh(spec, device)[position] or 1e-5) * 1.5
    as_number = _with(spec, device, position, value)
    as_tensor = list(_copy(as_number))
    as_tensor[position] = torch.tensor(value, dtype=torch.float64)
    want = _callable(spec, "torch.ops")(*_copy(as_number))
    for road in ("api", "torch.ops") if spec.api is not None else ("torch.ops",):
        got = _callable(spec, road)(*_copy(as_tensor))
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("spec, road", [(s, r) for s in EPS_SPECS for r in _roads(s) + ["module"]
                                        if r != "module" or s.name == "rms_norm"],
                         ids=lambda v: v if isinstance(v, str) else v.id)
def test_eps_none_on_every_road(spec, road, device):
    """eps=None is the machine epsilon of the dtype the statistics are
    computed in, as torch.nn.functional.rms_norm takes it: on every road the
    same result as that eps given as a number."""
    position = _optional_eps(spec)
    args = list(_fresh(spec, device, torch.float32))
    args[position] = torch.finfo(torch.float32).eps
    with torch.no_grad():
        want = _callable(spec, "torch.ops")(*_copy(args))
        args[position] = None
        if road == "module":
            module = _module_with(spec, args)
            got = module(args[0])
        elif road == "functionalize" and spec.mutates:
            pytest.skip("torch's eager functionalization takes no mutating custom op (test_same_results)")
        else:
            got = _through(road, _callable(spec, road), _copy(args))
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    if spec.name == "rms_norm":  # (and what torch.nn.functional.rms_norm gives for eps=None)
        x, weight = args[0], args[1]
        torch.testing.assert_close(got, torch.nn.functional.rms_norm(x, x.shape[-1:], weight, eps=None))


@pytest.mark.parametrize("spec, road", [(s, r) for s in specs.ALL for r in ("api", "torch.ops") if r in _roads(s)],
                         ids=lambda v: v if isinstance(v, str) else v.id)
def test_forward_ad_of_another_thread(spec, road, device):
    """The refusal of forward-mode AD is per call: a dual level open in
    another thread (torch's one per process) refuses that thread's dual
    calls but nothing of this thread."""
    args = _fresh(spec, device)
    call = _callable(spec, road)
    with torch.no_grad():
        want = call(*_copy(args))
    opened, finished, refusals = threading.Event(), threading.Event(), []

    def other_thread():
        with fwAD.dual_level():
            dual = fwAD.make_dual(args[0].clone(), torch.randn_like(args[0]))
            try:
                call(dual, *_copy(args[1:]))
            except RuntimeError as refusal:
                refusals.append(str(refusal))
            opened.set()
            finished.wait(60)

    thread = threading.Thread(target=other_thread)
    thread.start()
    try:
        assert opened.wait(60)
        got = call(*_copy(args))
    finally:
        finished.set()
        thread.join()
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert len(refusals) == 1 and refusals[0].startswith(f"my_ops.{spec.name}: forward-mode AD")


def _with_written_slices(spec, rows: int, device) -> tuple:
    """Fresh arguments of `rows` rows, each written 2-D argument a column
    slice of a buffer twice as wide (a view that is not contiguous)."""
    args = list(spec.resolve(make_input((rows, *spec.input_shape[1:]), torch.float64, device)))
    for name in spec.mutates:
        i = spec.argument_names().index(name)
        if args[i].dim() == 2:
            buffer = torch.zeros(args[i].shape[0], 2 * args[i].shape[1], dtype=args[i].dtype, device=device)
            args[i] = buffer[:, :args[i].shape[1]]
            args[i].copy_(make_input(tuple(args[i].shape), args[i].dtype, device))
    return tuple(args)


@pytest.mark.parametrize("strict", [False, True], ids=["non-strict", "strict"])
@pytest.mark.parametrize("spec", [s for s in specs.ALL if s.mutates], ids=repr)
def test_written_slice_keeps_sizes_dynamic(spec, strict, device):
    """A written argument that is a slice of a wider buffer (not contiguous)
    is shown apart without guarding the number of rows: torch.export keeps
    that size dynamic, and the program runs with other row counts, writing
    what the op writes."""
    args = _with_written_slices(spec, 5, device)
    rows = torch.export.Dim("rows", min=2)
    dynamic = tuple({0: rows} if isinstance(a, torch.Tensor) and a.dim() == 2 else None for a in args)
    with torch.no_grad():
        program = torch.export.export(_Call(_callable(spec, "torch.ops")), args, dynamic_shapes=(dynamic,),
                                      strict=strict)
        for n in (3, 9):
            args = _with_written_slices(spec, n, device)
            want = _callable(spec, "torch.ops")(*_copy(args))
            got = program.module()(*args)
            torch.testing.assert_close(got, want, rtol=0, atol=0)


def _views_of_one_buffer(name: str, rows: int, layout: str) -> tuple:
    """(buffer, a call whose written arguments are views of it that do not
    overlap, as eager mode takes them): add_out's out is a itself, or the
    right half of each row where a is the left; fused_add_rms_norm's x and
    residual are two blocks of rows, or the two halves of each row (memory
    spans that meet, so only the exact test tells them apart)."""
    f64 = torch.float64
    if name == "add_out":
        buffer, b = torch.randn(rows, 16, dtype=f64), torch.randn(rows, 8, dtype=f64)
        return buffer, (buffer[:, :8], b, buffer[:, :8] if layout == "out is a" else buffer[:, 8:])
    buffer = torch.randn(2, rows, 8, dtype=f64) if layout == "rows" else torch.randn(rows, 16, dtype=f64)
    x, residual = (buffer[0], buffer[1]) if layout == "rows" else (buffer[:, :8], buffer[:, 8:])
    return buffer, (x, residual, torch.randn(8, dtype=f64), 1e-6)


@pytest.mark.parametrize("name, layout", [("add_out", "out is a"), ("add_out", "columns"),
                                          ("fused_add_rms_norm", "rows"), ("fused_add_rms_norm", "columns")])
def test_views_of_one_buffer_compile_once_for_every_size(name, layout):
    """Written arguments that share a storage without overlapping keep their
    sizes dynamic under torch.compile(dynamic=True): one graph for every row
    count (whether the views overlap is then checked on the real tensors when
    the graph runs), each call writing what the eager call writes."""
    op = getattr(torch.ops.my_ops, name).default

    def call(*args):
        op(*args)

    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    compiled = torch.compile(call, backend="aot_eager", fullgraph=True, dynamic=True)
    for rows in (3, 5, 9, 12):
        buffer, args = _views_of_one_buffer(name, rows, layout)
        want = buffer.clone()
        op(*_rebased(args, buffer, want))
        compiled(*args)
        torch.testing.assert_close(buffer, want, rtol=0, atol=0)
    assert counters["stats"]["unique_graphs"] == 1, f"{counters['stats']['unique_graphs']} graphs for 4 row counts"
    if layout == "columns":  # (the right half shifted onto the left one: refused when the graph runs)
        buffer, args = _views_of_one_buffer(name, 7, layout)
        args = [buffer[:, 4:12] if isinstance(a, torch.Tensor) and a.storage_offset() == 8 else a for a in args]
        before = buffer.clone()
        with pytest.raises(RuntimeError, match=rf"my_ops\.{name}: .* overlap"):
            compiled(*args)
        torch.testing.assert_close(buffer, before, rtol=0, atol=0)


def _required(spec) -> int:
    """How many of the op's arguments (the first ones) have no default."""
    return sum(not a.has_default_value() for a in spec.op._schema.arguments)


@pytest.mark.parametrize("spec", [s for s in _one_spec_per_op() if s.api is not None], ids=repr)
def test_defaults_alike_on_both_roads(spec, device):
    """The op called with only its required arguments gives one result
    through the API and through torch.ops: the schema's defaults are the
    API's (eps=1e-06 for every RMSNorm op)."""
    schema = spec.op._schema.arguments
    api_defaults = {name: p.default for name, p in inspect.signature(spec.api).parameters.items()
                    if p.default is not inspect.Parameter.empty}
    assert api_defaults == {a.name: a.default_value for a in schema if a.has_default_value()}
    args = _fresh(spec, device, torch.float32)[:_required(spec)]
    with torch.no_grad():
        got = _callable(spec, "api")(*_copy(args))
        want = _callable(spec, "torch.ops")(*_copy(args))
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("spec", [s for s in _one_spec_per_op() if s.mutates and s.api is not None], ids=repr)
def test_what_a_mutating_op_returns(spec, device):
    """The return values of the in-place ops on both roads: the same, but
    add_out, whose API returns `out` (as torch's out= functions do) where the
    schema `-> ()` gives None through torch.ops."""
    api_args, ops_args = _fresh(spec, device), None
    ops_args = _copy(api_args)
    with torch.no_grad():
        through_api, through_ops = spec.api(*api_args), spec.op(*ops_args)
    if spec.name == "add_out":
        assert through_api is api_args[2] and through_ops is None
    else:
        torch.testing.assert_close(through_api, through_ops, rtol=0, atol=0)


def _apart_then_overlapping(name: str) -> tuple:
    """Two calls of a mutating op on views of one buffer: one with its
    arguments apart, one with two of them overlapping (the same sizes and
    strides: only the storage offset differs)."""
    if name == "add_out":
        buffer, b = torch.randn(8, 256, dtype=torch.float64), torch.randn(8, 64, dtype=torch.float64)
        return buffer, (buffer[:, :64], b, buffer[:, 64:128]), (buffer[:, :64], b, buffer[:, 1:65])
    buffer, weight = torch.randn(32, 16, dtype=torch.float64), torch.randn(16, dtype=torch.float64)
    return buffer, (buffer[:8], buffer[16:24], weight, 1e-6), (buffer[:8], buffer[4:12], weight, 1e-6)


@pytest.mark.smoke
@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("road", ["api", "torch.ops"])
@pytest.mark.parametrize("name", ["add_out", "fused_add_rms_norm"])
def test_overlap_refused_after_a_graph_compiled_for_apart_arguments(name, road, backend):
    """torch 2.11 reuses a compiled graph for inputs that alias where the
    traced ones did not (its guards cover sizes and strides, not storage
    offsets or aliasing: pytorch#184481), so the op's fake kernel cannot decide
    overlaps for later calls: the graph checks its real inputs, and the
    overlapping call is refused as eagerly, before anything is written."""
    spec = next(s for s in specs.ALL if s.name == name)
    call = _callable(spec, road)
    buffer, _, overlapping = _apart_then_overlapping(name)
    with pytest.raises(RuntimeError) as eager:
        call(*overlapping)
    torch._dynamo.reset()
    compiled = torch.compile(call, fullgraph=True, backend=backend)
    buffer, apart, _ = _apart_then_overlapping(name)
    compiled(*apart)  # (its result: test_apart_views_of_one_buffer_compiled)
    buffer, _, overlapping = _apart_then_overlapping(name)
    before = buffer.clone()
    with pytest.raises(RuntimeError) as refusal:
        compiled(*overlapping)
    assert str(eager.value) in str(refusal.value).replace("\\'", "'")
    assert torch.equal(buffer, before)


@pytest.mark.parametrize("name, backend", [("add_out", "inductor"), ("add_out", "aot_eager"),
                                           ("fused_add_rms_norm", "aot_eager"), ("fused_add_rms_norm", "inductor")])
def test_apart_views_of_one_buffer_compiled(name, backend):
    """Written arguments that are apart views of one buffer: the compiled call
    writes what the eager call writes, the whole buffer compared. (torch 2.11's
    and 2.12's inductor writes a stale copy of the base over the op's in-place
    write, a plain torch.library.custom_op too; a written view past its
    buffer's start takes the functional form, which that bug does not reach.)"""
    spec = next(s for s in specs.ALL if s.name == name)
    buffer, apart, _ = _apart_then_overlapping(name)
    want_buffer = buffer.clone()
    want = _callable(spec, "torch.ops")(*_rebased(apart, buffer, want_buffer))
    torch._dynamo.reset()
    got = torch.compile(_callable(spec, "torch.ops"), fullgraph=True, backend=backend)(*apart)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(buffer, want_buffer, rtol=0, atol=0)


def _write_at_the_buffer_end(name: str, buf: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """name's written argument a view of buf's last other.numel() elements (an offset symbolic under dynamic
    shapes), other read."""
    import my_ops

    n = other.shape[0]
    end = buf[-n:].view(2, n // 2)
    if name == "add_out":
        my_ops.add_out(other.view(2, n // 2), other.view(2, n // 2), end)
    else:
        my_ops.fused_add_rms_norm(other.view(2, n // 2).clone(), end, torch.ones(n // 2), 1e-6)
    return buf


def _residual_a_bfloat16_view(buf: torch.Tensor, x: torch.Tensor, start: int) -> tuple:
    """fused_add_rms_norm with residual a bfloat16 view of the float32 buf from its element `start` on."""
    import my_ops

    rows, cols = x.shape
    residual = buf[start:start + rows * cols // 2].view(torch.bfloat16).view(rows, cols)
    my_ops.fused_add_rms_norm(x, residual, torch.ones(cols, dtype=torch.bfloat16), 1e-6)
    return buf + 0, x + 0


@pytest.mark.parametrize("start", [0, 1, 3])
def test_residual_a_dtype_view_past_the_buffer_start_compiled(start):
    """Inductor wrote wrong values through a bfloat16 view of a float32 buffer at a fixed offset past its start
    (torch 2.11); my_ops takes the op's functional form there, and the compiled call writes what eager does."""
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        compiled = torch.compile(functools.partial(_residual_a_bfloat16_view, start=start), fullgraph=True,
                                 backend="inductor")
        buf, x = make_input((16,), torch.float32, "cpu", low=0.5, high=1.5), make_input((2, 4), torch.bfloat16, "cpu")
        with torch.no_grad():
            want, got = _residual_a_bfloat16_view(buf.clone(), x.clone(), start), compiled(buf.clone(), x.clone())
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("name", ["add_out", "fused_add_rms_norm"])
def test_written_view_at_a_symbolic_offset_compiled(name, backend):
    """A written view whose offset in its buffer is symbolic: inductor writes such an argument of a custom op at
    the offset 0 (pytorch#198068), so my_ops takes the op's functional form there; the compiled call writes
    where eager does, for sizes other than the traced one too."""
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):  # (a cached graph would skip the trace)
        compiled = torch.compile(functools.partial(_write_at_the_buffer_end, name), fullgraph=True,
                                 backend=backend, dynamic=True)
        for size, n in ((20, 8), (30, 6), (17, 4)):
            buf, other = make_input((size,), torch.float32, "cpu"), make_input((n,), torch.float32, "cpu")
            want = _write_at_the_buffer_end(name, buf.clone(), other)
            torch.testing.assert_close(compiled(buf.clone(), other), want, rtol=0, atol=0)


def _add_out_at(buf: torch.Tensor, b: torch.Tensor, start, computed: bool = False) -> torch.Tensor:
    """add_out(buf[:n], b, buf[start:start + n]); start a Python int, or a tensor whose value is read (a
    data-dependent offset under compile); computed: the buffer is one the function makes (buf * 2)."""
    import my_ops

    if computed:
        buf = buf * 2
    n = b.shape[0]
    if isinstance(start, torch.Tensor):
        start = start.sum().item()
        torch._check(start >= 0)
        torch._check(start + n <= buf.shape[0])
    my_ops.add_out(buf[:n], b, buf[start:start + n])
    return buf


@pytest.mark.parametrize("computed", [False, True], ids=["input buffer", "computed buffer"])
@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_written_view_at_a_data_dependent_offset_compiled(backend, computed):
    """Whether out overlaps a depends on an offset read with .item(), which no trace decides, and a check when
    the graph runs may see copies of the views (inductor recomputes views of a buffer the function computes):
    the compiled call is refused, naming the op and what to do, the buffer untouched, for every offset, never
    run through an overlap that eager refuses."""
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True), \
            torch._dynamo.config.patch(capture_scalar_outputs=True):
        compiled = torch.compile(functools.partial(_add_out_at, computed=computed), fullgraph=True,
                                 backend=backend)
        for k in (13, 3):
            buf, b = make_input((24,), torch.float32, "cpu"), make_input((8,), torch.float32, "cpu")
            before = buf.clone()
            with pytest.raises(RuntimeError, match=r"my_ops\.add_out: whether out and a share memory depends on a "
                                                   r"value the compiled function reads .*torch\.compiler\.disable"):
                compiled(buf, b, torch.tensor([k]))
            torch.testing.assert_close(buf, before, rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("spec", specs.ALL, ids=repr)
def test_rows_picked_at_run_time_compiled(spec, backend, device):
    """Every op on rows picked by a mask (x[mask.nonzero()], as a mixture of experts routes tokens): a row count
    the trace cannot know (an unbacked size). One fullgraph graph gives what eager gives, for every mask."""
    torch._dynamo.reset()
    rows = 7  # (no other size of the specs' inputs, so that only row arguments are picked)
    x = make_input((rows, *spec.input_shape[1:]), torch.float32, device)
    args = spec.resolve(x)
    picked = [i for i, a in enumerate(args)
              if isinstance(a, torch.Tensor) and a.dim() == x.dim() and a.shape[0] == rows]
    call = _callable(spec, "api")

    def on_picked_rows(mask, *tensors):
        index = mask.nonzero().squeeze(-1)
        given = list(args)
        for i, tensor in zip(picked, tensors):
            given[i] = tensor[index]
        return call(*given)

    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        compiled = torch.compile(on_picked_rows, fullgraph=True, backend=backend)
        for mask in (torch.rand(rows, device=device) < 0.5, torch.ones(rows, dtype=torch.bool, device=device),
                     torch.rand(rows, device=device) < 0.3):
            tensors = [args[i] for i in picked]
            want = on_picked_rows(mask, *_copy(tensors))
            torch.testing.assert_close(compiled(mask, *_copy(tensors)), want, rtol=0, atol=0, equal_nan=False)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_views_of_an_intermediate_at_a_symbolic_offset_compiled(backend, device):
    """Views of a buffer computed inside the compiled function, at a symbolic offset: inductor may hand the
    graph's check and the op fresh copies of such views, where no overlap shows, so the trace decides it.
    Apart views give what eager gives; overlapping ones are refused as eagerly, naming the op."""
    torch._dynamo.reset()
    compiled = torch.compile(functools.partial(_add_out_at, computed=True), fullgraph=True, backend=backend,
                             dynamic=True)
    for start, n in ((12, 9), (20, 7), (2, 9), (3, 5)):
        x, b = make_input((32,), torch.float32, device), make_input((n,), torch.float32, device)
        if start >= n:
            want = _add_out_at(x, b, start, computed=True)
            torch.testing.assert_close(compiled(x, b, start), want, rtol=0, atol=0)
            continue
        with pytest.raises(RuntimeError) as eager:
            _add_out_at(x, b, start, computed=True)
        with pytest.raises(RuntimeError) as refusal:
            compiled(x, b, start)
        assert str(eager.value) in str(refusal.value).replace("\\'", "'")


def _on_two_row_selections(x, residual, weight, x_rows, residual_rows) -> tuple:
    import my_ops

    x, residual = x[x_rows.nonzero().squeeze(-1)], residual[residual_rows.nonzero().squeeze(-1)]
    my_ops.fused_add_rms_norm(x, residual, weight, 1e-6)
    return x, residual


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_two_row_selections_compiled(backend, device):
    """x and residual picked by two masks: whether their row counts match, the trace cannot know (two unbacked
    sizes), so the op's shape rule is checked when the graph runs. Counts that match give what eager gives;
    counts that do not are refused as eagerly, naming the op."""
    torch._dynamo.reset()
    x, residual = make_input((8, 16), torch.float32, device), make_input((8, 16), torch.float32, device)
    weight = make_input((16,), torch.float32, device)
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        compiled = torch.compile(_on_two_row_selections, fullgraph=True, backend=backend)
        x_rows = torch.rand(8, device=device) < 0.5
        for residual_rows in (x_rows.flip(0), x_rows.roll(1)):  # (as many rows as x, other rows)
            want = _on_two_row_selections(x, residual, weight, x_rows, residual_rows)
            got = compiled(x, residual, weight, x_rows, residual_rows)
            torch.testing.assert_close(got, want, rtol=0, atol=0)
        residual_rows = x_rows.clone()
        residual_rows[int((~x_rows).nonzero()[0]) if not x_rows.all() else 0] ^= True  # (one row more, or less)
        with pytest.raises(RuntimeError) as eager:
            _on_two_row_selections(x, residual, weight, x_rows, residual_rows)
        with pytest.raises(RuntimeError) as refusal:
            compiled(x, residual, weight, x_rows, residual_rows)
    assert str(eager.value) in str(refusal.value).replace("\\'", "'")


def _rebased(args, buffer, other) -> list:
    """args with each view of `buffer` made the same view of `other`."""
    return [other.as_strided(a.shape, a.stride(), a.storage_offset())
            if isinstance(a, torch.Tensor) and a.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr()
            else a for a in args]
