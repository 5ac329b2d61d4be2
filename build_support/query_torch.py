"""Print what the build needs to know about the installed torch, as KEY=VALUE lines.

Run by CMakeLists.txt with the build's Python interpreter.
"""

import pathlib

import torch
import torch.utils

print(f"TORCH_VERSION={torch.__version__}")
print(f"TORCH_CUDA={torch.version.cuda or ''}")
print(f"TORCH_CMAKE_PREFIX={torch.utils.cmake_prefix_path}")
print(f"TORCH_ROOT={pathlib.Path(torch.__file__).parent.as_posix()}")
print(f"TORCH_CXX11_ABI={int(torch.compiled_with_cxx11_abi())}")
