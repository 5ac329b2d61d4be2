"""Argument rules: one definition (beside each schema in C++), checked by the
real kernels and by the fake kernels alike; devices that do not match are
refused whichever kernel the dispatcher picks; overlap is decided exactly."""

from __future__ import annotations

import contextlib
import itertools
import math
import random
import re
import subprocess
import sys

import numpy
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import my_ops
import specs
from conftest import make_input, requires_cuda
from my_ops import _C, _rules, reference

OPS = torch.ops.my_ops


def _error(fn) -> str:
    with pytest.raises(RuntimeError) as info:
        fn()
    return str(info.value)


def _t(*shape, dtype=torch.float32, device="cpu"):
    return torch.randn(shape, dtype=torch.float64, device=device).to(dtype)


# Each case: a spec's bad call (tests/ops/specs/), made on a given device, that breaks one rule.
BAD_CALLS = [pytest.param(spec, bad, id=f"{spec.id} {bad.name}", marks=specs.tier(spec, bad.name))
             for spec, bad in specs.bad_calls()]


@pytest.mark.parametrize("spec, bad", BAD_CALLS)
def test_fake_kernel_refuses_what_the_real_kernel_refuses(spec, bad):
    """The same call on CPU tensors (C++ checks), on meta tensors and under
    FakeTensorMode (the Python fake kernel) fails with the same message, the
    spec's."""
    args = bad.make("cpu")
    real = _error(lambda: spec.op(*args))
    assert real.startswith(f"my_ops.{spec.name}: "), real
    assert re.search(bad.message, real), (bad.message, real)
    meta_args = bad.make("meta")
    assert _error(lambda: spec.op(*meta_args)) == real
    with FakeTensorMode() as mode:
        fake_args = _fake(mode, args)
        assert _error(lambda: spec.op(*fake_args)) == real


def _fake(mode, args):
    """Fake copies of args; views of one tensor stay views of one fake tensor."""
    bases = {}
    out = []
    for a in args:
        if isinstance(a, torch.Tensor) and a._base is not None:
            base = bases.setdefault(id(a._base), mode.from_tensor(a._base))
            out.append(base.as_strided(a.shape, a.stride(), a.storage_offset()))
        else:
            out.append(mode.from_tensor(a) if isinstance(a, torch.Tensor) else a)
    return out


@pytest.mark.parametrize("spec, bad", BAD_CALLS)
def test_bad_call_refused_untouched(spec, bad, device):
    """Through the Python API (torch.ops where the op has none), on each
    device: refused with the spec's message, nothing written."""
    args = bad.make(device)
    before = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
    message = _error(lambda: (spec.api or spec.op)(*args))
    assert message.startswith(f"my_ops.{spec.name}: "), message
    assert re.search(bad.message, message), (bad.message, message)
    for a, b in zip(args, before):
        if isinstance(a, torch.Tensor) and a.dtype.is_floating_point:
            assert torch.equal(a.detach(), b), "written before refusing"


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2, torch.uint16, torch.uint32])
def test_newer_dtypes_named(dtype):
    """The kernels name every dtype the stable ABI passes them, as the fake kernels do."""
    x = torch.empty(4, 8, dtype=dtype)
    message = _error(lambda: torch.ops.my_ops.silu_and_mul(x))
    assert message.endswith(f"but got {dtype}"), message
    assert _error(lambda: torch.ops.my_ops.silu_and_mul(torch.empty(4, 8, dtype=dtype, device="meta"))) == message


def test_compile_fails_at_trace_time_with_the_kernels_message():
    torch._dynamo.reset()
    fn = torch.compile(lambda x, w: my_ops.rms_norm(x, w), fullgraph=True, backend="aot_eager")
    with pytest.raises(Exception, match=r"my_ops.rms_norm: expected weight to have shape \[8\] "
                                        r"\(the last dimension of x\), but got \[7\]"):
        fn(torch.randn(4, 8), torch.randn(7))


def test_every_op_has_rules_from_the_library():
    # the Triton family is registered from Python (triton_op) and checks its own arguments; so is
    # check_memory, the in-place ops' overlap check in compiled graphs (_mutating.py)
    registered = {name.split("::")[1] for name in torch._C._dispatch_get_all_op_names()
                  if name.startswith("my_ops::") and not name.startswith("my_ops::triton_")} - {"check_memory"}
    assert registered == {spec.name for spec in specs.ALL}
    assert set(_rules.op_names()) == registered
    for name in _rules.op_names():
        params = _rules.rules(name)
        schema = getattr(OPS, name).default._schema
        assert [p.name for p in params] == [a.name for a in schema.arguments]


# ----------------------------------------------------------- mixed devices
def _mixed_calls():
    """Every tensor argument of every op that must be on the device of another
    (a `like` rule), on another device: (spec, argument, the other argument)."""
    first = {}
    for spec in specs.ALL:  # one spec of each op
        first.setdefault(spec.name, spec)
    return [pytest.param(spec, param.name, clause.ref, id=f"{spec.name}-{param.name}")
            for spec in first.values()
            for param in _rules.rules(spec.name) for clause in param.clauses if clause.key == "like"]


@pytest.mark.parametrize("other", ["meta"] + (["cuda"] if torch.cuda.is_available() else []))
@pytest.mark.parametrize("spec, argument, anchor", _mixed_calls())
def test_mixed_devices_are_refused_whichever_kernel_runs(spec, argument, anchor, other):
    """Refused, naming the argument, and nothing written (through the Python API too)."""
    for call in filter(None, (spec.api, spec.op)):
        args = list(spec.resolve(_t(4, 8)))
        index = spec.argument_names().index(argument)
        args[index] = args[index].to(other)
        before = [a.clone() for a in args if isinstance(a, torch.Tensor) and a.device.type == "cpu"]
        message = _error(lambda: call(*args))
        assert message.startswith(f"my_ops.{spec.name}: expected {argument} to be on the same device as "
                                  f"{anchor} (cpu)"), message
        assert f"but got {other}" in message
        after = [a for a in args if isinstance(a, torch.Tensor) and a.device.type == "cpu"]
        assert all(torch.equal(a, b) for a, b in zip(after, before)), "written before refusing"


# ------------------------------------------------------------ layouts
@pytest.mark.parametrize("kind", ["sparse_coo", "sparse_csr", "nested"])
def test_unsupported_layouts_name_the_argument(kind):
    x = torch.randn(4, 8)
    if kind == "nested":
        bad = torch.nested.nested_tensor([torch.randn(2, 8), torch.randn(3, 8)])
        expected = "but got a nested tensor"
    else:
        bad = x.to_sparse() if kind == "sparse_coo" else x.to_sparse_csr()
        expected = f"but got layout torch.{kind}"
    assert _error(lambda: my_ops.rms_norm(bad, torch.ones(8))) == \
        f"my_ops.rms_norm: expected x to be a dense (strided) tensor, {expected}"
    assert _error(lambda: my_ops.mul(x, bad)) == f"my_ops.mul: expected b to be a dense (strided) tensor, {expected}"


# ------------------------------------------------------------ overlap
@pytest.mark.parametrize("layout", ["interleaved", "row halves"])
def test_fused_add_accepts_views_of_one_buffer_that_share_no_element(layout, device):
    buf = make_input((6, 32), torch.float32, device)
    if layout == "interleaved":
        x, residual = buf[:, ::2], buf[:, 1::2]
    else:
        x, residual = buf[:, :16], buf[:, 16:]
    w = make_input((16,), torch.float32, device, low=0.5, high=1.5)
    want_residual = (x.double() + residual.double())
    want_x = reference.rms_norm(want_residual, w, 1e-6)
    my_ops.fused_add_rms_norm(x, residual, w, 1e-6)
    torch.testing.assert_close(residual.double(), want_residual, rtol=2e-5, atol=2e-5)
    torch.testing.assert_close(x.double(), want_x, rtol=2e-5, atol=2e-5)


def test_views_of_one_buffer_in_two_dtypes_are_judged_by_their_bytes():
    """A float32 weight beside a bfloat16 residual may be views of one
    storage: whether they overlap is a matter of bytes, not of element
    offsets in two sizes. The fake kernels (meta) refuse exactly the calls
    the real ones (the C++ rules) refuse, with the same message, for every
    placement of the two views in a buffer; so does the compiled graphs'
    check_memory node, on the CPU tensors."""
    verdicts = set()
    for w_at in range(0, 24, 3):            # the weight's first float32 element
        for r_at in range(0, 64, 5):        # the residual's first bfloat16 element
            results = []
            for device in ("cpu", "meta"):
                buf = torch.zeros(64, dtype=torch.float32, device=device)
                weight, residual = buf[w_at:w_at + 8], buf.view(torch.bfloat16)[r_at:r_at + 32].view(4, 8)
                x = torch.zeros(4, 8, dtype=torch.bfloat16, device=device)
                results.append(_verdict(lambda: OPS.fused_add_rms_norm.default(x, residual, weight, 1e-6)))
                if device == "cpu":
                    results.append(_verdict(lambda: _rules.check_memory("fused_add_rms_norm",
                                                                            [x, residual, weight])))
            assert len(set(results)) == 1, (w_at, r_at, results)
            verdicts.add(results[0] is None)
    assert verdicts == {True, False}  # (both overlapping and apart placements were met)


def test_add_out_accepts_an_interleaved_out(device):
    buf = make_input((4, 16), torch.float32, device)
    a, out = buf[:, ::2], buf[:, 1::2]
    b = make_input((4, 8), torch.float32, device)
    want = a.double() + b.double()
    my_ops.add_out(a, b, out)
    torch.testing.assert_close(out.double(), want, rtol=2e-5, atol=2e-5)


def _brute_force_overlap(a, b=None) -> bool:
    """Whether views overlap, by listing every element's bytes."""
    def spans(view):
        sizes, strides, size, start = view
        for index in itertools.product(*(range(n) for n in sizes)):
            offset = start + size * sum(i * s for i, s in zip(index, strides))
            yield offset, offset + size

    if b is None:
        seen = set()
        for begin, _ in spans(a):
            if begin in seen:
                return True
            seen.add(begin)
        return False
    bytes_a = {x for lo, hi in spans(a) for x in range(lo, hi)}
    return any(x in bytes_a for lo, hi in spans(b) for x in range(lo, hi))


def _random_view(rng: random.Random):
    dim = rng.randint(1, 3)
    sizes = tuple(rng.randint(1, 4) for _ in range(dim))
    strides = tuple(rng.choice([0, 1, 2, 3, 4, 5, 8, 12]) for _ in range(dim))
    size = rng.choice([2, 4])
    return sizes, strides, size, size * rng.randint(0, 12)


def test_overlap_is_exact_against_brute_force():
    rng = random.Random(torch.randint(0, 2**31, ()).item())
    for _ in range(3000):
        a = _random_view(rng)
        internal = _C.overlap(a)
        assert internal in (0, 1) and bool(internal) == _brute_force_overlap(a), a
        b = _random_view(rng)
        b = (b[0], b[1], a[2], b[3])  # the ops compare tensors of one dtype
        pair = _C.overlap(a, b)
        assert pair in (0, 1) and bool(pair) == _brute_force_overlap(a, b), (a, b)


def test_views_apart_in_one_period_share_no_byte():
    """_apart_in_one_period, which lets two views of one shape and strides keep symbolic sizes under compile,
    calls no overlapping pair apart (every element's bytes listed), and does call apart pairs apart: column
    halves of rows, interleaved columns and others among random views of one buffer."""
    rng = random.Random(torch.randint(0, 2**31, ()).item())
    said_apart = 0
    for _ in range(3000):
        sizes = [rng.randint(1, 5) for _ in range(rng.randint(1, 3))]
        strides = [rng.choice([0, *range(1, 13)]) for _ in sizes]
        dtype = rng.choice([torch.float32, torch.bfloat16, torch.float64])
        base = torch.zeros(sum((n - 1) * s for n, s in zip(sizes, strides)) + 24, dtype=dtype)
        first, second = rng.sample(range(24), 2)
        a, b = base.as_strided(sizes, strides, first), base.as_strided(sizes, strides, second)
        if _rules._apart_in_one_period(a, b):
            said_apart += 1
            size = base.element_size()
            assert not _brute_force_overlap((sizes, strides, size, first * size),
                                            (sizes, strides, size, second * size)), (sizes, strides, dtype, first,
                                                                                     second)
    assert said_apart > 300
    rows = torch.zeros(6, 16)
    assert _rules._apart_in_one_period(rows[:, :8], rows[:, 8:])
    assert _rules._apart_in_one_period(rows[:, ::2], rows[:, 1::2])
    assert not _rules._apart_in_one_period(rows[:, :8], rows[:, 4:12])
    assert not _rules._apart_in_one_period(rows[0].expand(6, 16), rows[1].expand(6, 16))  # (broadcast rows)


def test_import_my_ops_leaves_sympy_unloaded():
    """The rules load torch's symbolic-shape module (and sympy, about half a second) only where a trace has:
    importing my_ops adds neither to what importing torch loads."""
    code = ("import sys, torch\n"
            "before = {m for m in ('sympy', 'torch.fx.experimental.symbolic_shapes') if m in sys.modules}\n"
            "import my_ops, my_ops._rules\n"
            "after = {m for m in ('sympy', 'torch.fx.experimental.symbolic_shapes') if m in sys.modules}\n"
            "assert after <= before, f'loaded by my_ops: {sorted(after - before)}'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def test_overlap_of_large_interleaved_and_sliced_views_is_decided_quickly():
    e = 2  # bfloat16
    rows, width = 32768, 8192
    x = ((rows, width // 2), (width, 2), e, 0)
    r = ((rows, width // 2), (width, 2), e, e)
    assert _C.overlap(x, r) == 0 and _C.overlap(x) == 0
    q = ((rows, 4096), (width, 1), e, 0)
    k = ((rows, 4096), (width, 1), e, 4096 * e)
    assert _C.overlap(q, k) == 0
    k_shifted = ((rows, 4096), (width, 1), e, 4095 * e)
    assert _C.overlap(q, k_shifted) == 1


def _memory_pool() -> list:
    """[4, 4] float32 arguments for the memory clauses: views of one buffer
    (apart, overlapping, the same view as another object, strided, expanded,
    transposed), another buffer, and tensors of another storage object over
    the buffer's own memory (torch.from_numpy)."""
    buf, other = torch.randn(64), torch.randn(64)
    alias = torch.from_numpy(buf.numpy())
    assert alias.untyped_storage() is not buf.untyped_storage() and alias.data_ptr() == buf.data_ptr()
    return [buf[:16].view(4, 4), buf[16:32].view(4, 4), buf[8:24].view(4, 4), buf[:16].view(4, 4),
            buf[::2][:16].view(4, 4), buf[1::2][:16].view(4, 4), buf[:4].expand(4, 4), buf[:16].view(4, 4).t(),
            other[:16].view(4, 4), alias[:16].view(4, 4), alias[4:20].view(4, 4)]


def _verdict(fn) -> str | None:
    try:
        fn()
    except RuntimeError as e:
        return str(e)
    return None


@pytest.mark.parametrize("op", ["fused_add_rms_norm", "add_out"])
def test_python_memory_rules_give_the_cpp_rules_verdict(op):
    """The Python rules (the compiled graphs' check_memory node, vmap's
    road) refuse, with the same message, exactly the calls the C++ rules of
    an eager call refuse, for every choice of _memory_pool's arguments (and
    of weights over the same memory): views of one buffer and tensors of
    other storage objects over its memory (torch.from_numpy), which the
    rules compare by their bytes."""
    pool = _memory_pool()
    if op == "fused_add_rms_norm":
        buf, alias = pool[0]._base, pool[-1]._base
        weights = [buf[:4], buf[14:18], buf[40:44], buf[::16], alias[2:6], torch.ones(4)]
        calls = [(x, r, w, 1e-6) for x, r, w in itertools.product(pool, pool, weights)]
    else:
        calls = list(itertools.product(pool, repeat=3))
    refused = 0
    for args in calls:
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        eager = _verdict(lambda: getattr(OPS, op).default(*args))
        refused += eager is not None
        assert _verdict(lambda: _rules.check_memory(op, tensors)) == eager, args
    assert 0 < refused < len(calls)


def test_compiled_in_place_op_refuses_aliases_of_one_memory():
    """Two tensors of distinct storage objects over one array (torch.from_numpy
    twice) that overlap: refused under torch.compile as in eager mode, where
    the compiled graph's functional form would otherwise write copies and
    never show the op the overlap; apart ones pass."""
    array = numpy.zeros(64, dtype=numpy.float32)
    a, b = torch.from_numpy(array), torch.from_numpy(array)
    compiled = torch.compile(lambda x, r, w: my_ops.fused_add_rms_norm(x, r, w, 1e-6), backend="aot_eager",
                             fullgraph=True)
    with torch.no_grad():
        with pytest.raises(RuntimeError, match="x and residual must not share memory, but they overlap"):
            compiled(a[:32].view(4, 8), b[4:36].view(4, 8), torch.ones(8))
        compiled(a[:32].view(4, 8), b[32:].view(4, 8), torch.ones(8))


def test_check_memory_called_directly_names_what_it_expected():
    """torch.ops.my_ops.check_memory is public through torch.ops: a list of
    another length than the op's tensor arguments, or an op without rules,
    is refused naming what was expected."""
    x = _t(2, 4)
    for tensors in ([x], [x, x.clone(), _t(4), None]):
        with pytest.raises(RuntimeError, match=r"^my_ops.check_memory: expected tensors to hold "
                                               r"my_ops.fused_add_rms_norm's 3 tensor arguments in order "
                                               rf"\(None for an absent one\), but got {len(tensors)}$"):
            OPS.check_memory("fused_add_rms_norm", tensors)
    with pytest.raises(RuntimeError, match=r"^my_ops.check_memory: expected op to name a my_ops op with "
                                           r"argument rules \(.*fused_add_rms_norm.*\), but got 'nope'$"):
        OPS.check_memory("nope", [x])
    nested = torch.nested.nested_tensor([_t(2), _t(3)], layout=torch.jagged)
    for odd, got in ((x.to_sparse(), "layout torch.sparse_coo"), (nested, "a nested tensor"),
                     (torch.quantize_per_tensor(x, 0.1, 0, torch.qint8), r"a quantized tensor \(torch.qint8\)")):
        with pytest.raises(RuntimeError, match=rf"^my_ops.check_memory: expected tensors to be dense \(strided\) "
                                               rf"tensors, but got {got}$"):
            OPS.check_memory("fused_add_rms_norm", [odd, x.clone(), _t(4)])


def test_memory_steps_follow_the_clauses_in_order():
    """fused_add_rms_norm's memory clauses, as check() meets them."""
    assert _rules.memory_steps("fused_add_rms_norm") == (
        (0, "x", "written", "", None), (1, "residual", "written", "", None), (1, "residual", "apart", "x", 0),
        (2, "weight", "apart", "x", 0), (2, "weight", "apart", "residual", 1))
    assert _rules.memory_steps("add_out") == (
        (2, "out", "written", "", None), (2, "out", "apart_or_same", "a", 0), (2, "out", "apart_or_same", "b", 1))


@requires_cuda()
def test_cuda_views_of_one_buffer(device="cuda"):
    test_fused_add_accepts_views_of_one_buffer_that_share_no_element("interleaved", device)


# ------------------------------------------------- mutating ops and autograd
@pytest.mark.parametrize("dispatcher", ["", "python_dispatcher"])
@pytest.mark.parametrize("through", ["api", "torch_ops"])
@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference_mode"])
@pytest.mark.parametrize("spec", specs.where(mutates=True), ids=repr)
def test_mutating_ops_bump_version_counters(spec, mode, through, dispatcher):
    """The written arguments' version counters, and only theirs, on either road, bumped once also under
    torch's Python dispatcher (torch.compile's and torch.export's tracing), which calls a kernel with the
    keys above its own unmasked: a redispatch past the highest key alone ran the kernel twice."""
    from torch._dispatch.python import enable_python_dispatcher

    args = spec.resolve(_t(4, 8))
    names = spec.argument_names()
    context = {"grad": torch.enable_grad, "no_grad": torch.no_grad, "inference_mode": torch.inference_mode}[mode]
    versions = [a._version if isinstance(a, torch.Tensor) else None for a in args]
    with context(), (enable_python_dispatcher() if dispatcher else contextlib.nullcontext()):
        (spec.api if through == "api" else spec.op)(*args)
    for name, a, version in zip(names, args, versions):
        if isinstance(a, torch.Tensor):
            assert a._version == version + (name in spec.mutates), name


def test_overwriting_a_tensor_autograd_saved_is_detected():
    saved = _t(4, 8)
    w = _t(8).requires_grad_()
    loss = (saved * w).sum()  # mul saves `saved` for w's gradient
    with torch.no_grad():
        my_ops.fused_add_rms_norm(saved, _t(4, 8), _t(8))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_fake_kernels_accept_views_of_one_buffer_that_share_no_element():
    """The overlap rules hold while tracing too (the bad calls of the specs,
    on meta and fake tensors); views that share no element pass."""
    buf = torch.empty(4, 16, device="meta")
    OPS.fused_add_rms_norm.default(buf[:, ::2], buf[:, 1::2], torch.ones(8, device="meta"), 1e-6)


def _scale_arguments() -> list:
    """(spec, argument): every tensor argument with a `scale=` rule."""
    return [pytest.param(spec, p.name, id=f"{spec.id}-{p.name}") for spec in specs.ALL
            for p in _rules.rules(spec.name) if any(c.key == "scale" for c in p.clauses)]


@pytest.mark.parametrize("spec, argument", _scale_arguments())
def test_a_scale_of_another_dtype_is_named_by_its_own_rule(spec, argument):
    """An integer scale is refused with the scale's own rule (a float32
    tensor of one element), not the float dtypes every other tensor may
    have, which a float64 scale would then break; real, meta and fake
    kernels alike."""
    names = spec.argument_names()
    args = list(spec.resolve(_t(4, 16)))
    args += [None] * (len(names) - len(args))
    args[names.index(argument)] = torch.tensor([1])
    message = (rf"^my_ops\.{spec.name}: expected {argument} to be a float32 tensor of one element, "
               r"but got a torch\.int64 tensor of shape \[1\]$")
    assert re.search(message, _error(lambda: spec.op(*args)))
    meta = [a.to("meta") if isinstance(a, torch.Tensor) else a for a in args]
    assert re.search(message, _error(lambda: spec.op(*meta)))
    with FakeTensorMode() as mode:
        fake = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        assert re.search(message, _error(lambda: spec.op(*fake)))


# ----------------------------------------------------------- the rule language's kinds
_KINDS = "q(Tensor? bias, int group_size, int? bits, bool transpose, bool? fast, float? eps, str mode) -> ()"
_KIND_RULES = "group_size: >=1; bits: >=2; eps: eps=bias; mode: one_of=row|col"
_GOOD = dict(bias=None, group_size=128, bits=None, transpose=True, fast=None, eps=None, mode="row")
_XY = "q(Tensor x, Tensor y) -> ()"  # (for malformed texts: a value is read only once the text is)

# (schema, rules, the arguments that differ from _GOOD) -> the refusal both readers give, or "".
RULE_TEXTS = [
    (_KINDS, _KIND_RULES, {}, ""),
    (_KINDS, _KIND_RULES, dict(group_size=1, bits=2, transpose=False, fast=True, eps=0.0, mode="col"), ""),
    (_KINDS, _KIND_RULES, dict(group_size=0), "my_ops.q: expected group_size to be >= 1, but got 0"),
    (_KINDS, _KIND_RULES, dict(group_size=-7), "my_ops.q: expected group_size to be >= 1, but got -7"),
    (_KINDS, _KIND_RULES, dict(bits=1), "my_ops.q: expected bits to be >= 2, but got 1"),
    (_KINDS, _KIND_RULES, dict(eps=-0.5), "my_ops.q: expected eps to be a finite number >= 0, but got -0.5"),
    (_KINDS, _KIND_RULES, dict(eps=math.nan), "my_ops.q: expected eps to be a finite number >= 0, but got nan"),
    # eps outside float32's range, in which the kernels add it (0 or inf there), and its ends
    *[(_KINDS, _KIND_RULES, dict(eps=eps), "my_ops.q: expected eps to be 0 or from 1.4e-45 to 3.4e+38 (float32's "
       f"range, in which the kernels add it to bias of 16 or 32 bits), but got {text}") for eps, text in (
           (1e-50, "1e-50"), (7e-46, "7e-46"), (1e39, "1e+39"), (3.41e38, "3.41e+38"))],
    *[(_KINDS, _KIND_RULES, dict(eps=eps), "") for eps in (0.0, 2.0 ** -149, 3.4028234663852886e38)],
    (_KINDS, _KIND_RULES, dict(mode="tile"), "my_ops.q: expected mode to be 'row' or 'col', but got 'tile'"),
    (_KINDS, _KIND_RULES, dict(bias=None, group_size=0, bits=1),  # the first broken rule, in argument order
     "my_ops.q: expected group_size to be >= 1, but got 0"),
    ("q(Tensor bias) -> ()", "", dict(bias=None), "my_ops.q: expected bias to be a tensor, but got None"),
    ("q(bool flag) -> ()", "flag: >=1", {}, "bad definition: clause '>=1' does not apply to the bool argument 'flag'"),
    ("q(int n) -> ()", "n: eps", {}, "bad definition: clause 'eps' does not apply to the int argument 'n'"),
    ("q(float e) -> ()", "e: >=0", {}, "bad definition: clause '>=0' does not apply to the float argument 'e'"),
    ("q(Tensor x, int n) -> ()", "n: like=x", {},
     "bad definition: clause 'like=x' does not apply to the int argument 'n'"),
    ("q(int? n) -> ()", "n: one_of=a|b", {},
     "bad definition: clause 'one_of=a|b' does not apply to the int argument 'n'"),
    ("q(int n) -> ()", "n: positive", {}, "bad definition: unknown clause 'positive'"),
    ("q(int n) -> ()", "m: >=1", {}, "bad definition: rules name an unknown argument 'm'"),
    ("q(int n) -> ()", "n >=1", {}, "bad definition: rule without 'arg:': n >=1"),
    ("q(int[] sizes) -> ()", "", {}, "bad definition: argument 'sizes' has a type the rules do not take "
     "(Tensor, float, int, bool or str, each optionally with ?)"),
    # a rule's integer is the whole word (the C++ reader once took atoll's prefix: 'abc' as 0)
    ("q(int n) -> ()", "n: >=abc", {}, "bad definition: 'abc' is not an integer"),
    ("q(int n) -> ()", "n: >=", {}, "bad definition: '' is not an integer"),
    ("q(int n) -> ()", "n: >=1>=2", {}, "bad definition: '1>=2' is not an integer"),
    ("q(int n) -> ()", "n: >=1.5", {}, "bad definition: '1.5' is not an integer"),
    ("q(Tensor x) -> ()", "x: dim=two", {}, "bad definition: 'two' is not an integer"),
    # an alias annotation keeps the optional mark: "Tensor(a!)?" is an optional tensor
    ("q(Tensor(a!)? out) -> ()", "", dict(out=None), ""),
    ("q(Tensor(a!) out) -> ()", "", dict(out=None), "my_ops.q: expected out to be a tensor, but got None"),
    # a bool for an int is the number the dispatcher makes of it, written as a number by both readers
    (_KINDS, _KIND_RULES, dict(group_size=False), "my_ops.q: expected group_size to be >= 1, but got 0"),
    (_KINDS, _KIND_RULES, dict(group_size=True), ""),
    # one_of= names at least one word, none empty
    ("q(str s) -> ()", "s: one_of=", dict(s="c"), "bad definition: clause 'one_of=' needs words separated by '|', "
     "none empty"),
    ("q(str s) -> ()", "s: one_of=a||b", dict(s="c"), "bad definition: clause 'one_of=a||b' needs words separated "
     "by '|', none empty"),
    ("q(str s) -> ()", "s: one_of=a|", dict(s="c"), "bad definition: clause 'one_of=a|' needs words separated "
     "by '|', none empty"),
    ("q(str s) -> ()", "s: one_of=a", dict(s="c"), "my_ops.q: expected s to be 'a', but got 'c'"),
    # two arguments of one name (torch's schema parser takes them)
    ("q(int n, float n) -> ()", "", {}, "bad definition: two arguments named 'n'"),
    # each clause in its own forms only: a clause that compares with an argument names one
    *[(_XY, f"x: {word}", {}, f"bad definition: clause '{word}' needs an argument to compare with: {forms}")
      for word, forms in [
          ("like", "like=<argument>"), ("like=", "like=<argument>"), ("like=last(y)", "like=<argument>"),
          ("like_or_wider", "like_or_wider=<argument>"), ("apart", "apart=<argument>"),
          ("apart_or_same", "apart_or_same=<argument>"), ("scale", "scale=<argument>"),
          ("rows", "rows=cols(<argument>)"), ("rows=y", "rows=cols(<argument>)"),
          ("rows=cols()", "rows=cols(<argument>)"),
          *[(word, "shape=<argument>, shape=last(<argument>) or shape=half(<argument>)") for word in (
              "shape", "shape=first(y)", "shape=last(y", "shape=last(half(y))", "shape=(y)", "shape=y)")]]],
    (_XY, "x: rows=cols(z)", {}, "bad definition: rules name an unknown argument 'z'"),
    (_XY, "x: like=z", {}, "bad definition: rules name an unknown argument 'z'"),
    (_XY, "x: near=z", {}, "bad definition: unknown clause 'near=z'"),
    ("q(Tensor x, int n) -> ()", "x: like=n", {},
     "bad definition: clause 'like=n' compares with the int argument 'n': it needs a tensor argument"),
    ("q(Tensor x, float e) -> ()", "x: shape=last(e)", {},
     "bad definition: clause 'shape=last(e)' compares with the float argument 'e': it needs a tensor argument"),
    # ... a clause that takes no value takes none
    (_XY, "x: even=y", {}, "bad definition: clause 'even=y' takes no value: even"),
    (_XY, "x: written=y", {}, "bad definition: clause 'written=y' takes no value: written"),
    (_XY, "x: written=", {}, "bad definition: clause 'written=' takes no value: written"),
    ("q(Tensor x, float e) -> ()", "e: eps", {},
     "bad definition: clause 'eps' needs an argument to compare with: eps=<argument>"),
    # ... a number is a whole integer (the C++ reader once read `dim=f(3)` as `dim=3`)
    (_XY, "x: dim", {}, "bad definition: clause 'dim' needs a number: dim=<N>"),
    (_XY, "x: dim=", {}, "bad definition: '' is not an integer"),
    (_XY, "x: dim=f(3)", {}, "bad definition: 'f(3)' is not an integer"),
    (_XY, "x: dim>=f(1)", {}, "bad definition: 'f(1)' is not an integer"),
    # ... and one_of's words follow its '='
    ("q(str s) -> ()", "s: one_of", dict(s="c"), "bad definition: clause 'one_of' needs words separated by '|', "
     "none empty"),
    # every form each clause takes, on arguments that are None (where every clause passes)
    ("q(Tensor? x, Tensor? y, float? e, int? n, str? s) -> ()",
     "x: like=y like_or_wider=y dim>=1 dim=2 shape=y shape=last(y) shape=half(y) even rows=cols(y) written "
     "apart=y apart_or_same=y scale=y; e: eps=x; n: >=1; s: one_of=a|b", dict(x=None, y=None, e=None, n=None, s=None),
     ""),
]


def _python_reader(schema: str, text: str, values: list) -> str:
    try:
        params = _rules.parse(torch._C.parse_schema(schema).arguments, text)
        _rules.check("q", *values, params=params)
    except ValueError as bad:
        return f"bad definition: {bad}"
    except RuntimeError as refused:
        return str(refused)
    return ""


@pytest.mark.parametrize("schema, text, changed, expected", RULE_TEXTS, ids=[r[3] or "accepted" for r in RULE_TEXTS])
def test_both_rule_readers_take_the_same_texts_and_values(schema, text, changed, expected):
    """The C++ reader (op_rules.cpp, through _C.check_rules) and the Python one
    (_rules.py) on rule texts of no op, with scalar arguments of every kind: the
    same values accepted, the same refused with the same message, the same
    malformed texts refused (the C++ reader aborts loading on those)."""
    arguments = torch._C.parse_schema(schema).arguments
    values = [changed.get(a.name, _GOOD.get(a.name, 1)) for a in arguments]
    assert _C.check_rules(schema, text, _as_text(arguments, values)) == expected
    assert _python_reader(schema, text, values) == expected


def _as_text(arguments, values) -> str:
    """values as _C.check_rules reads them, one a line: a bool for an int as
    the number the dispatcher makes of it before any check sees it."""
    def text(argument, v):
        if isinstance(v, bool) and str(argument.type) in ("int", "Optional[int]"):
            return str(int(v))
        return repr(v) if isinstance(v, float) else str(v)

    return "\n".join(text(a, v) for a, v in zip(arguments, values))


@pytest.mark.parametrize("schema, expected", [
    ("q(int) -> ()", "bad definition: argument 'int' needs a type and a name"),
    ("q(Tensor x, float) -> ()", "bad definition: argument 'float' needs a type and a name"),
])
def test_the_cpp_reader_refuses_an_argument_without_a_name(schema, expected):
    """(The Python reader takes torch's parsed schema, which refuses it first.)"""
    assert _C.check_rules(schema, "", "1") == expected
    with pytest.raises(RuntimeError, match="expected ident"):
        torch._C.parse_schema(schema)


@pytest.mark.parametrize("kind, text", [
    ("int", "abc"), ("int", "1.5"), ("int", "7abc"), ("int", " 7"), ("int", "99999999999999999999"),
    ("bool", "yes"), ("bool", "1"), ("bool", "true"), ("float", "abc"), ("float", "1.5x"),
])
def test_check_rules_reports_a_value_it_cannot_read(kind, text):
    """A value of _C.check_rules that its argument's kind cannot read, whole,
    is named as such: not taken by its prefix, not a bad definition."""
    assert _C.check_rules(f"q({kind} v) -> ()", "", text) == f"bad value '{text}' for the {kind} argument 'v'"


@pytest.mark.parametrize("kind, text", [("int", "-9223372036854775808"), ("int", "+3"), ("bool", "False"),
                                        ("float", "inf"), ("float", "-0.0"), ("float", "1e-300")])
def test_check_rules_reads_every_value_python_writes(kind, text):
    assert _C.check_rules(f"q({kind} v) -> ()", "", text) == ""
