"""Print what the build needs to know about the installed torch, as KEY=VALUE lines.

Run by CMakeLists.txt with the build's Python interpreter.
"""

import torch
import torch.utils

print(f"TORCH_VERSION={torch.__version__}")
print(f"TORCH_CUDA={torch.version.cuda or ''}")
print(f"TORCH_CMAKE_PREFIX={torch.utils.cmake_prefix_path}")
print(f"TORCH_CXX11_ABI={int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))}")
