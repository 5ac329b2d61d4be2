"""Specs of short_kernel, mul, muladd, add_out and its functional form (tests: test_elementwise.py)."""

from __future__ import annotations

import torch

import my_ops
from specs import INPUT, BadCall, OpSpec, like, t

OPS = torch.ops.my_ops
BF16, F16, F64 = torch.bfloat16, torch.float16, torch.float64
FLOAT_OR = "a float32, float64, float16 or bfloat16 tensor"

# add_out's and its functional form's: the same rules for a, b and out
_ADD_OUT_SAMPLES = {
    "float32": lambda d: (torch.randn(9, device=d), torch.randn(9, device=d), torch.empty(9, device=d)),
    "float64 transposed out": lambda d: (torch.randn(3, 4, device=d, dtype=F64),
                                         torch.randn(3, 4, device=d, dtype=F64),
                                         torch.empty(4, 3, device=d, dtype=F64).t()),
    "bfloat16": lambda d: (torch.randn(2, 6, device=d, dtype=BF16), torch.randn(2, 6, device=d, dtype=BF16),
                           torch.empty(2, 6, device=d, dtype=BF16)),
}


def _out_expanded(d):
    return t(3, 4, device=d), t(3, 4, device=d), t(1, 4, device=d).expand(3, 4)


_ADD_OUT_BAD_CALLS = [
    BadCall("out shape", lambda d: (t(3, 4, device=d), t(3, 4, device=d), t(4, 3, device=d)),
            r"expected out to have the same shape as a \[3, 4\], but got \[4, 3\]"),
    BadCall("out dtype", lambda d: (t(5, device=d), t(5, device=d), t(5, dtype=F16, device=d)),
            r"expected out to have the same dtype as a \(torch.float32\), but got torch.float16"),
    BadCall("out partial overlap", lambda d: (lambda buf: (buf[:8], t(8, device=d), buf[2:]))(t(10, device=d)),
            r"out overlaps a without being the same tensor"),
    BadCall("out overlaps a and b",
            lambda d: (lambda buf: (buf[:, :8], buf[:, 8:], buf[:, 4:12]))(t(4, 16, device=d)),
            r"out overlaps a without being the same tensor"),
]

SPECS = [
    OpSpec(
        "short_kernel", api=my_ops.short_kernel, reference=lambda x: x.double() * 1.23,
        args_for=lambda x: (), differentiable=True, func=True,
        samples={
            "grad": lambda d: (torch.randn(3, 5, device=d, requires_grad=True),),
            "bfloat16 transposed": lambda d: (torch.randn(4, 6, device=d, dtype=BF16).t(),),
            "float64": lambda d: (torch.randn(2, 5, device=d, dtype=F64),),
        },
        smoke=("grad", "float64", "bfloat16 transposed", "int"),
        bad_calls=[
            BadCall("int", lambda d: (t(3, dtype=torch.int64, device=d),),
                    rf"expected x to be {FLOAT_OR}, but got torch.int64"),
        ]),
    OpSpec(
        "mul", api=my_ops.mul, reference=lambda a, b: a.double() * b.double(),
        args_for=lambda a: (INPUT,), differentiable=True, func=True,
        samples={
            "grad": lambda d: (torch.randn(7, device=d, requires_grad=True), torch.randn(7, device=d)),
            "float16": lambda d: (torch.randn(2, 3, device=d, dtype=F16), torch.randn(2, 3, device=d, dtype=F16)),
            "float64 strided": lambda d: (torch.randn(3, 8, device=d, dtype=F64)[:, ::2],
                                          torch.randn(3, 4, device=d, dtype=F64)),
        },
        smoke=("grad", "float64 strided", "float16", "shape"),
        bad_calls=[
            BadCall("shape", lambda d: (t(3, 4, device=d), t(4, 3, device=d)),
                    r"expected b to have the same shape as a \[3, 4\], but got \[4, 3\]"),
            BadCall("dtype", lambda d: (t(3, 4, device=d), t(3, 4, dtype=F64, device=d)),
                    r"expected b to have the same dtype as a \(torch.float32\), but got torch.float64"),
        ]),
    OpSpec(
        "muladd", api=my_ops.muladd, reference=lambda a, b, c: a.double() * b.double() + c,
        args_for=lambda a: (like(a), 0.75), differentiable=True, func=True,
        samples={
            "grad": lambda d: (torch.randn(4, 4, device=d, requires_grad=True),
                               torch.randn(4, 4, device=d, requires_grad=True), 1.5),
            "empty": lambda d: (torch.randn(0, 3, device=d), torch.randn(0, 3, device=d), -2.0),
            "float64": lambda d: (torch.randn(3, 5, device=d, dtype=F64), torch.randn(3, 5, device=d, dtype=F64),
                                  -1.25),
            "bfloat16 sliced": lambda d: (torch.randn(4, 12, device=d, dtype=BF16)[:, 2:10],
                                          torch.randn(4, 8, device=d, dtype=BF16), 0.5),
        },
        smoke=("grad", "float64", "bfloat16 sliced", "shape"),
        bad_calls=[
            BadCall("shape", lambda d: (t(3, 4, device=d), t(3, device=d), 1.0),
                    r"expected b to have the same shape as a \[3, 4\], but got \[3\]"),
            BadCall("shape transposed", lambda d: (t(3, 4, device=d), t(4, 3, device=d), 1.0),
                    r"expected b to have the same shape as a \[3, 4\], but got \[4, 3\]"),
        ]),
    OpSpec(
        "add_out", api=my_ops.add_out, reference=lambda a, b, out: a.double() + b.double(),
        args_for=lambda a: (like(a), like(a)), mutates=("out",),
        samples=_ADD_OUT_SAMPLES,
        smoke=("float32", "float64 transposed out", "bfloat16", "out shape"),
        bad_calls=[
            *_ADD_OUT_BAD_CALLS,
            BadCall("out expanded", _out_expanded, r"out is written in place, so its elements must not share memory"),
            BadCall("requires grad", lambda d: (t(3, device=d).requires_grad_(), t(3, device=d), t(3, device=d)),
                    r"argument 'a' requires grad, but my_ops.add_out writes its arguments in place"),
        ]),
    OpSpec(
        # what an exported program calls in place of add_out, then copies into out: a + b as a
        # new tensor, with out held to add_out's rules (a package writes it with the result)
        "add_out_functional", reference=lambda a, b, out: a.double() + b.double(),
        args_for=lambda a: (like(a), like(a)),
        samples={
            **_ADD_OUT_SAMPLES,
            "out is b": lambda d: (lambda b: (torch.randn(2, 5, device=d), b, b))(torch.randn(2, 5, device=d)),
        },
        smoke=("float32", "float64 transposed out", "bfloat16", "out dtype"),
        bad_calls=[
            *_ADD_OUT_BAD_CALLS,
            BadCall("requires grad", lambda d: (t(3, device=d), t(3, device=d).requires_grad_(), t(3, device=d)),
                    r"argument 'b' requires grad, but my_ops.add_out_functional is an inference op"),
            # (in a package out is the caller's tensor, which the copy writes: expanded, past its memory)
            BadCall("out expanded", _out_expanded, r"out is written in place, so its elements must not share memory"),
        ]),
]
