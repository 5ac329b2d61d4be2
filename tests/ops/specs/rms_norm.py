"""Specs of rms_norm, rms_norm_backward, fused_add_rms_norm and its functional form
(tests: test_rms_norm.py)."""

from __future__ import annotations

import torch

import my_ops
from my_ops import reference
from specs import BadCall, OpSpec, like, t

BF16 = {"dtype": torch.bfloat16}
F64 = {"dtype": torch.float64}
FLOAT_OR = "a float32, float64, float16 or bfloat16 tensor"


def _weight(x):
    return like(x, *x.shape[-1:], low=0.5, high=1.5)


def _backward_reference(grad_out, x, weight, eps):
    """(grad_x, grad_weight) of the float64 reference."""
    x64, w64 = x.double().requires_grad_(), weight.double().requires_grad_()
    with torch.enable_grad():
        return torch.autograd.grad(reference.rms_norm(x64, w64, eps), (x64, w64), grad_out.double())


# The samples and bad calls fused_add_rms_norm and its functional form share.
_FUSED_ADD_SAMPLES = {
    "float32": lambda d: (torch.randn(4, 32, device=d), torch.randn(4, 32, device=d),
                          torch.rand(32, device=d), 1e-6),
    "bfloat16": lambda d: (torch.randn(2, 24, device=d, **BF16), torch.randn(2, 24, device=d, **BF16),
                           torch.rand(24, device=d, **BF16), 1e-5),
    "sliced": lambda d: (torch.randn(4, 64, device=d)[:, :32], torch.randn(4, 64, device=d)[:, 32:],
                         torch.rand(32, device=d), 1e-6),
    "float64": lambda d: (torch.randn(3, 16, device=d, **F64), torch.randn(3, 16, device=d, **F64),
                          torch.rand(16, device=d, **F64), 1e-6),
}
_FUSED_ADD_BAD_CALLS = [
    BadCall("residual shape", lambda d: (t(4, 8, device=d), t(2, 8, device=d), t(8, device=d), 1e-6),
            r"expected residual to have the same shape as x \[4, 8\], but got \[2, 8\]"),
    BadCall("weight length", lambda d: (t(4, 8, device=d), t(4, 8, device=d), t(9, device=d), 1e-6),
            r"expected weight to have shape \[8\]"),
]


SPECS = [
    OpSpec(
        "rms_norm", api=my_ops.rms_norm, reference=reference.rms_norm,
        args_for=lambda x: (_weight(x), 1e-6), differentiable=True, func=True, row_wise=True,
        samples={
            "float32-grad": lambda d: (torch.randn(4, 16, device=d, requires_grad=True),
                                       torch.rand(16, device=d, requires_grad=True), 1e-6),
            "bfloat16": lambda d: (torch.randn(2, 3, 64, device=d, **BF16), torch.rand(64, device=d, **BF16), 1e-5),
            "transposed": lambda d: (torch.randn(16, 5, device=d).t(), torch.rand(16, device=d), 0.0),
            "sliced": lambda d: (torch.randn(6, 48, device=d)[:, 8:40], torch.rand(32, device=d), 1e-6),
            "float64": lambda d: (torch.randn(3, 24, device=d, **F64), torch.rand(24, device=d, **F64), 1e-6),
        },
        smoke=("float32-grad", "float64", "bfloat16", "sliced", "weight length"),
        bad_calls=[
            BadCall("weight length", lambda d: (t(4, 8, device=d), t(7, device=d), 1e-6),
                    r"expected weight to have shape \[8\] \(the last dimension of x\), but got \[7\]"),
            BadCall("weight int32", lambda d: (t(4, 8, device=d), t(8, dtype=torch.int32, device=d), 1e-6),
                    rf"expected weight to be {FLOAT_OR}, but got torch.int32"),
            # a wider weight is accepted (test_mixed_precision_weights.py); a narrower or another 16-bit one is not
            BadCall("narrower weight", lambda d: (t(4, 8, device=d), t(8, dtype=torch.bfloat16, device=d), 1e-6),
                    r"expected weight to have the same dtype as x \(torch.float32\) or a wider float dtype "
                    r"\(torch.float64\), but got torch.bfloat16"),
            BadCall("other 16-bit weight", lambda d: (t(4, 8, dtype=torch.bfloat16, device=d),
                                                      t(8, dtype=torch.float16, device=d), 1e-6),
                    r"expected weight to have the same dtype as x \(torch.bfloat16\) or a wider float dtype "
                    r"\(torch.float32, torch.float64\), but got torch.float16"),
            BadCall("int64 x", lambda d: (t(2, 8, dtype=torch.int64, device=d), t(8, device=d), 1e-6),
                    rf"expected x to be {FLOAT_OR}, but got torch.int64"),
            BadCall("0-D x", lambda d: (t(device=d), t(1, device=d), 1e-6),
                    r"expected x to have at least 1 dimension"),
            BadCall("eps -1", lambda d: (t(4, 8, device=d), t(8, device=d), -1.0),
                    r"expected eps to be a finite number >= 0, but got -1"),
            BadCall("eps nan", lambda d: (t(4, 8, device=d), t(8, device=d), float("nan")),
                    r"expected eps to be a finite number >= 0, but got nan"),
            BadCall("eps below float32", lambda d: (t(4, 8, device=d), t(8, device=d), 1e-50),
                    r"expected eps to be 0 or from 1.4e-45 to 3.4e\+38 \(float32's range, in which the kernels "
                    r"add it to x of 16 or 32 bits\), but got 1e-50"),
        ]),
    OpSpec(
        "rms_norm_backward", reference=_backward_reference,
        args_for=lambda g: (like(g), _weight(g), 1e-6), row_wise=True,
        samples={
            "float32": lambda d: (torch.randn(3, 8, device=d), torch.randn(3, 8, device=d),
                                  torch.rand(8, device=d), 1e-6),
            "sliced": lambda d: (torch.randn(3, 24, device=d)[:, :16], torch.randn(3, 20, device=d)[:, 4:],
                                 torch.rand(16, device=d), 1e-6),
            "float64": lambda d: (torch.randn(3, 8, device=d, **F64), torch.randn(3, 8, device=d, **F64),
                                  torch.rand(8, device=d, **F64), 1e-6),
            "bfloat16": lambda d: (torch.randn(2, 32, device=d, **BF16), torch.randn(2, 32, device=d, **BF16),
                                   torch.rand(32, device=d, **BF16), 1e-5),
        },
        smoke=("float32", "float64", "bfloat16", "sliced", "grad shape"),
        bad_calls=[
            BadCall("grad shape", lambda d: (t(4, 7, device=d), t(4, 8, device=d), t(8, device=d), 1e-6),
                    r"expected grad_out to have the same shape as x \[4, 8\], but got \[4, 7\]"),
        ]),
    OpSpec(
        "fused_add_rms_norm", api=my_ops.fused_add_rms_norm, reference=reference.fused_add_rms_norm,
        args_for=lambda x: (like(x), _weight(x), 1e-6), mutates=("x", "residual"), row_wise=True,
        samples=_FUSED_ADD_SAMPLES,
        smoke=("float32", "float64", "bfloat16", "sliced", "residual shape"),
        bad_calls=[
            *_FUSED_ADD_BAD_CALLS,
            BadCall("float32 weight of float64 x", lambda d: (t(4, 8, dtype=torch.float64, device=d),
                                                              t(4, 8, dtype=torch.float64, device=d),
                                                              t(8, device=d), 1e-6),
                    r"expected weight to have the same dtype as x \(torch.float64\), but got torch.float32$"),
            BadCall("x is residual", lambda d: (lambda x: (x, x, t(8, device=d), 1e-6))(t(4, 8, device=d)),
                    r"x and residual must not share memory"),
            # (in a package x and residual are the caller's tensors, which the copies back write)
            BadCall("x expanded", lambda d: (torch.randn(1, 16, device=d).expand(3, 16), t(3, 16, device=d),
                                             t(16, device=d), 1e-6),
                    r"x is written in place, so its elements must not share memory"),
            BadCall("x and residual overlap", lambda d: (lambda buf: (buf[:, :8], buf[:, 4:12], t(8, device=d), 1e-6))(
                t(4, 16, device=d)),
                    r"x and residual must not share memory, but they overlap; pass separate tensors "
                    r"\(e.g. residual.clone\(\)\)"),
            BadCall("x and weight overlap", lambda d: (lambda buf: (buf[:, :8], buf[:, 8:], buf[0, :8], 1e-6))(
                t(4, 16, device=d)),
                    r"x and weight must not share memory, but they overlap; pass separate tensors "
                    r"\(e.g. weight.clone\(\)\)"),
            BadCall("residual and weight overlap", lambda d: (lambda buf: (buf[:2, :8], buf[2:, :8], buf[2, :8], 1e-6))(
                t(4, 16, device=d)),
                    r"residual and weight must not share memory"),
            BadCall("residual requires grad", lambda d: (t(4, 8, device=d), t(4, 8, device=d).requires_grad_(),
                                                         t(8, device=d), 1e-6),
                    r"argument 'residual' requires grad, but my_ops.fused_add_rms_norm writes its arguments in place"),
        ]),
    OpSpec(
        # what an exported program calls in place of fused_add_rms_norm: (new x, new residual)
        # in new tensors, from x and residual read in place (the in-place op's kernels)
        "fused_add_rms_norm_functional", reference=reference.fused_add_rms_norm,
        args_for=lambda x: (like(x), _weight(x), 1e-6), row_wise=True,
        samples={
            **_FUSED_ADD_SAMPLES,
        },
        smoke=("float32", "float64", "bfloat16", "sliced", "residual shape"),
        bad_calls=[
            *_FUSED_ADD_BAD_CALLS,
            BadCall("residual float64", lambda d: (t(4, 8, device=d), t(4, 8, dtype=torch.float64, device=d),
                                                   t(8, device=d), 1e-6),
                    r"expected residual to have the same dtype as x \(torch.float32\), but got torch.float64"),
            BadCall("weight requires grad", lambda d: (t(4, 8, device=d), t(4, 8, device=d),
                                                       t(8, device=d).requires_grad_(), 1e-6),
                    r"argument 'weight' requires grad, but my_ops.fused_add_rms_norm_functional is an inference op"),
            # a package copies the results back into x and residual: the in-place op's memory rules
            BadCall("x is residual", lambda d: (lambda x: (x, x, t(8, device=d), 1e-6))(t(4, 8, device=d)),
                    r"x and residual must not share memory"),
            # (in a package x and residual are the caller's tensors, which the copies back write)
            BadCall("x expanded", lambda d: (torch.randn(1, 16, device=d).expand(3, 16), t(3, 16, device=d),
                                             t(16, device=d), 1e-6),
                    r"x is written in place, so its elements must not share memory"),
            BadCall("residual and weight overlap", lambda d: (lambda buf: (buf[:2, :8], buf[2:, :8], buf[2, :8], 1e-6))(
                t(4, 16, device=d)),
                    r"residual and weight must not share memory"),
        ]),
]
