"""Op specs: what the shared op tests know about each op, as PyTorch's OpInfo.

One `OpSpec` per op (or per variant of an op, such as an activation's two
`approximate` modes), in a module per op family: `specs/<family>.py` holds a
list `SPECS`. `ALL` is every spec of every module in this package, found by
importing them, so no test lists ops: the shared tests (tests/ops/test_rules.py,
test_call_paths.py, test_op_specs.py, ...) parametrize over `ALL` or over the
specs with a trait, and adding an op is one entry in its family's module.

A spec describes its op by
  * `args_for(x)`: the arguments after the first one, made to fit a first
    argument x (shape, dtype, device), fresh and random; the tests that
    differentiate with respect to x or give x a layout call
    `spec.call(x)` / `spec.ref(x)` with them;
  * `samples`: named opcheck samples, `name -> (device -> args)`;
  * `bad_calls`: calls that break one argument rule, with a fragment of the
    message (after "my_ops.<op>: ");
  * `smoke`: the names, among `samples` and `bad_calls`, of the quick tier
    (`pytest -m smoke`): a sample of each dtype class the op takes (float32,
    float64, 16-bit), one whose tensors are not all contiguous, and one bad
    call. Optional to write, but test_smoke_tier.py fails for a spec without
    them (`smoke_gaps` says what is missing);
  * traits: `differentiable` (the Python API records a gradient),
    `mutates` (names of the arguments written in place), `row_wise` (reads
    evenly spaced rows in place), `copied` (names of the arguments a
    functional form copies into its result first, which its kernels then
    update in place: its own copy, not one the kernels need), `func`
    (torch.func transforms through the Python API), `dtypes`.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable, Optional

import pytest
import torch

DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
# The smoke tier runs one sample of each class an op takes: the kernels have a
# float32 path, a float64 path (float64 arithmetic) and a 16-bit one (float32
# arithmetic on converted loads and stores).
DTYPE_CLASSES = {"float32": (torch.float32,), "float64": (torch.float64,),
                 "16-bit": (torch.float16, torch.bfloat16)}


class _Input:
    """In `args_for`'s result: the first argument itself (mul(x, x))."""
    def __repr__(self):
        return "INPUT"


INPUT = _Input()


def t(*shape, dtype=torch.float32, device="cpu", low=None, high=None) -> torch.Tensor:
    """A fresh random tensor: normal, or uniform in [low, high); made in float64, then cast."""
    if low is None:
        return torch.randn(shape, dtype=torch.float64, device=device).to(dtype)
    return torch.empty(shape, dtype=torch.float64, device=device).uniform_(low, high).to(dtype)


def like(x: torch.Tensor, *shape, low=-3.0, high=3.0) -> torch.Tensor:
    """A fresh uniform tensor with x's dtype and device (x's shape unless given)."""
    return t(*(shape or x.shape), dtype=x.dtype, device=x.device, low=low, high=high)


@dataclass
class BadCall:
    """A call through torch.ops (`make(device)` gives the op's arguments) that
    breaks one rule; `message` is a regular expression searched in what
    follows "my_ops.<op>: ". `fake`: whether meta and fake tensors are refused
    with the same message (False where the rule is about real memory)."""
    name: str
    make: Callable[[str], tuple]
    message: str
    fake: bool = True


@dataclass
class OpSpec:
    name: str
    args_for: Callable[[torch.Tensor], tuple]
    api: Optional[Callable] = None           # my_ops.<name>; None: the op has only torch.ops.my_ops.<name>
    reference: Optional[Callable] = None     # float64 reference, called as the op is
    samples: dict = field(default_factory=dict)
    bad_calls: list = field(default_factory=list)
    variant: str = ""                        # in the id, for specs of one op with other arguments
    differentiable: bool = False
    mutates: tuple = ()
    row_wise: bool = False
    copied: tuple = ()
    func: bool = False
    input_shape: tuple = (5, 16)             # a first argument the tests may use
    module: Optional[Callable] = None        # makes the op's nn.Module, called as module()(x)
    dtypes: tuple = DTYPES
    smoke: tuple = ()                        # names in samples and bad_calls: the quick tier
    family: str = ""

    @property
    def id(self) -> str:
        return f"{self.name}-{self.variant}" if self.variant else self.name

    @property
    def op(self):
        return getattr(torch.ops.my_ops, self.name).default

    def resolve(self, x, args=None) -> tuple:
        """All the op's arguments for a first argument x: args (args_for(x)
        unless given) after x, INPUT replaced by x."""
        args = self.args_for(x) if args is None else args
        return (x, *(x if a is INPUT else a for a in args))

    def call(self, x, args=None):
        """The op through the Python API where it has one, else through torch.ops."""
        return (self.api or self.op)(*self.resolve(x, args))

    def ref(self, x, args=None):
        return self.reference(*self.resolve(x, args))

    def argument_names(self) -> list:
        return [a.name for a in self.op._schema.arguments]

    def __repr__(self) -> str:
        return self.id


def _collect() -> list:
    specs = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for spec in module.SPECS:
            spec.family = spec.family or info.name
            specs.append(spec)
    ids = [s.id for s in specs]
    assert len(ids) == len(set(ids)), f"two specs with one id: {ids}"
    return specs


ALL = _collect()


def where(**traits) -> list:
    """The specs with these traits (a trait given True matches any true value)."""
    def fits(spec):
        return all(bool(getattr(spec, k)) if v is True else getattr(spec, k) == v for k, v in traits.items())
    return [s for s in ALL if fits(s)]


def samples(specs=None) -> list:
    """(spec, sample name) pairs of the specs' opcheck samples, for parametrize."""
    return [(s, name) for s in (ALL if specs is None else specs) for name in s.samples]


def bad_calls(specs=None) -> list:
    return [(s, b) for s in (ALL if specs is None else specs) for b in s.bad_calls]


def tier(spec: OpSpec, name: str) -> list:
    """pytest marks of a spec's sample or bad call: `smoke` where its spec names it."""
    return [pytest.mark.smoke] if name in spec.smoke else []


def smoke_gaps(spec: OpSpec) -> list:
    """What the spec's smoke tier lacks (empty: complete), in words."""
    if not spec.smoke:
        return [f"{spec.id}: no smoke samples (OpSpec.smoke names them, in tests/ops/specs/{spec.family}.py)"]
    gaps = []
    bad = {b.name for b in spec.bad_calls}
    for name in spec.smoke:
        if (name in spec.samples) == (name in bad):
            where = "both samples and bad_calls" if name in bad else "neither samples nor bad_calls"
            gaps.append(f"{spec.id}: smoke name {name!r} is in {where}")
    tensors = [[a for a in spec.samples[name]("cpu") if isinstance(a, torch.Tensor)]
               for name in spec.smoke if name in spec.samples]
    taken = {t[0].dtype for t in tensors if t}
    for cls, members in DTYPE_CLASSES.items():
        if set(members) & set(spec.dtypes) and not set(members) & taken:
            gaps.append(f"{spec.id}: no {cls} smoke sample")
    if not any(not a.is_contiguous() for t in tensors for a in t):
        gaps.append(f"{spec.id}: no smoke sample with a non-contiguous tensor")
    if not bad & set(spec.smoke):
        gaps.append(f"{spec.id}: no smoke bad call")
    return gaps
