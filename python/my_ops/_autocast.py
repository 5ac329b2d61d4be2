"""torch.autocast for the ops that run in its lower precision, as torch.matmul
does (PyTorch's "lower_precision_fp" autocast ops): inside an autocast region,
their floating-point tensor arguments on the region's device (float64 aside)
are cast to the region's dtype (torch.get_autocast_dtype) before the op runs.

An Autocast kernel per device (AutocastCPU, AutocastCUDA), which every call
passes (the Python API calls the op through the dispatcher): it runs above
autograd, so autograd records the casts and the gradients reach the uncast
tensors in their dtype. (torch.library.register_autocast casts to one dtype
fixed when it is registered, not to the region's dtype as torch.matmul does.)
"""

from __future__ import annotations

import torch
from torch import Tensor

_DEVICES = (("cpu", "AutocastCPU"), ("cuda", "AutocastCUDA"))


def _cast(device_type: str, args) -> tuple:
    dtype = torch.get_autocast_dtype(device_type)
    return tuple(a.to(dtype) if isinstance(a, Tensor) and a.device.type == device_type and a.is_floating_point()
                 and a.dtype != torch.float64 else a for a in args)


def register_lower_precision(lib: torch.library.Library, name: str) -> None:
    """The Autocast kernels of my_ops::<name>: cast, then call the op with that
    device's autocast off (as PyTorch's own autocast kernels redispatch)."""
    op = getattr(torch.ops.my_ops, name).default
    for device_type, key in _DEVICES:
        def autocast_kernel(*args, _device_type=device_type):
            args = _cast(_device_type, args)
            # what torch.autocast(enabled=False) does inside a region, without
            # its Python context manager (most of the kernel's host time): the
            # dtype and the cast cache stay as the region has them
            torch.set_autocast_enabled(_device_type, False)
            try:
                return op(*args)
            finally:
                torch.set_autocast_enabled(_device_type, True)

        lib.impl(name, autocast_kernel, key)
