"""The functional routes of the ops that write their arguments
(docs/deploying.md, "When an op refuses inside a package"): while exporting,
torch's functionalization replaces fused_add_rms_norm by
my_ops::fused_add_rms_norm_functional (new x and residual), add_out by
my_ops::add_out_functional (a + b) and the fused fp8 ops by theirs (their
outputs and the new residual), and copies the results back, so that inside an
AOTInductor package a refusal leaves undefined outputs, which stop the call,
and the op's memory rules see the caller's tensors, not the copies torch's own
functionalization would give the op. Whoever calls the op takes it (the Python
API and torch.ops.my_ops alike); torch.compile keeps the op in place, with no
copies. test_aoti.py runs the packages themselves.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch
from torch._inductor.utils import run_and_get_code
from torch.fx.operator_schemas import get_signature_for_torch_op

import my_ops
from aoti_model import EPS, MLPBlock, example_inputs, reference_forward
from conftest import INDUCTOR_ON_CPU, OPS_TESTS, assert_matches

sys.path.insert(0, str(OPS_TESTS))
import specs  # noqa: E402  (tests/ops/specs: each op's samples)

OPS = torch.ops.my_ops


def _mutating_ops() -> list[str]:
    """The registered ops that write an argument: inside a package the refusal
    of one that returns nothing would be only logged (test_aoti.py), and
    torch's own functionalization of any of them would hand the op copies of
    what it writes, hiding overlaps from its memory rules."""
    names = []
    for name in torch.ops.my_ops:
        overload = getattr(getattr(torch.ops.my_ops, name), "default", None)
        schema = get_signature_for_torch_op(overload, return_schemas=True)[1][0] if overload is not None else None
        if schema is not None and any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
            names.append(name)
    return sorted(names)


MUTATING_OPS = _mutating_ops()


class TorchOpsBlock(MLPBlock):
    """aoti_model's block, calling the op through torch.ops as other libraries do."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        h = self.down(self.act(self.up(self.norm(x))))
        OPS.fused_add_rms_norm(h, residual, self.post_norm_weight, EPS)
        return h


def _targets(program) -> list[str]:
    return [str(node.target) for node in program.graph.nodes if node.op == "call_function"]


@pytest.mark.parametrize("strict", [False, True], ids=["non-strict", "strict"])
@pytest.mark.parametrize("block_type", [MLPBlock, TorchOpsBlock], ids=["python-api", "torch-ops"])
def test_exported_program_takes_the_functional_route(block_type, strict):
    """Decomposed (as AOTInductor does), the exported program calls the
    functional form and copies both results back; both programs give the
    reference's results."""
    block = block_type().eval()
    with torch.no_grad():
        program = torch.export.export(block, example_inputs(2, 3), strict=strict)
        decomposed = program.run_decompositions()
    targets = _targets(decomposed)
    assert "my_ops.fused_add_rms_norm.default" not in targets, targets
    assert targets.count("my_ops.fused_add_rms_norm_functional.default") == 1, targets
    assert targets.count("aten.copy.default") == 2, targets  # into x (a new value) and into residual
    for exported in (program, decomposed):
        x, residual = example_inputs(2, 3)  # (fresh: the export's sizes, static here)
        want_out, want_residual = reference_forward(block, x, residual)
        with torch.no_grad():
            out = exported.module()(x, residual)
        assert_matches(out, want_out, torch.float32)
        assert_matches(residual, want_residual, torch.float32)  # updated in place


def test_decomposed_program_refuses_as_the_op_does():
    """The functional route keeps the in-place op's rules while exporting (x and
    residual apart), and the decomposed program refuses a bad call by name."""
    weight = torch.rand(8)

    def step(x, residual):
        OPS.fused_add_rms_norm(x, residual, weight, EPS)
        return x

    class Step(torch.nn.Module):
        def forward(self, x, residual):
            return step(x, residual)

    shared = torch.randn(4, 8)
    with pytest.raises(RuntimeError, match=r"my_ops.fused_add_rms_norm: x and residual must not share memory"):
        torch.export.export(Step(), (shared, shared)).run_decompositions()
    decomposed = torch.export.export(Step(), (torch.randn(4, 8), torch.randn(4, 8))).run_decompositions()
    with pytest.raises(RuntimeError, match=r"my_ops.fused_add_rms_norm_functional: expected residual to have the "
                                           r"same dtype as x \(torch.float32\), but got torch.float64"):
        decomposed.module()(torch.randn(4, 8), torch.randn(4, 8, dtype=torch.float64))


def _step(x, residual, weight):
    my_ops.fused_add_rms_norm(x, residual, weight, EPS)
    OPS.fused_add_rms_norm(residual, x, weight, EPS)  # (and through torch.ops)
    return x + 1


def test_compile_keeps_the_op_in_place():
    """torch.compile pays nothing for the route: Inductor's code calls the
    in-place op, never the functional form, and results equal eager."""
    if not INDUCTOR_ON_CPU:
        pytest.skip("inductor's CPU toolchain is not set up on this platform's test job (conftest)")
    torch._dynamo.reset()
    x, residual, weight = torch.randn(4, 64), torch.randn(4, 64), torch.rand(64) + 0.5
    eager = [x.clone(), residual.clone()]
    want = _step(*eager, weight)
    out, codes = run_and_get_code(torch.compile(_step, fullgraph=True), x, residual, weight)
    code = "\n".join(codes)
    assert code.count("torch.ops.my_ops.fused_add_rms_norm.default(") == 2, code
    assert "fused_add_rms_norm_functional" not in code, code
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(x, eager[0])
    torch.testing.assert_close(residual, eager[1])


@pytest.mark.parametrize("name", ["fused_add_rms_norm_fp8", "fused_add_rms_norm_fp8_per_token"])
def test_compile_keeps_the_fp8_ops_in_place(name):
    """Nor for the fp8 ops' routes: Inductor's code calls the op in place, and
    the outputs and residual equal eager."""
    if not INDUCTOR_ON_CPU:
        pytest.skip("inductor's CPU toolchain is not set up on this platform's test job (conftest)")
    torch._dynamo.reset()
    op = getattr(OPS, name).default

    def step(x, residual, weight):
        return _tensors(op(*_residual_call(name, x, residual, weight)))

    x, residual, weight = torch.randn(4, 64), torch.randn(4, 64), torch.rand(64) + 0.5
    eager_residual = residual.clone()
    want = step(x, eager_residual, weight)
    got, codes = run_and_get_code(torch.compile(step, fullgraph=True), x, residual, weight)
    code = "\n".join(codes)
    assert code.count(f"torch.ops.my_ops.{name}.default(") == 1, code
    assert f"{name}_functional" not in code, code
    for g, w in zip(got, want):
        _assert_same(g, w)
    torch.testing.assert_close(residual, eager_residual)


def test_export_trace_outside_is_exporting_takes_the_route():
    """AOTAutograd's trace for export (aot_export_module: torch.export's joint
    IR, or a caller of its own) runs outside torch.compiler.is_exporting(); its
    program runs without Python too, so the op takes its route there, never
    the compiled graphs' Python-only overlap check."""
    from torch._functorch.aot_autograd import aot_export_module

    class TupleOut(TorchOpsBlock):  # (aot_export_module takes tuple outputs)
        def forward(self, x, residual):
            return (super().forward(x, residual),)

    with torch.no_grad():
        graph, _ = aot_export_module(TupleOut(), example_inputs(2, 8), trace_joint=False)
    targets = _targets(graph)
    assert "my_ops.check_memory.default" not in targets, targets
    assert targets.count("my_ops.fused_add_rms_norm_functional.default") == 1, targets


def test_the_mutating_ops_are_known():
    """(the parametrization below walks the registry: an empty list would pass it)"""
    assert {"add_out", "fused_add_rms_norm", "fused_add_rms_norm_fp8",
            "fused_add_rms_norm_fp8_per_token"} <= set(MUTATING_OPS), MUTATING_OPS


def _tensors(result) -> list:
    """An op's outputs as a list of tensors (None: none)."""
    return [] if result is None else list(result) if isinstance(result, tuple) else [result]


def _assert_same(got: torch.Tensor, want: torch.Tensor) -> None:
    if got.dtype == torch.float8_e4m3fn:  # (assert_close takes no float8: its bytes, the same kernels')
        got, want = got.view(torch.uint8), want.view(torch.uint8)
    torch.testing.assert_close(got, want, equal_nan=False)


@pytest.mark.parametrize("road", ["torch-ops", "python-api"])
@pytest.mark.parametrize("name", MUTATING_OPS)
def test_every_mutating_op_takes_its_functional_route(name, road):
    """Every op that writes an argument (the next one too), returning nothing or
    outputs, is exported as its functional form, <op>_functional, and copied
    back, the decomposed program writing the arguments and returning the
    outputs as the op does."""
    spec = next(spec for spec in specs.ALL if spec.name == name)
    if road == "python-api" and spec.api is None:
        pytest.skip(f"{name} has no Python API")
    op = getattr(OPS, name).default
    call = spec.api if road == "python-api" else op
    returns = bool(op._schema.returns)  # (add_out's Python API returns out, its schema nothing)
    sample = next(iter(spec.samples.values()))
    tensors = [i for i, arg in enumerate(sample("cpu")) if isinstance(arg, torch.Tensor)]

    class Call(torch.nn.Module):
        def __init__(self, constants):
            super().__init__()
            self.constants = constants  # the non-tensor arguments, fixed in the program

        def forward(self, *given):
            args = list(self.constants)
            for i, tensor in zip(tensors, given):
                args[i] = tensor
            result = call(*args)
            return (given[0] + 0, *(_tensors(result) if returns else ()))  # (an output of its own first)

    args = sample("cpu")
    with torch.no_grad():
        decomposed = torch.export.export(Call(args), tuple(args[i] for i in tensors)).run_decompositions()
    targets = _targets(decomposed)
    assert f"my_ops.{name}.default" not in targets, targets
    assert targets.count(f"my_ops.{name}_functional.default") == 1, targets
    fresh = sample("cpu")
    eager = [a.clone() if isinstance(a, torch.Tensor) else a for a in fresh]
    with torch.no_grad():
        want = _tensors(op(*eager))
        _, *got = decomposed.module()(*[fresh[i] for i in tensors])
    assert len(got) == len(want)
    for g, w in zip(got, want):  # the op's outputs
        _assert_same(g, w)
    for i in tensors:  # every argument as the op leaves it (those it writes, those it reads)
        _assert_same(fresh[i], eager[i])


def test_mutating_op_without_functional_form_is_left_to_torch():
    """A mutating op with no <op>_functional is exported as torch
    functionalizes it (auto_functionalized), its result the op's. In a
    session of its own: the op joins the my_ops registry, which other tests
    walk."""
    session = textwrap.dedent("""
        import torch
        from my_ops._mutating import _mutating_op

        def double(x):
            x.mul_(2)

        lib = torch.library.Library("my_ops", "FRAGMENT")
        lib.define("double_in_place(Tensor(a!) x) -> ()")
        lib.impl("double_in_place", double, "CPU")
        torch.library.register_fake("my_ops::double_in_place", lambda x: None, lib=lib)
        _mutating_op("double_in_place")

        class Step(torch.nn.Module):
            def forward(self, x):
                torch.ops.my_ops.double_in_place(x)
                return x + 1

        with torch.no_grad():
            program = torch.export.export(Step(), (torch.ones(3),)).run_decompositions()
            x = torch.ones(3)
            out = program.module()(x)
        targets = [str(node.target) for node in program.graph.nodes if node.op == "call_function"]
        assert any("auto_functionalized" in target for target in targets), targets
        assert x.tolist() == [2.0] * 3 and out.tolist() == [3.0] * 3, (x, out)
    """)
    result = subprocess.run([sys.executable, "-c", session], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def _residual_call(name: str, x, residual, weight) -> tuple:
    """The arguments of a call of `name` (fused_add_rms_norm or a fused fp8 op) with these tensors."""
    if name == "fused_add_rms_norm_fp8":
        return x, residual, weight, torch.tensor([0.05]), EPS
    return x, residual, weight, EPS


@pytest.mark.parametrize("name", ["fused_add_rms_norm", "fused_add_rms_norm_fp8",
                                  "fused_add_rms_norm_fp8_per_token"])
def test_decomposed_program_refuses_overlaps_as_eager_does(name):
    """Calls that overlap residual with x or with weight, which eager refuses:
    the decomposed program refuses them too, by name, when it runs (the
    functional form checks the in-place op's rules on the caller's tensors;
    torch's own functionalization would give the op a copy of residual, so an
    overlapping weight would be read unchanged, then overwritten), arguments
    untouched."""
    op = getattr(OPS, name).default

    class Step(torch.nn.Module):
        def forward(self, x, residual, weight):
            result = op(*_residual_call(name, x, residual, weight))
            return (residual + 0, *_tensors(result))

    with torch.no_grad():
        decomposed = torch.export.export(Step(), (torch.randn(4, 8), torch.randn(4, 8), torch.rand(8))
                                         ).run_decompositions()
    assert f"my_ops.{name}_functional.default" in _targets(decomposed)
    overlapping = {
        "x and residual": lambda: (lambda x: (x, x, torch.rand(8)))(torch.randn(4, 8)),
        "residual and weight": lambda: (lambda r: (torch.randn(4, 8), r, r[3]))(torch.randn(4, 8)),
    }
    for pair, make in overlapping.items():
        message = rf"my_ops.{name}(_functional)?: {pair} must not share memory"
        args = make()
        before = [a.clone() for a in args]
        with torch.no_grad():
            with pytest.raises(RuntimeError, match=message):
                op(*_residual_call(name, *args))
            with pytest.raises(RuntimeError, match=message):
                decomposed.module()(*args)
        for a, b in zip(args, before):
            torch.testing.assert_close(a, b)


def test_decomposed_add_out_refuses_as_the_op_does():
    """add_out's route keeps the op's own rules while exporting (out overlaps a
    without being it), and the decomposed program refuses a bad out by name,
    out untouched."""

    class Step(torch.nn.Module):
        def forward(self, a, b, out):
            my_ops.add_out(a, b, out)
            return out + 0

    buf = torch.randn(10)
    with pytest.raises(RuntimeError, match=r"my_ops.add_out: out overlaps a without being the same tensor"):
        torch.export.export(Step(), (buf[:8], torch.randn(8), buf[2:])).run_decompositions()
    decomposed = torch.export.export(Step(), (torch.randn(8), torch.randn(8), torch.empty(8))).run_decompositions()
    out = torch.zeros(8, dtype=torch.float64)
    with pytest.raises(RuntimeError, match=r"my_ops.add_out_functional: expected out to have the same dtype as a "
                                           r"\(torch.float32\), but got torch.float64"):
        decomposed.module()(torch.randn(8), torch.randn(8), out)
    assert not out.any()


def test_compile_keeps_add_out_in_place():
    """torch.compile pays nothing for add_out's route either."""
    if not INDUCTOR_ON_CPU:
        pytest.skip("inductor's CPU toolchain is not set up on this platform's test job (conftest)")
    torch._dynamo.reset()

    def step(a, b, out):
        my_ops.add_out(a, b, out)
        return out * 2

    a, b, out = torch.randn(4, 64), torch.randn(4, 64), torch.empty(4, 64)
    result, codes = run_and_get_code(torch.compile(step, fullgraph=True), a, b, out)
    code = "\n".join(codes)
    assert code.count("torch.ops.my_ops.add_out.default(") == 1, code
    assert "add_out_functional" not in code, code
    torch.testing.assert_close(out, a + b)
    torch.testing.assert_close(result, 2 * (a + b))
