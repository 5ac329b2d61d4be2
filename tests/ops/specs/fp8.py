"""Specs of the fp8 family: rms_norm_fp8, fused_add_rms_norm_fp8 (and its
functional form) and silu_and_mul_fp8, each static and per token (tests:
test_fp8.py)."""

from __future__ import annotations

import torch

import my_ops
from my_ops import reference
from specs import BadCall, OpSpec, like, t

BF16 = {"dtype": torch.bfloat16}


def _weight(x):
    return like(x, *x.shape[-1:], low=0.5, high=1.5)


def scale_for(x, value=0.05):
    """A static scale (a one-element float32 tensor) on x's device."""
    return torch.tensor([value], dtype=torch.float32, device=x.device)


def _scale(d, value=0.05):
    return torch.tensor([value], device=d)


_SCALE_BAD = [
    ("scale float64", lambda d: torch.tensor([0.1], dtype=torch.float64, device=d),
     r"expected scale to be a float32 tensor of one element, but got a torch.float64 tensor of shape \[1\]"),
    ("scale of two", lambda d: torch.ones(2, device=d),
     r"expected scale to be a float32 tensor of one element, but got a torch.float32 tensor of shape \[2\]"),
]


def _norm_bad(name, add, per_token, functional=False):
    """The bad calls of one RMSNorm op: (x, [residual], weight, [scale], eps, [scale_ub]);
    functional: a fused op's functional form, which writes no argument."""
    def args(d, x=None, weight=None, scale=None, eps=1e-6, ub=None):
        x = t(4, 8, device=d) if x is None else x
        weight = t(8, device=d) if weight is None else weight
        return ((x,) + ((t(*x.shape, dtype=x.dtype, device=d),) if add else ()) + (weight,)
                + (() if per_token else (_scale(d) if scale is None else scale,)) + (eps,)
                + ((ub,) if per_token else ()))
    bad = [
        BadCall("weight length", lambda d: args(d, weight=t(7, device=d)),
                r"expected weight to have shape \[8\] \(the last dimension of x\), but got \[7\]"),
        # a wider weight is accepted, as rms_norm's (test_fp8.py); another 16-bit one is not
        BadCall("float16 weight of bfloat16 x",
                lambda d: args(d, x=t(4, 8, device=d, **BF16), weight=t(8, device=d, dtype=torch.float16)),
                r"expected weight to have the same dtype as x \(torch.bfloat16\) or a wider float dtype "
                r"\(torch.float32, torch.float64\), but got torch.float16"),
        BadCall("eps -1", lambda d: args(d, eps=-1.0), r"expected eps to be a finite number >= 0, but got -1"),
        BadCall("0-D x", lambda d: args(d, x=t(device=d), weight=t(1, device=d)),
                r"expected x to have at least 1 dimension"),
    ]
    if per_token:
        bad.append(BadCall("scale_ub of two", lambda d: args(d, ub=torch.ones(2, device=d)),
                           r"expected scale_ub to be a float32 tensor of one element, but got a "
                           r"torch.float32 tensor of shape \[2\]"))
    else:
        bad += [BadCall(n, lambda d, make=make: args(d, scale=make(d)), m) for n, make, m in _SCALE_BAD]
    if add:
        bad += [
            BadCall("residual shape", lambda d: (lambda a: (a[0], t(2, 8, device=d), *a[2:]))(args(d)),
                    r"expected residual to have the same shape as x \[4, 8\], but got \[2, 8\]"),
            BadCall("x is residual", lambda d: (lambda a: (a[0], a[0], *a[2:]))(args(d)),
                    r"x and residual must not share memory"),
            BadCall("residual requires grad", lambda d: (lambda a: (a[0], a[1].requires_grad_(), *a[2:]))(args(d)),
                    rf"argument 'residual' requires grad, but my_ops.{name} "
                    + ("is an inference op" if functional else "writes its arguments in place")),
        ]
    else:
        bad.append(BadCall("x requires grad", lambda d: (lambda a: (a[0].requires_grad_(), *a[1:]))(args(d)),
                           rf"argument 'x' requires grad, but my_ops.{name} is an inference op"))
    if functional:
        # (in a package these are the caller's tensors, which the copy back into residual
        # writes: the in-place op's memory rules)
        bad += [
            BadCall("residual float64", lambda d: (lambda a: (a[0], t(4, 8, dtype=torch.float64, device=d),
                                                              *a[2:]))(args(d)),
                    r"expected residual to have the same dtype as x \(torch.float32\), but got torch.float64"),
            BadCall("residual expanded", lambda d: (lambda a: (a[0], t(1, 8, device=d).expand(4, 8), *a[2:]))(
                args(d)), r"residual is written in place, so its elements must not share memory"),
            BadCall("residual and weight overlap", lambda d: (lambda a: (a[0], a[1], a[1][3], *a[3:]))(args(d)),
                    r"residual and weight must not share memory"),
        ]
        # the scale (or scale_ub) inside residual: one float32 element of it
        scale_at = 4 if per_token else 3
        bad.append(BadCall("residual and scale overlap",
                           lambda d: (lambda a: (*a[:scale_at], a[1][2, :1], *a[scale_at + 1:]))(args(d)),
                           rf"residual and {'scale_ub' if per_token else 'scale'} must not share memory"))
    return bad


def _norm_spec(name, add, per_token):
    def args_for(x):
        return ((like(x),) if add else ()) + (_weight(x),) + (() if per_token else (scale_for(x),)) + (1e-6,) \
            + ((None,) if per_token else ())

    def sample(shape_x, weight, d, dtype=torch.float32, eps=1e-6):
        x = shape_x(d, dtype)
        rest = ((torch.randn(x.shape, device=d, dtype=dtype),) if add else ()) + (weight(d, dtype),)
        return (x,) + rest + (() if per_token else (_scale(d),)) + (eps,) + ((None,) if per_token else ())

    samples = {
        "float32": lambda d: sample(lambda d, dt: torch.randn(4, 16, device=d, dtype=dt),
                                    lambda d, dt: torch.rand(16, device=d, dtype=dt), d),
        "bfloat16": lambda d: sample(lambda d, dt: torch.randn(2, 3, 64, device=d, dtype=dt),
                                     lambda d, dt: torch.rand(64, device=d, dtype=dt), d, torch.bfloat16),
        "sliced": lambda d: sample(lambda d, dt: torch.randn(6, 48, device=d, dtype=dt)[:, 8:40],
                                   lambda d, dt: torch.rand(32, device=d, dtype=dt), d),
        "float64": lambda d: sample(lambda d, dt: torch.randn(3, 24, device=d, dtype=dt),
                                    lambda d, dt: torch.rand(24, device=d, dtype=dt), d, torch.float64),
    }
    if per_token:
        samples["scale_ub"] = lambda d: (*sample(lambda d, dt: torch.randn(4, 16, device=d, dtype=dt),
                                                 lambda d, dt: torch.rand(16, device=d, dtype=dt), d)[:-1],
                                         torch.tensor([0.5], device=d))
    return OpSpec(name, api=getattr(my_ops, name), reference=getattr(reference, name), args_for=args_for,
                  mutates=("residual",) if add else (), row_wise=True, samples=samples,
                  bad_calls=_norm_bad(name, add, per_token),
                  smoke=("float32", "float64", "bfloat16", "sliced", "eps -1"))


def _functional_spec(per_token):
    """A fused op's functional form, what an exported program calls in its place: the op's
    outputs, then the new residual (residual read, not written)."""
    name = "fused_add_rms_norm_fp8" + ("_per_token" if per_token else "")
    fused = _norm_spec(name, add=True, per_token=per_token)
    in_place = getattr(reference, name)

    def functional_reference(*args):
        new_residual, *outputs = in_place(*args)
        return (*outputs, new_residual)

    return OpSpec(f"{name}_functional", reference=functional_reference, args_for=fused.args_for,
                  # (the new residual: a copy of residual, which the in-place kernels update)
                  row_wise=True, copied=("residual",), samples=fused.samples,
                  bad_calls=_norm_bad(f"{name}_functional", add=True, per_token=per_token, functional=True),
                  smoke=fused.smoke)


def _silu_spec(per_token):
    name = "silu_and_mul_fp8" + ("_per_token" if per_token else "")

    def args_for(x):
        return (None,) if per_token else (scale_for(x),)

    def sample(x, d):
        return (x, None) if per_token else (x, _scale(d))

    bad = [
        BadCall("odd", lambda d: sample(t(3, 7, device=d), d),
                r"expected the last dimension of x to be even, but got 7"),
        BadCall("int16", lambda d: sample(t(2, 4, dtype=torch.int16, device=d), d),
                r"expected x to be a float32, float64, float16 or bfloat16 tensor, but got torch.int16"),
        BadCall("x requires grad", lambda d: sample(t(2, 8, device=d).requires_grad_(), d),
                rf"argument 'x' requires grad, but my_ops.{name} is an inference op"),
    ]
    if not per_token:
        bad += [BadCall(n, lambda d, make=make: (t(2, 8, device=d), make(d)), m) for n, make, m in _SCALE_BAD]
    samples = {
        "float32": lambda d: sample(torch.randn(4, 10, device=d), d),
        "bfloat16": lambda d: sample(torch.randn(2, 3, 64, device=d, **BF16), d),
        "sliced": lambda d: sample(torch.randn(5, 24, device=d)[:, 4:20], d),
        "float64": lambda d: sample(torch.randn(3, 12, device=d, dtype=torch.float64), d),
    }
    if per_token:
        samples["scale_ub"] = lambda d: (torch.randn(4, 16, device=d), torch.tensor([0.25], device=d))
    return OpSpec(name, api=getattr(my_ops, name), reference=getattr(reference, name), args_for=args_for,
                  row_wise=True, samples=samples, bad_calls=bad,
                  smoke=("float32", "float64", "bfloat16", "sliced", "odd"))


SPECS = [
    _norm_spec("rms_norm_fp8", add=False, per_token=False),
    _norm_spec("rms_norm_fp8_per_token", add=False, per_token=True),
    _norm_spec("fused_add_rms_norm_fp8", add=True, per_token=False),
    _norm_spec("fused_add_rms_norm_fp8_per_token", add=True, per_token=True),
    _functional_spec(per_token=False),
    _functional_spec(per_token=True),
    _silu_spec(per_token=False),
    _silu_spec(per_token=True),
]
