"""Tensor arguments that are no dense tensor: None is named by the op's
rules (the same message through torch.ops: test_roads.py); a jagged nested
tensor fails in torch's own conversions, before the kernels' checks, with a
message that names neither op nor argument; the Python API names both."""

from __future__ import annotations

import pytest
import torch

import my_ops
import specs


@pytest.mark.parametrize("spec", specs.where(api=True), ids=str)
def test_none_for_a_tensor_argument(spec):
    args = spec.resolve(torch.randn(spec.input_shape, dtype=torch.float64))
    for i, argument in enumerate(spec.op._schema.arguments):
        if str(argument.type) != "Tensor":
            continue
        bad = [None if j == i else a for j, a in enumerate(args)]
        with pytest.raises(RuntimeError, match=rf"^my_ops\.{spec.name}: expected {argument.name} to be a tensor, "
                                               r"but got None$"):
            spec.api(*bad)


def test_jagged_nested_tensor():
    x = torch.nested.nested_tensor([torch.randn(2, 8), torch.randn(3, 8)], layout=torch.jagged)
    with pytest.raises(RuntimeError, match=r"^my_ops\.rms_norm: expected x to be a dense \(strided\) tensor, "
                                           r"but got a nested tensor$"):
        my_ops.rms_norm(x, torch.ones(8))
    with torch.no_grad(), pytest.raises(RuntimeError, match=r"^my_ops\.silu_and_mul: expected x to be a dense"):
        my_ops.silu_and_mul(x)
