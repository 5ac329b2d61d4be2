"""In-place writes to inference tensors: refused outside torch.inference_mode()
(as PyTorch refuses them), before anything is written; allowed inside."""

from __future__ import annotations

import pytest
import torch

import my_ops


def _inference(*shape):
    with torch.inference_mode():
        return torch.randn(*shape)


CALLS = {
    "add_out out": (lambda t, n, w: my_ops.add_out(n, n, t), "out"),
    "fused_add_rms_norm x": (lambda t, n, w: my_ops.fused_add_rms_norm(t, n.clone(), w), "x"),
    "fused_add_rms_norm residual": (lambda t, n, w: my_ops.fused_add_rms_norm(n.clone(), t, w), "residual"),
}


@pytest.mark.parametrize("case", CALLS)
def test_refused_outside_inference_mode_untouched(case):
    call, argument = CALLS[case]
    t, n, w = _inference(3, 16), torch.randn(3, 16), torch.rand(16)
    before = t.clone()
    with pytest.raises(RuntimeError, match=rf"argument '{argument}' is an inference tensor"):
        call(t, n, w)
    assert torch.equal(t, before)
    with pytest.raises(RuntimeError, match="inference tensor"):  # what PyTorch does
        t.add_(1)


def test_allowed_inside_inference_mode():
    with torch.inference_mode():
        x, residual, w = torch.randn(3, 16), torch.randn(3, 16), torch.rand(16)
        want_residual = residual + x
        want_x = torch.nn.functional.rms_norm(want_residual, (16,), w, 1e-6)
        my_ops.fused_add_rms_norm(x, residual, w, 1e-6)
        out = torch.empty(3, 16)
        my_ops.add_out(x, residual, out)
    torch.testing.assert_close(residual, want_residual)
    torch.testing.assert_close(x, want_x)
    torch.testing.assert_close(out, want_x + want_residual)
