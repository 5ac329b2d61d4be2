"""The call path of every op (the Python API calls torch.ops.my_ops.<op>): a
call that autograd has nothing to record for passes the op's Autograd kernel
to the kernel; a call with gradients records the op's graph node; torch.func
transforms record it level by level; forward-mode AD is refused; fake
tensors and torch.compile take the same path. (test_roads.py compares every
road's results and errors.)

Every op with the trait in its spec (tests/ops/specs/): `func` for the
Python-API tests, every op for the calls through torch.ops, `row_wise` for
rows read in place."""

from __future__ import annotations

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils.checkpoint import checkpoint

import my_ops
import specs
from conftest import INDUCTOR_ON_CPU, assert_matches, make_input
from my_ops import _rules, reference

FUNC = specs.where(func=True)


def _input(spec, dtype, device, batch=()):
    return make_input((*batch, *spec.input_shape), dtype, device)


@pytest.mark.parametrize("spec", FUNC, ids=repr)
@pytest.mark.parametrize("mode", ["no_grad", "grad, nothing requires grad", "inference_mode"])
def test_idle_autograd_results(spec, mode, device):
    x = _input(spec, torch.float32, device)
    args = spec.args_for(x)
    if mode != "grad, nothing requires grad":  # parameters that require grad, outside grad mode
        args = tuple(torch.nn.Parameter(a) if isinstance(a, torch.Tensor) else a for a in args)
    context = {"no_grad": torch.no_grad, "inference_mode": torch.inference_mode}.get(mode, torch.enable_grad)
    with context():
        out = spec.call(x, args)
    assert not out.requires_grad and out.grad_fn is None
    detached = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args)
    assert_matches(out, spec.ref(x, detached), torch.float32, scale=2)


@pytest.mark.parametrize("spec", FUNC, ids=repr)
def test_gradients_still_recorded(spec, device):
    x = _input(spec, torch.float64, device).requires_grad_()
    args = spec.args_for(x.detach())
    (grad,) = torch.autograd.grad(spec.call(x, args).sum(), x)
    x64 = x.detach().requires_grad_()
    (want,) = torch.autograd.grad(spec.ref(x64, args).sum(), x64)
    assert_matches(grad, want, torch.float64, scale=10)


@pytest.mark.parametrize("spec", FUNC, ids=repr)
@pytest.mark.parametrize("grad_mode", [True, False])
def test_forward_mode_ad_refused(spec, grad_mode, device):
    """The ops have no forward-mode formula: a dual tensor is refused, never
    answered with its tangent dropped."""
    x = _input(spec, torch.float32, device)
    args = spec.args_for(x)
    with torch.set_grad_enabled(grad_mode), fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.randn_like(x))
        with pytest.raises(RuntimeError, match=rf"my_ops.{spec.name}: forward-mode AD .* is not supported"):
            spec.call(dual, args)
    with pytest.raises(RuntimeError, match="forward-mode AD"):
        torch.func.jvp(lambda v: spec.call(v, args), (x,), (torch.randn_like(x),))
    with pytest.raises(RuntimeError, match="forward-mode AD"):  # forward over reverse
        torch.func.jacfwd(torch.func.grad(lambda v: spec.call(v, args).sum()))(x)


@pytest.mark.parametrize("spec", FUNC, ids=repr)
def test_linearize_refused(spec, device):
    """torch.func.linearize traces the forward-mode call with make_fx, where a
    kernel below torch's own Autograd kernel cannot read the tangent: refused
    as a dual tensor is (test_torch_compat.py runs it without the private
    names, where such a kernel checks), never answered with zero tangents."""
    x = _input(spec, torch.float64, device)
    args = spec.args_for(x)
    with pytest.raises(RuntimeError, match=rf"my_ops.{spec.name}: forward-mode AD .* is not supported"):
        torch.func.linearize(lambda v: spec.call(v, args), x)


def _second_order(fn, x, road):
    """The gradient of the sum of squares of x's gradient, taken within saved-tensor hooks (road "hooks":
    each saved tensor packed as a copy) or within a non-reentrant checkpoint, which sets such hooks."""
    def gradient_of_gradient(v):
        (grad,) = torch.autograd.grad(fn(v).pow(2).sum(), v, create_graph=True)
        return torch.autograd.grad(grad.pow(2).sum(), v, create_graph=True)[0]

    v = x.clone().requires_grad_()
    if road == "checkpoint":
        return checkpoint(gradient_of_gradient, v, use_reentrant=False)
    with torch.autograd.graph.saved_tensors_hooks(torch.clone, lambda packed: packed):
        return gradient_of_gradient(v)


@pytest.mark.parametrize("spec", FUNC, ids=repr)
@pytest.mark.parametrize("road", ["hooks", "checkpoint"])
def test_second_order_under_saved_tensor_hooks(spec, road, device):
    """Double backward under saved-tensor hooks (torch.func refuses to run
    under them: the backward formulas take autograd there), against the
    float64 reference."""
    x = _input(spec, torch.float64, device)
    args = spec.args_for(x)
    got = _second_order(lambda v: spec.call(v, args), x, road)
    want = _second_order(lambda v: spec.ref(v, args), x, road)
    assert want.abs().max() > 0
    assert_matches(got, want, torch.float64, scale=100)


@pytest.mark.parametrize("spec", FUNC, ids=repr)
@pytest.mark.parametrize("shape", [(3, 0), (0, 8), (0, 0)], ids=str)
def test_second_order_of_empty_inputs(spec, shape, device):
    """A gradient of a gradient of an input with no rows or rows of no elements is empty, as the reference's."""
    x = make_input(shape, torch.float64, device)
    args = spec.args_for(x)
    results = []
    for f in (spec.call, spec.ref):
        v = x.clone().requires_grad_()
        (grad,) = torch.autograd.grad(f(v, args).pow(2).sum(), v, create_graph=True)
        (second,) = torch.autograd.grad(grad.pow(2).sum(), v, allow_unused=True, materialize_grads=True)
        results.append(second)
    assert results[0].shape == results[1].shape == shape


def _dual_calls():
    """(spec, argument index): every tensor argument of every op, made dual in a call through torch.ops."""
    return [pytest.param(spec, i, id=f"{spec.id}-{name}")
            for spec in specs.ALL for i, (name, is_tensor) in enumerate(
                (a.name, str(a.type) == "Tensor") for a in spec.op._schema.arguments) if is_tensor]


def test_every_registered_op_has_a_spec():
    """Every op of torch.ops.my_ops from the C++ library has a spec (the
    Triton family, registered from Python on first use, has its own tests:
    test_triton_rms_norm.py; so has check_memory, the in-place ops' check in
    compiled graphs: test_roads.py)."""
    registered = {name for name in torch.ops.my_ops if hasattr(getattr(torch.ops.my_ops, name), "default")
                  and not name.startswith("triton_") and name != "check_memory"}
    # torch.ops.my_ops lists only the ops Python has looked up; the library lists all it registers
    registered |= set(_rules.op_names())
    assert registered == {spec.name for spec in specs.ALL}


@pytest.mark.parametrize("spec", specs.ALL, ids=repr)
def test_an_open_dual_level_without_tangents_changes_nothing(spec, device):
    """Under an open dual level, calls without tangents run as outside one: through fake tensors (the
    level's test unpacks one of the call's own tensors, never a tensor of another mode) and compiled."""
    args = list(spec.resolve(make_input((3, 8), torch.float32, device)))
    want = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    expected = spec.op(*want)
    torch.compiler.reset()  # (one lambda's code for every op: dynamo's recompile limit)
    with fwAD.dual_level():
        with FakeTensorMode() as mode:
            fake = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
            spec.op(*fake)
        got = torch.compile(lambda *a: spec.op(*a), fullgraph=True, backend="eager")(*args)
    torch.testing.assert_close(got, expected, equal_nan=False)
    for a, w in zip(args, want):
        if isinstance(a, torch.Tensor):
            torch.testing.assert_close(a, w, equal_nan=False)


@pytest.mark.parametrize("spec, index", _dual_calls())
def test_forward_mode_ad_refused_through_torch_ops(spec, index, device):
    """Also a call past the Python API (torch.ops.my_ops.<op>, as torch.compile
    and other libraries make it) refuses a dual tensor, mutating ops included."""
    args = list(spec.resolve(make_input((3, 8), torch.float32, device)))
    with fwAD.dual_level():
        args[index] = fwAD.make_dual(args[index].clone(), torch.randn_like(args[index]))
        with pytest.raises(RuntimeError, match=rf"my_ops.{spec.name}: forward-mode AD .* is not supported"):
            spec.op(*args)


def _first_and_second_order(fn, x):
    """Gradient and gradient of the gradient's sum of squares, by torch.func."""
    grad = torch.func.grad(lambda v: fn(v).pow(2).sum())
    return grad(x), torch.func.grad(lambda v: grad(v).pow(2).sum())(x)


@pytest.mark.parametrize("spec", FUNC, ids=repr)
def test_torch_func_transforms(spec, device):
    """torch.func.grad, vjp, jacrev and vmap over them, nested to second order,
    against the float64 reference (register_autograd alone fails here:
    pytorch#168393)."""
    x = make_input((3, 8), torch.float64, device)
    args = spec.args_for(x)
    fn, ref = (lambda v: spec.call(v, args)), (lambda v: spec.ref(v, args))
    got = _first_and_second_order(fn, x)
    want = _first_and_second_order(ref, x)
    for g, w in zip(got, want):
        assert_matches(g, w, torch.float64, scale=100)
    out, vjp = torch.func.vjp(fn, x)
    cotangent = torch.randn_like(out)
    assert_matches(vjp(cotangent)[0], torch.func.vjp(ref, x)[1](cotangent)[0], torch.float64, scale=10)
    xs = make_input((2, 3, 8), torch.float64, device)  # vmap over a batch of inputs
    row_args = spec.args_for(xs[0])
    jacobians = torch.vmap(torch.func.jacrev(lambda v: spec.call(v, row_args)))(xs)
    want = torch.vmap(torch.func.jacrev(lambda v: spec.ref(v, row_args)))(xs)
    assert_matches(jacobians, want, torch.float64, scale=10)


@pytest.mark.parametrize("spec", specs.where(differentiable=True), ids=repr)
def test_graph_node_names(spec):
    """One name for an op's graph node, whichever road recorded it."""
    x = torch.randn(spec.input_shape, dtype=torch.float64, requires_grad=True)
    nodes = []
    for call in (spec.api or spec.op), spec.op:
        out = call(*spec.resolve(x))
        nodes.append((out[0] if isinstance(out, tuple) else out).grad_fn.name())
    assert nodes == [f"{spec.name}_functionBackward"] * 2


def test_jit_trace_replays():
    """A torch.jit.trace of the Python API replays under torch.func and with an
    inference tensor, as the call itself runs."""
    x = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
    weight = torch.rand(8, dtype=torch.float64) + 0.5
    traced = torch.jit.trace(lambda a, b: my_ops.rms_norm(a, b, 1e-6), (x, weight), check_trace=False)
    got = torch.func.grad(lambda v: traced(v, weight).pow(2).sum())(x.detach())
    want = torch.func.grad(lambda v: reference.rms_norm(v, weight, 1e-6).pow(2).sum())(x.detach())
    assert_matches(got, want, torch.float64, scale=10)
    with torch.inference_mode():
        frozen = weight.clone()
    (grad,) = torch.autograd.grad(traced(x, frozen).pow(2).sum(), x)
    assert_matches(grad, want, torch.float64, scale=10)


@pytest.mark.parametrize("spec", FUNC, ids=repr)
def test_torch_func_through_torch_ops(spec):
    """torch.func over a call through torch.ops: the same road as the Python
    API (the op's Autograd kernel records its node at each torch.func level),
    to second order."""
    x = make_input((3, 8), torch.float64, "cpu")
    args = spec.args_for(x)
    got = _first_and_second_order(lambda v: spec.op(*spec.resolve(v, args)), x)
    want = _first_and_second_order(lambda v: spec.ref(v, args), x)
    for g, w in zip(got, want):
        assert_matches(g, w, torch.float64, scale=100)


def test_torch_func_inside_torch_compile_refused_or_right():
    """A torch.func transform over the ops inside torch.compile: where torch
    cannot trace it (2.13), the call is refused with a message that says so
    (dynamo shortens its middle: the end is asserted); where it can (2.11,
    2.12, 2.14, 2.15), the right gradient."""
    x = torch.randn(3, 8, dtype=torch.float64)
    weight = torch.rand(8, dtype=torch.float64) + 0.5
    torch._dynamo.reset()
    compiled = torch.compile(torch.func.grad(lambda v: my_ops.rms_norm(v, weight, 1e-6).sum()),
                             backend="inductor" if INDUCTOR_ON_CPU else "aot_eager")
    try:
        got = compiled(x)
    except Exception as error:  # noqa: BLE001  (whatever dynamo wraps it in)
        assert "compiling or exporting the function without the transform works" in str(error), error
        return
    want = torch.func.grad(lambda v: reference.rms_norm(v, weight, 1e-6).sum())(x)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("spec", FUNC, ids=repr)
def test_vmap_under_no_grad(spec, device):
    xs = _input(spec, torch.float32, device, batch=(3,))
    args = spec.args_for(xs[0])
    if any(isinstance(a, torch.Tensor) and a.requires_grad is False for a in args):
        args = tuple(a.requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                     for a in args)  # parameters, as the module's weight
    with torch.no_grad():
        out = torch.vmap(lambda v: spec.call(v, args))(xs)
    assert_matches(out, torch.stack([spec.ref(v, args) for v in xs]), torch.float32, scale=2)


def test_fake_tensors_under_no_grad():
    with FakeTensorMode(), torch.no_grad():
        out = my_ops.rms_norm(torch.empty(4, 8), torch.empty(8), 1e-6)
        assert out.shape == (4, 8)


# ------------------------------------------------------ rows read in place
def _copies(fn, rows: int = 6) -> set:
    """The copying aten ops that ran inside fn() over a tensor of at least
    `rows` rows (not the cast of a [hidden] result, such as rms_norm_backward's
    weight gradient from its float64 accumulator)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    return {e.name for e in prof.events()
            if e.name in ("aten::contiguous", "aten::clone", "aten::copy_")
            and any(len(shape) >= 2 and shape[0] >= rows for shape in e.input_shapes if isinstance(shape, list))}


def _row_slices(tensors, device):
    """Each tensor of 6 rows as a slice of wider rows of one buffer (8 elements
    between them), the others as they are."""
    rows = [a for a in tensors if isinstance(a, torch.Tensor) and a.dim() == 2 and a.shape[0] == 6]
    buffer = make_input((6, sum(a.shape[1] + 8 for a in rows) + 8), torch.float32, device)
    out, start = [], 8
    for a in tensors:
        if any(a is r for r in rows):
            out.append(buffer[:, start:start + a.shape[1]])
            start += a.shape[1] + 8
        else:
            out.append(a)
    return out


@pytest.mark.parametrize("spec", specs.where(row_wise=True), ids=repr)
def test_row_slices_read_in_place(spec, device):
    """Slices of wider rows (of one buffer) reach the kernels without a copy; a
    transposed view (rows not evenly spaced) is copied, which shows the check
    sees copies."""
    x = make_input((6, 32), torch.float32, device)
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in spec.resolve(x)]
    sliced = _row_slices(args, device)
    # (a `copied` argument becomes the result by a plain aten::copy_; a copy for the kernels'
    # sake is aten::contiguous's, still caught)
    expected = {"aten::copy_"} if spec.copied else set()
    with torch.no_grad():
        assert not _copies(lambda: (spec.api or spec.op)(*sliced)) - expected
        transposed = make_input((32, 6), torch.float32, device).t()
        assert _copies(lambda: (spec.api or spec.op)(transposed, *args[1:]))


def test_torch_function_handler_runs_with_autograd_under_no_grad():
    """A __torch_function__ handler runs before the dispatcher, with autograd
    as the caller has it: the Python API's short road must not switch it off."""
    seen = []

    class Recording(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            with torch.enable_grad():
                seen.append((torch.ones(2, requires_grad=True) * 3).requires_grad)
            return super().__torch_function__(func, types, args, kwargs or {})

    a = torch.randn(2, 8).as_subclass(Recording)
    with torch.no_grad():
        my_ops.mul(a, a)
    assert seen and all(seen)


def _with_a_second_tensor() -> list:
    return [s for s in specs.ALL if sum(isinstance(a, torch.Tensor) for a in s.resolve(torch.randn(3, 16))) >= 2]


@pytest.mark.parametrize("grad", [True, False], ids=["grad", "no_grad"])
@pytest.mark.parametrize("spec", _with_a_second_tensor(), ids=repr)
def test_none_for_a_tensor_through_torch_ops_names_the_argument(spec, grad):
    """None for the first tensor argument through torch.ops (as through the
    Python API) is refused with the op and the argument's name (every tensor
    argument on every road, the only one included: test_roads.py)."""
    args = list(spec.resolve(torch.randn(3, 16)))
    name = spec.argument_names()[0]
    args[0] = None
    with torch.set_grad_enabled(grad), pytest.raises(RuntimeError, match=rf"my_ops.{spec.name}: expected {name} "
                                                                         r"to be a tensor, but got None"):
        spec.op(*args)
