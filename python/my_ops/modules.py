"""nn.Module wrappers of the fused ops, drop-in for the usual LLM building
blocks. Each is defined beside its op in its family module
(my_ops/families/<family>.py) and exported as `my_ops.<Module>`; gathered
here too, so `my_ops.modules.<Module>` (and objects pickled with that path)
still resolve.
"""

from __future__ import annotations

from . import families

globals().update(families.nn_modules())
__all__ = sorted(families.nn_modules())
