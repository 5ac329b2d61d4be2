"""Tensors of more than 2^31 elements: the kernels index with 64 bits.

Each input is about 4 GiB (float16/bfloat16); the outputs are checked against
the float64 reference on the first and last rows, the last ones lying past
element 2^31.
"""

from __future__ import annotations

import pytest
import torch

import my_ops
from conftest import assert_matches
from my_ops import reference

pytestmark = pytest.mark.large_memory

BIG = (1 << 31) + 4096 * 3


def _random(shape, dtype, device):
    return torch.empty(shape, dtype=dtype, device=device).uniform_(-3, 3)


@pytest.fixture(autouse=True)
def _free_memory():
    yield
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def test_short_kernel_past_2_31(device):
    x = _random((BIG,), torch.float16, device)
    out = my_ops.short_kernel(x)
    for part in (slice(0, 4096), slice(BIG - 65536, BIG)):
        assert_matches(out[part], x[part].double() * 1.23, torch.float16)
    del out, x


def test_rms_norm_past_2_31(device):
    hidden = 4096
    rows = BIG // hidden
    assert rows * hidden > 1 << 31
    x = _random((rows, hidden), torch.bfloat16, device)
    w = _random((hidden,), torch.bfloat16, device)
    out = my_ops.rms_norm(x, w, 1e-6)
    for part in (slice(0, 4), slice(rows - 16, rows)):
        assert_matches(out[part], reference.rms_norm(x[part], w, 1e-6), torch.bfloat16)
    del out, x


def test_silu_and_mul_past_2_31(device):
    d = 4096
    rows = BIG // d
    x = _random((rows, 2 * d), torch.bfloat16, device)  # the input holds 2 * 2^31 elements
    out = my_ops.silu_and_mul(x)
    assert out.numel() > 1 << 31
    for part in (slice(0, 4), slice(rows - 16, rows)):
        assert_matches(out[part], reference.silu_and_mul(x[part]), torch.bfloat16, scale=2)
    del out, x
