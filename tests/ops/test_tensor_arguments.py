"""Tensor arguments that are no dense tensor: None is named by the op's
rules (the same message through torch.ops: test_roads.py); so is a jagged
nested tensor, on both roads (under inference_mode its class's
__torch_dispatch__ calls my_ops' CompositeImplicitAutogradNestedTensor kernel,
the rules' refusal)."""

from __future__ import annotations

import pytest
import torch

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


@pytest.mark.parametrize("road", ["api", "torch.ops", "inference_mode"])
@pytest.mark.parametrize("spec", specs.ALL, ids=str)
def test_jagged_nested_tensor(spec, road):
    """Each tensor argument in turn a jagged nested tensor: refused naming the
    op and the argument, with the rules' RuntimeError, whichever road
    (torch.ops under inference_mode: no autograd key runs)."""
    args = spec.resolve(torch.randn(spec.input_shape, dtype=torch.float32))
    call = (spec.api or spec.op) if road == "api" else spec.op
    for i, argument in enumerate(spec.op._schema.arguments):
        if not isinstance(args[i] if i < len(args) else None, torch.Tensor) or args[i].dim() == 0:
            continue
        rows = args[i].reshape(-1, args[i].shape[-1])
        jagged = torch.nested.nested_tensor([rows[:1], rows[1:]] if len(rows) > 1 else [rows, rows],
                                            layout=torch.jagged)
        bad = [jagged if j == i else a for j, a in enumerate(args)]
        message = (rf"^my_ops\.{spec.name}: expected {argument.name} to be a dense \(strided\) tensor, "
                   r"but got a nested tensor$")
        with torch.inference_mode(road == "inference_mode"), pytest.raises(RuntimeError, match=message):
            call(*bad)


def test_jagged_rms_norm_through_the_op_packet_is_taken_by_torchs_nested_tensor():
    """Documents torch's behaviour (README, "Bad input"): a jagged nested tensor's
    __torch_function__ takes every function named "rms_norm" for
    torch.nn.functional.rms_norm (torch/nested/_internal/ops.py matches
    func.__name__), and the packet torch.ops.my_ops.rms_norm has that name, so
    that call gets torch's error, read with F.rms_norm's arguments. my_ops has
    no public way around it that would not cost every call (a
    __torch_function__ mode); my_ops.rms_norm and torch.ops.my_ops.rms_norm.default
    are not taken (the rules' message). Should this fail, torch has narrowed its
    match: drop the README's sentence and this test."""
    jagged = torch.nested.nested_tensor([torch.randn(2, 8), torch.randn(3, 8)], layout=torch.jagged)
    weight = torch.ones(8)
    with pytest.raises(ValueError, match=r"^rms_norm\(\): Normalization over the ragged dim not supported"):
        torch.ops.my_ops.rms_norm(jagged, weight, 1e-6)
    import my_ops

    for call in (my_ops.rms_norm, torch.ops.my_ops.rms_norm.default):
        with pytest.raises(RuntimeError, match=r"^my_ops\.rms_norm: expected x to be a dense \(strided\) tensor, "
                                               r"but got a nested tensor$"):
            call(jagged, weight, 1e-6)
