"""torch.autocast for the ops that run in its lower precision, as torch.matmul
does (PyTorch's "lower_precision_fp" autocast ops): inside an autocast region,
their floating-point tensor arguments on the region's device (float64 aside)
are cast to the region's dtype (torch.get_autocast_dtype) before the op runs.

Two places cast, both with public torch API:
- an Autocast kernel per device (AutocastCPU, AutocastCUDA), for calls
  through torch.ops: the dispatcher runs it above autograd, so autograd
  records the casts and the gradients reach the uncast tensors in their dtype;
- the Python API, before its own autograd road: _runtime._call records the
  op's autograd.Function from outside the dispatcher, and a cast made below
  it (in the Autocast kernel) would not be recorded, so backward would meet
  the uncast inputs. The Autocast kernel then finds nothing left to cast.
"""

from __future__ import annotations

import torch
from torch import Tensor

_DEVICES = (("cpu", "AutocastCPU"), ("cuda", "AutocastCUDA"))


def _cast(device_type: str, args) -> tuple:
    dtype = torch.get_autocast_dtype(device_type)
    return tuple(a.to(dtype) if isinstance(a, Tensor) and a.device.type == device_type and a.is_floating_point()
                 and a.dtype != torch.float64 else a for a in args)


def cast_for_autocast(args: tuple) -> tuple:
    """args, cast as an autocast region on their device would cast them (the
    Python API's cast); args themselves outside one."""
    for device_type, _ in _DEVICES:
        if torch.is_autocast_enabled(device_type):
            args = _cast(device_type, args)
    return args


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
