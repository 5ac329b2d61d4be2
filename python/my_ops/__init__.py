"""my_ops: fused PyTorch operators written as C and CUDA C kernels.

The ops are registered with the PyTorch dispatcher as ``torch.ops.my_ops.*``
when this package is imported; the functions here are their typed Python API.
"""

from __future__ import annotations

import sys

import torch

from . import _build_info

build_info = _build_info.load()
__version__ = build_info.version


def _running_diagnostics() -> bool:
    """True while `python -m my_ops` imports this package: it reports mismatches itself.

    runpy imports the package to find my_ops.__main__, and its frames name the
    module being run (sys.orig_argv would say it too, but only from 3.10 on).
    """
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == "runpy" and frame.f_locals.get("mod_name") == "my_ops":
            return True
        frame = frame.f_back
    return False


# Before loading the extension: a wheel built for another torch would fail
# with an opaque "undefined symbol"; this says which wheel fits instead.
_torch_problem = _build_info.torch_mismatch(build_info, torch.__version__, torch.version.cuda)
if _torch_problem is not None and not _running_diagnostics():
    raise ImportError(_torch_problem)

if _torch_problem is None:
    from . import _C  # noqa: F401  (registers the ops with the dispatcher)
    from . import modules, ops, reference  # noqa: F401
    from .modules import *  # noqa: F403  (the public names: each module's __all__)
    from .ops import *  # noqa: F403

    # The Triton family (my_ops::triton_rms_norm) only where Triton imports;
    # elsewhere my_ops.triton_rms_norm is a stand-in raising ImportError.
    try:
        import triton  # noqa: F401
    except ImportError:
        HAVE_TRITON = False

        def triton_rms_norm(x, weight, eps=1e-6):
            """Stand-in: Triton is not installed; my_ops.rms_norm is the same op."""
            raise ImportError("my_ops.triton_rms_norm needs Triton, which is not installed here (it comes "
                              "with torch's CUDA wheels on Linux; or pip install triton); my_ops.rms_norm "
                              "is the same op without it")
    else:
        HAVE_TRITON = True
        from .triton_rms_norm import triton_rms_norm  # noqa: F401  (registers my_ops::triton_rms_norm)

    __all__ = ["build_info", "reference", "HAVE_TRITON", "triton_rms_norm", *ops.__all__, *modules.__all__]
else:
    __all__ = ["build_info"]
