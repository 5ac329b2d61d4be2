"""my_ops: fused PyTorch operators written as C and CUDA C kernels.

The ops are registered with the PyTorch dispatcher as ``torch.ops.my_ops.*``
when this package is imported; the functions here are their typed Python API.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import torch

from . import _build_info, _libraries

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


# Before loading a kernel library: one built for another torch would fail
# with an opaque "undefined symbol"; this picks the one that fits (a
# label-free wheel holds several) or says which wheel fits instead.
libraries = _libraries.find(build_info)
_forced = os.environ.get(_libraries.FORCE_VARIABLE) or None
library, _not_chosen = _libraries.choose(libraries, torch.__version__, torch.version.cuda,
                                         getattr(torch.version, "hip", None), _forced)
_torch_problem = None if library is not None else _libraries.mismatch_text(
    build_info, libraries, _not_chosen, torch.__version__, torch.version.cuda, getattr(torch.version, "hip", None),
    _forced)
if _torch_problem is not None and not _running_diagnostics():
    raise ImportError(_torch_problem)

if _torch_problem is None:
    build_info = library.info
    if library.folder == _build_info.build_info_path().parent:
        from . import _C  # noqa: F401  (registers the ops with the dispatcher)
    else:
        _libraries.load_extension(library, __name__)
    from . import families, modules, reference  # noqa: F401
    from ._package_check import check_package  # noqa: F401  (whether this my_ops serves an AOTInductor package)

    # The public names: each op family's __all__ (my_ops/families/<family>.py),
    # one line per family, written out so that IDEs and type checkers see them.
    from .families.act_and_mul import *  # noqa: F403
    from .families.elementwise import *  # noqa: F403
    from .families.fp8 import *  # noqa: F403
    from .families.matmul import *  # noqa: F403
    from .families.rms_norm import *  # noqa: F403

    __all__ = ["build_info", "library", "reference", "HAVE_TRITON", "check_package", *families.public()]
else:
    __all__ = ["build_info", "library"]

# The Triton kernels of rms_norm (my_ops.rms_norm_triton, ops my_ops::triton_*)
# load on first use of my_ops.triton_rms_norm: importing Triton costs about a
# second, which no user of the C ops should pay.
HAVE_TRITON = importlib.util.find_spec("triton") is not None


def _triton_missing(x, weight, eps=1e-6):
    """Stand-in for my_ops.triton_rms_norm where Triton is not installed."""
    raise ImportError("my_ops.triton_rms_norm needs Triton, which is not installed here (it comes with torch's "
                      "CUDA wheels on Linux; or pip install triton); my_ops.rms_norm is the same op without it")


def __getattr__(name: str):
    if name == "triton_rms_norm" and _torch_problem is None:
        if HAVE_TRITON:
            try:
                from .rms_norm_triton import triton_rms_norm  # registers my_ops::triton_rms_norm
            except ImportError as error:  # installed, but broken: say so where it is used
                raise ImportError(f"my_ops.triton_rms_norm: Triton is installed but does not import ({error}); "
                                  "reinstall it (pip install --force-reinstall triton), or use "
                                  "my_ops.rms_norm, the same op without it") from error
        else:
            triton_rms_norm = _triton_missing
        globals()[name] = triton_rms_norm
        return triton_rms_norm
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
