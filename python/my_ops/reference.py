"""Float64 references of the ops, in plain torch: what the tests compare every
kernel against, and what the benchmarks check each implementation against
before timing it. One definition per op, beside the op in its family module
(`<op>_ref` in my_ops/families/<family>.py), here as `my_ops.reference.<op>`;
each returns float64 tensors and is differentiable (the tests take reference
gradients through it).
"""

from __future__ import annotations

from . import families

globals().update(families.references())
__all__ = sorted(families.references())
