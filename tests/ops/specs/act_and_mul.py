"""Specs of the gated units silu_and_mul and gelu_and_mul (each `approximate`
mode) and their backward ops (tests: test_act_and_mul.py)."""

from __future__ import annotations

import torch

import my_ops
from my_ops import reference
from specs import BadCall, OpSpec, like, t

FLOAT_OR = "a float32, float64, float16 or bfloat16 tensor"

# (op, arguments after x, nn.Module)
ACTIVATIONS = [
    ("silu_and_mul", (), my_ops.SiluAndMul),
    ("gelu_and_mul", ("none",), my_ops.GeluAndMul),
    ("gelu_and_mul", ("tanh",), lambda: my_ops.GeluAndMul("tanh")),
]


def _halved(x):
    return (*x.shape[:-1], x.shape[-1] // 2)


def _backward_reference(name, extra):
    def backward(grad_out, x, *_):
        x64 = x.double().requires_grad_()
        with torch.enable_grad():
            return torch.autograd.grad(getattr(reference, name)(x64, *extra), x64, grad_out.double())[0]
    return backward


def _unit(name, extra, module):
    op = getattr(my_ops, name)
    sample = {
        "float32-grad": lambda d: (torch.randn(4, 10, device=d, requires_grad=True), *extra),
        "bfloat16": lambda d: (torch.randn(2, 3, 64, device=d, dtype=torch.bfloat16), *extra),
        "transposed": lambda d: (torch.randn(6, 4, device=d).t(), *extra),
        "sliced": lambda d: (torch.randn(5, 24, device=d)[:, 4:20], *extra),
        "float64": lambda d: (torch.randn(3, 12, device=d, dtype=torch.float64), *extra),
    }
    bad = [
        BadCall("odd", lambda d: (t(3, 7, device=d), *extra),
                r"expected the last dimension of x to be even, but got 7"),
        BadCall("0-D", lambda d: (t(device=d), *extra), r"expected x to have at least 1 dimension"),
        BadCall("int16", lambda d: (t(2, 4, dtype=torch.int16, device=d), *extra),
                rf"expected x to be {FLOAT_OR}, but got torch.int16"),
    ]
    backward_bad = [
        BadCall("grad shape", lambda d: (t(3, 10, device=d), t(3, 10, device=d), *extra),
                r"expected grad_out to have shape \[3, 5\] \(x with its last dimension halved\), but got \[3, 10\]"),
        BadCall("odd", lambda d: (t(3, 3, device=d), t(3, 7, device=d), *extra),
                r"expected the last dimension of x to be even, but got 7"),
        BadCall("float16 grad", lambda d: (t(3, 5, dtype=torch.float16, device=d), t(3, 10, device=d), *extra),
                r"expected grad_out to have the same dtype as x \(torch.float32\), but got torch.float16"),
    ]
    if extra:  # the `approximate` argument
        bad.append(BadCall("approximate", lambda d: (t(3, 8, device=d), "fast"),
                           r"expected approximate to be 'none' or 'tanh', but got 'fast'"))
        backward_bad.append(BadCall("approximate", lambda d: (t(3, 4, device=d), t(3, 8, device=d), "fast"),
                                    r"expected approximate to be 'none' or 'tanh', but got 'fast'"))
    variant = "-".join(extra)
    forward = OpSpec(
        name, api=op, reference=getattr(reference, name), args_for=lambda x: extra, variant=variant,
        differentiable=True, func=True, row_wise=True, samples=sample, bad_calls=bad,
        smoke=("float32-grad", "float64", "bfloat16", "sliced", "odd"), module=module)
    backward = OpSpec(
        f"{name}_backward", reference=_backward_reference(name, extra), variant=variant,
        args_for=lambda g: (like(g, *g.shape[:-1], 2 * g.shape[-1]), *extra), input_shape=(5, 8), row_wise=True,
        samples={
            "float32": lambda d: (torch.randn(3, 5, device=d), torch.randn(3, 10, device=d), *extra),
            "float64": lambda d: (torch.randn(2, 6, device=d, dtype=torch.float64),
                                  torch.randn(2, 12, device=d, dtype=torch.float64), *extra),
            "bfloat16": lambda d: (torch.randn(2, 16, device=d, dtype=torch.bfloat16),
                                   torch.randn(2, 32, device=d, dtype=torch.bfloat16), *extra),
            "sliced": lambda d: (torch.randn(4, 12, device=d)[:, 2:10], torch.randn(4, 24, device=d)[:, :16], *extra),
        },
        smoke=("float32", "float64", "bfloat16", "sliced", "grad shape"), bad_calls=backward_bad)
    return [forward, backward]


SPECS = [spec for name, extra, module in ACTIVATIONS for spec in _unit(name, extra, module)]
