"""torch.autocast for the ops that run in its lower precision, as torch.matmul does: in a region, floating-point
tensors on its device (float64 aside) are cast to the region's dtype (register_autocast casts to one fixed
dtype). A kernel per Autocast key, above autograd, so the gradients reach the uncast tensors.
"""

from __future__ import annotations

import torch
from torch import Tensor


def register_lower_precision(lib: torch.library.Library, name: str) -> None:
    """The Autocast kernels of my_ops::<name>: cast, then call the op with that device's autocast off (as
    PyTorch's own autocast kernels redispatch)."""
    op = getattr(torch.ops.my_ops, name).default
    for device_type, key in (("cpu", "AutocastCPU"), ("cuda", "AutocastCUDA")):
        def autocast_kernel(*args, _device_type=device_type):
            dtype = torch.get_autocast_dtype(_device_type)
            args = tuple(a.to(dtype) if isinstance(a, Tensor) and a.device.type == _device_type
                         and a.is_floating_point() and a.dtype != torch.float64 else a for a in args)
            # (torch.autocast(enabled=False) without its context manager's host time)
            torch.set_autocast_enabled(_device_type, False)
            try:
                return op(*args)
            finally:
                torch.set_autocast_enabled(_device_type, True)

        lib.impl(name, autocast_kernel, key)
