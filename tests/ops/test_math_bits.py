"""Tensors with the negative or conjugate bit set (lazy views such as
x.conj().imag): the mutating ops refuse them as written arguments before
writing anything (PyTorch's fallback aborted the process), and read them
correctly as inputs. Each case runs in a subprocess, so a regression shows as
a failed test rather than a dead test run. (Every argument of every op that
`mutates` in its spec, through the Python API and torch.ops.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import specs

SETUP = f"""
import sys
sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parent.parent)!r}]
import torch, my_ops
import specs
torch.manual_seed(0)
def negative(like):  # a float32 view with the negative bit, of like's shape
    neg = torch.randn(like.shape, dtype=torch.complex64).conj().imag
    assert neg.is_neg()
    return neg
"""

WRITTEN = [pytest.param(spec.id, name, through, id=f"{spec.id} {name}, {through}")
           for spec in specs.where(mutates=True) for name in spec.mutates for through in ("Python API", "torch.ops")]


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(SETUP) + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("spec, argument, through", WRITTEN)
def test_a_written_argument_with_a_math_bit_is_refused_untouched(spec, argument, through):
    result = _run(f"""
spec = next(s for s in specs.ALL if s.id == {spec!r})
args = list(spec.resolve(torch.randn(4, 8)))
index = spec.argument_names().index({argument!r})
args[index] = neg = negative(args[index])
before = neg.clone()
try:
    ({'spec.api' if through == 'Python API' else 'spec.op'})(*args)
except RuntimeError as error:
    assert "negative bit" in str(error) and "resolve_neg()" in str(error), error
    assert torch.equal(neg, before), "written before refusing"
    print("refused")
""")
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-2000:]}"
    assert result.stdout.strip() == "refused"


@pytest.mark.parametrize("spec", specs.where(api=True), ids=repr)
def test_inputs_with_math_bits_are_read_as_their_values(spec):
    """Every argument an op only reads, with the negative bit, against the reference."""
    result = _run(f"""
spec = next(s for s in specs.ALL if s.id == {spec.id!r})
names = spec.argument_names()
args = list(spec.resolve(torch.randn(4, 8)))
read = [i for i, (name, a) in enumerate(zip(names, args)) if isinstance(a, torch.Tensor) and name not in spec.mutates]
assert read
for i in read:
    args[i] = negative(args[i])
want = spec.reference(*[a.resolve_neg().double() if isinstance(a, torch.Tensor) else a for a in args])
out = spec.api(*args)
want = want if isinstance(want, tuple) else (want,)
if spec.mutates:
    got = [args[names.index(name)] for name in spec.mutates]
else:
    got = list(out) if isinstance(out, tuple) else [out]
for g, w in zip(got, want):
    fp8 = w.dtype == torch.float8_e4m3fn  # (the fp8 family: within one fp8 step)
    torch.testing.assert_close(g.double(), w.double(), rtol=0.125 if fp8 else 2e-5, atol=2**-9 if fp8 else 2e-5)
print("ok")
""")
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-2000:]}"
    assert result.stdout.strip() == "ok"
