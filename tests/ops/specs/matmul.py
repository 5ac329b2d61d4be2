"""Spec of matmul (tests: test_matmul.py)."""

from __future__ import annotations

import torch

import my_ops
from specs import BadCall, OpSpec, like, t

SPECS = [
    OpSpec(
        "matmul", api=my_ops.matmul, reference=lambda a, b: a.double() @ b.double(),
        args_for=lambda a: (like(a, a.shape[-1], 4, low=-1, high=1),), differentiable=True, func=True,
        samples={
            "float32": lambda d: (torch.randn(5, 7, device=d), torch.randn(7, 3, device=d)),
            "bfloat16-transposed": lambda d: (torch.randn(8, 4, device=d, dtype=torch.bfloat16).t(),
                                              torch.randn(8, 2, device=d, dtype=torch.bfloat16)),
            "grad": lambda d: (torch.randn(3, 4, device=d, requires_grad=True),
                               torch.randn(4, 5, device=d, requires_grad=True)),
            "empty-k": lambda d: (torch.randn(3, 0, device=d), torch.randn(0, 2, device=d)),
            "float64": lambda d: (torch.randn(6, 5, device=d, dtype=torch.float64),
                                  torch.randn(5, 3, device=d, dtype=torch.float64)),
        },
        smoke=("float32", "float64", "bfloat16-transposed", "rows"),
        bad_calls=[
            BadCall("3-D", lambda d: (t(2, 3, 4, device=d), t(4, 2, device=d)),
                    r"expected a to be 2-D, but got 3-D shape \[2, 3, 4\]"),
            BadCall("1-D b", lambda d: (t(3, 4, device=d), t(4, device=d)),
                    r"expected b to be 2-D, but got 1-D shape \[4\]"),
            BadCall("rows", lambda d: (t(3, 4, device=d), t(5, 2, device=d)),
                    r"expected b to have 4 rows \(the columns of a\), but got shape \[5, 2\]"),
            BadCall("int32", lambda d: (t(2, 2, dtype=torch.int32, device=d), t(2, 2, device=d)),
                    r"expected a to be a float32, float64, float16 or bfloat16 tensor, but got torch.int32"),
        ]),
]
