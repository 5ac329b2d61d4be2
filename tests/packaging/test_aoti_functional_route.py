"""What a fix of the silent refusal inside a package would rest on
(docs/deploying.md, "When an op refuses inside a package"): the block of
aoti_model.py with fused_add_rms_norm replaced, while exporting, by an op
with outputs (new x and residual) copied back. A refusal of that op leaves
its outputs undefined, and the generated copy into residual, an input,
fails the call; valid calls equal eager.

The op here is registered in Python (it clones and calls the in-place op),
so the package runs in this process only; the fix needs it in the kernel
library, for a C++ program. This pins the torch behaviour such a fix needs.
"""

from __future__ import annotations

import sys

import pytest
import torch

import my_ops
from aoti_model import EPS, MAX_BATCH, MAX_SEQ, MLPBlock, example_inputs, reference_forward
from conftest import assert_matches

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="AOTInductor packages: Linux")


@torch.library.custom_op("my_ops_tests::fused_add_rms_norm_functional", mutates_args=())
def fused_add_rms_norm_functional(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                                  eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    new_x, new_residual = x.clone(), residual.clone()
    my_ops.fused_add_rms_norm(new_x, new_residual, weight, eps)
    return new_x, new_residual


@fused_add_rms_norm_functional.register_fake
def _(x, residual, weight, eps):
    return x.new_empty(x.shape), residual.new_empty(residual.shape)


class FunctionalBlock(MLPBlock):
    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        h = self.down(self.act(self.up(self.norm(x))))
        new_h, new_residual = fused_add_rms_norm_functional(h, residual, self.post_norm_weight, EPS)
        residual.copy_(new_residual)
        return new_h


@pytest.fixture(scope="module")
def functional_package(tmp_path_factory):
    block = FunctionalBlock().eval()
    dims = {0: torch.export.Dim("batch", min=1, max=MAX_BATCH), 1: torch.export.Dim("seq", min=1, max=MAX_SEQ)}
    with torch.no_grad():
        program = torch.export.export(block, example_inputs(2, 3), dynamic_shapes=(dims, dims))
        path = torch._inductor.aoti_compile_and_package(
            program, package_path=str(tmp_path_factory.mktemp("aoti_functional") / "block.pt2"),
            inductor_configs={"aot_inductor.compile_wrapper_opt_level": "O0"})
    return block, torch._inductor.aoti_load_package(path)


def test_valid_calls_equal_the_reference(functional_package):
    block, model = functional_package
    for batch, seq in [(2, 3), (5, 17)]:
        x, residual = example_inputs(batch, seq)
        want_out, want_residual = reference_forward(block, x, residual)
        out = model(x, residual)
        assert_matches(out, want_out, torch.float32)
        assert_matches(residual, want_residual, torch.float32)  # copied back in place


def test_a_refused_call_raises(functional_package, capfd):
    _, model = functional_package
    x, residual = torch.randn(2, 3, 64), torch.randn(2, 4, 64)
    before = residual.clone()
    with pytest.raises(RuntimeError, match="run_func_"):
        model(x, residual)
    err = capfd.readouterr().err
    assert "my_ops.fused_add_rms_norm: expected residual to have the same shape as x" in err
    assert torch.equal(residual, before)  # nothing copied back
