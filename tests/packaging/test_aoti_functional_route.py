"""fused_add_rms_norm's functional route (docs/deploying.md, "When an op refuses
inside a package"): while exporting, torch's functionalization replaces the
in-place op by my_ops::fused_add_rms_norm_functional (new x and residual) and
copies them back, so that inside an AOTInductor package a refusal leaves
undefined outputs, which stop the call. Whoever calls the op takes it (the
Python API and torch.ops.my_ops.fused_add_rms_norm alike); torch.compile keeps
the op in place, with no copies. test_aoti.py runs the package itself.
"""

from __future__ import annotations

import pytest
import torch
from torch._inductor.utils import run_and_get_code

import my_ops
from aoti_model import EPS, MLPBlock, example_inputs, reference_forward
from conftest import INDUCTOR_ON_CPU, assert_matches

OPS = torch.ops.my_ops


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
