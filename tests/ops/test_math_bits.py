"""Tensors with the negative or conjugate bit set (lazy views such as
x.conj().imag): the mutating ops refuse them as written arguments before
writing anything (PyTorch's fallback aborted the process), and read them
correctly as inputs. Each case runs in a subprocess, so a regression shows as
a failed test rather than a dead test run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SETUP = """
import torch, my_ops
torch.manual_seed(0)
neg = torch.randn(4, 8, dtype=torch.complex64).conj().imag  # a float32 view with the negative bit
assert neg.is_neg()
before = neg.clone()
b = torch.randn(4, 8)
w = torch.rand(8)
"""

CASES = {
    "add_out out, Python API": "my_ops.add_out(b, b, neg)",
    "add_out out, torch.ops": "torch.ops.my_ops.add_out(b, b, neg)",
    "fused_add_rms_norm residual": "my_ops.fused_add_rms_norm(b, neg, w, 1e-6)",
    "fused_add_rms_norm x": "my_ops.fused_add_rms_norm(neg, b.clone(), w, 1e-6)",
}


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(SETUP) + code], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("case", CASES)
def test_a_written_argument_with_a_math_bit_is_refused_untouched(case):
    result = _run(f"""
try:
    {CASES[case]}
except RuntimeError as error:
    assert "negative bit" in str(error) and "resolve_neg()" in str(error), error
    assert torch.equal(neg, before), "written before refusing"
    print("refused")
""")
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-2000:]}"
    assert result.stdout.strip() == "refused"


def test_inputs_with_math_bits_are_read_as_their_values():
    result = _run("""
out = torch.empty(4, 8)
my_ops.add_out(neg, b, out)
torch.testing.assert_close(out, neg.resolve_neg() + b)
x, residual = b.clone(), torch.randn(4, 8)
want_residual = residual + x
weight = torch.rand(8, dtype=torch.complex64).conj().imag  # negative-bit weight
want_x = torch.nn.functional.rms_norm(want_residual, (8,), weight.resolve_neg(), 1e-6)
my_ops.fused_add_rms_norm(x, residual, weight, 1e-6)
torch.testing.assert_close(residual, want_residual)
torch.testing.assert_close(x, want_x)
torch.testing.assert_close(my_ops.rms_norm(neg, w, 1e-6), torch.nn.functional.rms_norm(neg.resolve_neg(), (8,), w, 1e-6))
print("ok")
""")
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-2000:]}"
