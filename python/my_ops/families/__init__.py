"""The op families: one module per family, as src/binding/<family>.cpp.

A family module holds, beside each of its ops, everything Python knows of it:
the typed function (which calls torch.ops.my_ops.<op>), the fake kernel
(torch.library.register_fake), the autograd registration, the float64
reference and the nn.Module if any. Its `__all__` lists its public names,
which my_ops/__init__.py star-imports (one line per family, written out so
that IDEs and type checkers see them); its `REFERENCES`, its references
(`<op>_ref`), which `my_ops.reference` gathers as `<op>`. Every module here
is imported with this package (MODULES), and `my_ops.reference` and
`my_ops.modules` gather from them all: neither lists the families or ops.

Why a subpackage: importing a submodule binds it as an attribute of its
package. A family module my_ops/rms_norm.py would make `my_ops.rms_norm` the
module or the function depending on the order of imports (and a module
named matmul.py would do the same to `my_ops.matmul`). Here the family
modules are `my_ops.families.<family>`, and this package binds none of their
public names, so `my_ops.families.rms_norm` is always the module and
`my_ops.rms_norm` always the function.
"""

from __future__ import annotations

import importlib
import pkgutil

from torch import nn

MODULES = tuple(importlib.import_module(f"{__name__}.{info.name}")
                for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name))


def public() -> dict:
    """name -> object: every family's public names (functions and nn.Modules)."""
    return {name: getattr(module, name) for module in MODULES for name in module.__all__}


def nn_modules() -> dict:
    """name -> class: the nn.Module subclasses among the public names."""
    return {name: obj for name, obj in public().items() if isinstance(obj, type) and issubclass(obj, nn.Module)}


def references() -> dict:
    """op name -> its float64 reference, from each family's REFERENCES."""
    return {ref.__name__.removesuffix("_ref"): ref for module in MODULES for ref in getattr(module, "REFERENCES", ())}
