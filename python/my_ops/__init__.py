"""my_ops: fused PyTorch operators written as C and CUDA C kernels.

The ops are registered with the PyTorch dispatcher as ``torch.ops.my_ops.*``
when this package is imported; the functions here are their typed Python API.
"""

from __future__ import annotations

import torch

from . import _build_info

build_info = _build_info.load()
# Before loading the extension: a wheel built for another torch would fail
# with an opaque "undefined symbol"; this says which wheel fits instead.
_build_info.check_torch(build_info, torch.__version__, torch.version.cuda)

from . import _C  # noqa: E402,F401  (registers the ops with the dispatcher)
from .modules import RMSNorm, SiluAndMul  # noqa: E402
from .ops import (  # noqa: E402
    add_out,
    fused_add_rms_norm,
    matmul,
    mul,
    muladd,
    rms_norm,
    short_kernel,
    silu_and_mul,
)

__version__ = build_info.version

__all__ = [
    "RMSNorm",
    "SiluAndMul",
    "add_out",
    "build_info",
    "fused_add_rms_norm",
    "matmul",
    "mul",
    "muladd",
    "rms_norm",
    "short_kernel",
    "silu_and_mul",
]
