"""The op argument rules, checked in Python: the fake kernels' half of
src/binding/op_rules.h.

The rules themselves are defined once, in C++ beside each op's schema, and
read from my_ops._C; this module interprets them for meta and fake tensors
(torch.compile tracing, shape inference) with the same messages the C++
checks give. A rule on a symbolic size is a plain Python test (through
_torch_compat.check), which guards the size: the compiled call holds for
the sizes that pass it. tests/ops/test_rules.py runs every rule through both.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import sys
from dataclasses import dataclass, field

import torch
from torch import Tensor

from . import _C
from ._torch_compat import schema as _schema

# float32's least positive (subnormal) and greatest finite values: an eps's range.
_FLOAT32_LEAST, _FLOAT32_MOST = torch.finfo(torch.float32).smallest_normal * 2.0 ** -23, torch.finfo(torch.float32).max
_FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
# Devices a fake kernel accepts: the real kernels' CPU and CUDA, and meta
# (shape inference). Mixing them is refused by `like=`.
_DEVICES = ("cpu", "cuda", "meta")
# The float dtypes wider than each (holding each of its values), narrowest first: `like_or_wider=`.
_WIDER = {torch.float16: (torch.float32, torch.float64), torch.bfloat16: (torch.float32, torch.float64),
          torch.float32: (torch.float64,)}


@dataclass(frozen=True)
class Clause:
    key: str
    ref: str = ""
    fn: str = ""
    number: int = 0


@dataclass
class Param:
    name: str
    kind: str  # Tensor, float, int, bool or str
    optional: bool = False  # Tensor?, float?, ...: None passes
    clauses: list[Clause] = field(default_factory=list)

    @property
    def is_tensor(self) -> bool:
        return self.kind == "Tensor"


# Each clause: the kind of argument it applies to, and what follows its '=' (or its
# '>=': a number): nothing, a number, one_of's words, or a tensor argument's name,
# bare ("") or inside one of the functions named. op_rules.cpp's parse_clause has this table.
_CLAUSES = {**dict.fromkeys(("like", "like_or_wider", "apart", "apart_or_same", "scale"), ("Tensor", ("",))),
            "shape": ("Tensor", ("", "last", "half")), "rows": ("Tensor", ("cols",)),
            "dim>=": ("Tensor", "number"), "dim": ("Tensor", "number"),
            "even": ("Tensor", "nothing"), "written": ("Tensor", "nothing"), "eps": ("float", ("",)),
            "one_of": ("str", "words"), ">=": ("int", "number")}


def _data_dependent(error: RuntimeError) -> bool:
    """Whether error is torch's refusal to guard a data-dependent size (GuardOnDataDependentSymNode), looked up
    where a trace that raises it has loaded it: importing it would load sympy with my_ops."""
    shapes = sys.modules.get("torch.fx.experimental.symbolic_shapes")
    return shapes is not None and isinstance(error, shapes.GuardOnDataDependentSymNode)


def _check(cond, message) -> None:
    """torch._check's contract, public: a symbolic size is guarded (a SymBool's truth), not asserted. A relation
    of data-dependent sizes (rows picked with nonzero() on both sides) no trace decides: the op's C++ kernel,
    which every call reaches, checks it when the graph runs."""
    try:
        if cond:
            return
    except RuntimeError as error:
        if not _data_dependent(error):
            raise
        return
    raise RuntimeError(message())


def _or_list(items) -> str:
    """"a, b or c", as op_rules.cpp's or_list writes it."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _integer(word: str) -> int:
    """An integer of a rule (`>=N`, `dim=N`), as op_rules.cpp's rule_integer reads it."""
    if not re.fullmatch(r"[+-]?\d+", word):
        raise ValueError(f"'{word}' is not an integer")
    return int(word)


def _parse_clause(word: str, p: Param, params: dict) -> Clause:
    """One clause of p's rules, as written: `key`, `key=value` or `key>=N`. A word
    of another form than its clause's is refused: read anyway, it would check
    something else (`rows=x` as `rows=cols(x)`, `dim=f(3)` as `dim=3`) or nothing
    (`like` with no argument to compare with passes every call)."""
    if ">=" in word:
        key, value = word.split(">=", 1)
        key += ">="
    else:
        key, _, value = word.partition("=")
    has_value = "=" in word
    if key not in _CLAUSES:
        raise ValueError(f"unknown clause '{word}'")
    kind, takes = _CLAUSES[key]
    if kind != p.kind:
        raise ValueError(f"clause '{word}' does not apply to the {p.kind} argument '{p.name}'")
    if takes == "nothing":
        if has_value:
            raise ValueError(f"clause '{word}' takes no value: {key}")
        return Clause(key)
    if takes == "number":
        # (only `dim` can lack it: a `>=` clause's key ends where its number starts)
        if not has_value:
            raise ValueError(f"clause '{word}' needs a number: {key}=<N>")
        return Clause(key, number=_integer(value))
    if takes == "words":
        if "" in value.split("|"):
            raise ValueError(f"clause '{word}' needs words separated by '|', none empty")
        return Clause(key, ref=value)
    # `name` or `fn(name)`: a '(' after a function's name, and ')' last
    fn, ref, open_ = "", value, value.find("(")
    if open_ > 0 and value.endswith(")"):
        fn, ref = value[:open_], value[open_ + 1:-1]
    if not ref or "(" in ref or ")" in ref or fn not in takes:
        forms = _or_list(f"{key}=" + (f"{f}(<argument>)" if f else "<argument>") for f in takes)
        raise ValueError(f"clause '{word}' needs an argument to compare with: {forms}")
    if ref not in params:
        raise ValueError(f"rules name an unknown argument '{ref}'")
    if not params[ref].is_tensor:  # (the check would skip it: no tensor to compare)
        raise ValueError(f"clause '{word}' compares with the {params[ref].kind} argument '{ref}': "
                         "it needs a tensor argument")
    return Clause(key, ref=ref, fn=fn)


@functools.cache
def op_names() -> tuple[str, ...]:
    """The ops that have rules (every op of the C++ library)."""
    return tuple(line.split("\t")[0] for line in _C.op_rules().splitlines())


def parse(arguments, text: str) -> list[Param]:
    """The rules `text` of a schema's `arguments`; ValueError, with op_rules.cpp's
    words, for a malformed text (which that reader refuses when the library loads)."""
    params = {}
    for a in arguments:
        kind = str(a.type)
        optional = kind.startswith("Optional[")
        kind = kind[9:-1] if optional else kind
        if kind not in ("Tensor", "float", "int", "bool", "str"):
            raise ValueError(f"argument '{a.name}' has a type the rules do not take "
                             "(Tensor, float, int, bool or str, each optionally with ?)")
        if a.name in params:  # (torch's schema parser takes it)
            raise ValueError(f"two arguments named '{a.name}'")
        params[a.name] = Param(a.name, kind, optional)
    for entry in filter(None, (e.strip() for e in text.split(";"))):
        if ":" not in entry:
            raise ValueError(f"rule without 'arg:': {entry}")
        arg, words = (part.strip() for part in entry.split(":", 1))
        if arg not in params:
            raise ValueError(f"rules name an unknown argument '{arg}'")
        p = params[arg]
        for word in words.split():
            p.clauses.append(_parse_clause(word, p, params))
    return list(params.values())


@functools.cache
def rules(op: str) -> list[Param]:
    """op's rules, parsed on first use (the first fake-kernel call), not at import."""
    text = dict(line.split("\t") for line in _C.op_rules().splitlines())[op]
    return parse(_schema(getattr(torch.ops.my_ops, op).default).arguments, text)


def eps_refusal(name: str, value: float, x: str = "x", float64: bool = False, also: str = "") -> str:
    """Why the value of an `eps={x}` clause is refused ("" if it is not), as op_rules.cpp words it;
    float64: x is float64 (its kernels add eps in float64); `also` follows "finite number >= 0"."""
    if not (math.isfinite(value) and value >= 0):
        return f"expected {name} to be a finite number >= 0{also}, but got {value:g}"
    if value != 0 and not float64 and not _FLOAT32_LEAST <= value <= _FLOAT32_MOST:
        # (x of 16 or 32 bits adds eps in float32, where it would become 0 or inf)
        return (f"expected {name} to be 0 or from 1.4e-45 to 3.4e+38 (float32's range, in which the kernels "
                f"add it to {x} of 16 or 32 bits), but got {value:g}")
    return ""


def _fail(op: str, message: str):
    raise RuntimeError(f"my_ops.{op}: {message}")


def _shape_text(sizes) -> str:
    """Sizes as numbers, symbolic ones too (torch.compile with dynamic shapes
    traces an `s27`): int() specialises the symbol to the traced call's size,
    which costs nothing here, on the way to a refusal."""
    return "[" + ", ".join(str(int(s)) for s in sizes) + "]"


def _view(t: Tensor) -> tuple:
    """(sizes, strides, element size, byte offset) as ints. A symbolic size
    (torch.compile with dynamic shapes) is specialised to the traced call's:
    where tensors share memory, whether they overlap depends on the exact
    sizes, and a fake kernel that skipped the rule would let the compiled
    call write through an overlap the eager call refuses. Only tensors that
    share a storage and are not shown apart as a relation of their symbols
    get here, so other calls keep their dynamic sizes."""
    return (tuple(int(s) for s in t.shape), tuple(int(s) for s in t.stride()), t.element_size(), int(_address(t)))


_ADDRESSED = (Tensor, torch.nn.Parameter)


def _has_address(t: Tensor) -> bool:
    """Whether t's memory has an address to compare: a plain tensor (or
    Parameter) off the meta device. Fake and functional tensors (tracing),
    meta ones and other subclasses are compared by storage alone, as is a
    wrapper whose data pointer cannot be read."""
    if type(t) not in _ADDRESSED or t.device.type == "meta":
        return False
    try:
        t.data_ptr()
    except RuntimeError:
        return False
    return True


def _address(t: Tensor):
    """The byte of t's first element: its address in memory where it has one,
    else its offset in its storage (compared only with views of that storage)."""
    return t.data_ptr() if _has_address(t) else t.storage_offset() * t.element_size()


def _shares_memory(a: Tensor, b: Tensor) -> bool:
    """Whether a and b may share memory: views of one storage (all that a
    traced tensor can tell), or, for tensors with an address, storages whose
    bytes meet (torch.from_numpy twice over one array, DLPack), as the C++
    rules compare them."""
    sa, sb = a.untyped_storage(), b.untyped_storage()
    if sa is sb:  # (one Python object per live storage)
        return True
    # (plain tensors off the meta device: _has_address without its probe, which this
    # path, taken for every pair of distinct storages, does not need)
    if type(a) not in _ADDRESSED or type(b) not in _ADDRESSED or a.device != b.device or a.device.type == "meta":
        return False
    pa, pb = sa.data_ptr(), sb.data_ptr()
    return pa < pb + sb.nbytes() and pb < pa + sa.nbytes()


def _same_view(t: Tensor, ref: Tensor) -> bool:
    """Whether t is ref or the same view of the same bytes (compared as
    relations of symbols: no size pinned)."""
    return t is ref or (t.element_size() == ref.element_size() and t.shape == ref.shape
                        and t.stride() == ref.stride() and _address(t) == _address(ref))


def _apart_whatever_the_sizes(t: Tensor) -> bool:
    """Whether no two elements of t share memory, shown without pinning a
    symbolic size: in some order of its dimensions each stride passes the
    span of the dimensions before it (a slice, a transpose, an interleaved
    view). Shown for every size the symbols may take where possible (no
    guard); else in the order of the traced strides, guarding that relation
    of the symbols (a call that breaks it recompiles; exporting guards none:
    _memory_clause). False where the relation
    fails: the exact test then decides (_memory_clause)."""
    # (imported here: it loads sympy, which importing my_ops should not)
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    sizes, strides = t.shape, t.stride()
    if len(sizes) > 5:
        return False

    def apart_in(order, holds) -> bool:
        span = 0
        for d in order:
            if not holds((sizes[d] == 1) | (strides[d] > span)):
                return False
            span = span + (sizes[d] - 1) * strides[d]
        return True

    if any(statically_known_true(size == 0) for size in sizes) or any(
            apart_in(order, statically_known_true) for order in itertools.permutations(range(len(sizes)))):
        return True
    return apart_in(sorted(range(len(sizes)), key=lambda d: strides[d]), bool)


def _not_dense(t: Tensor) -> str:
    """What t is instead of a dense (strided) tensor ("a nested tensor", "layout ..."); "" for a dense one."""
    return "a nested tensor" if t.is_nested else "" if t.layout == torch.strided else f"layout {t.layout}"


def _symbolic(*tensors: Tensor | None) -> bool:
    """Whether a traced tensor's sizes, strides or offset are symbolic (dynamic shapes)."""
    return any(isinstance(s, torch.SymInt) for t in tensors if t is not None
               for s in (*t.shape, *t.stride(), t.storage_offset()))


def _disjoint_spans(a: Tensor, b: Tensor) -> bool:
    """Whether the memory spans of a and b (first byte of the first element
    to last byte of the last) do not meet: a relation of their symbols,
    guarded, not their sizes (two halves of one buffer stay dynamic). In
    bytes: a float32 weight and a bfloat16 residual may be views of one
    storage. False where they meet: the exact test then decides
    (_memory_clause)."""
    def span(t: Tensor):
        start = _address(t)
        return start, start + (sum((n - 1) * stride for n, stride in zip(t.shape, t.stride())) + 1) * t.element_size()

    (a_start, a_end), (b_start, b_end) = span(a), span(b)
    return bool(a_end <= b_start) or bool(b_end <= a_start)


def check(op: str, *args, params: list[Param] | None = None, memory: bool = True) -> None:
    """Raise RuntimeError("my_ops.<op>: ...") where the real kernel would (by
    `params`, parse()'s, instead of op's rules: tests/ops/test_rules.py;
    memory=False: all but the memory clauses, for tensors whose memory cannot
    be read, which the call below then checks)."""
    params = rules(op) if params is None else params
    for p, a in zip(params, args):
        if not p.is_tensor:
            continue
        if a is None:
            if p.optional:
                continue
            _fail(op, f"expected {p.name} to be a tensor, but got None")
        if not_dense := _not_dense(a):
            _fail(op, f"expected {p.name} to be a dense (strided) tensor, but got {not_dense}")
        if a.dtype not in _FLOAT_DTYPES and not any(c.key == "scale" for c in p.clauses):
            # (a `scale=` argument's own clause names the one dtype it takes)
            _fail(op, f"expected {p.name} to be a float32, float64, float16 or bfloat16 tensor, "
                      f"but got {a.dtype}")
        if a.device.type not in _DEVICES:
            _fail(op, f"expected {p.name} to be on the CPU or a CUDA device, but got {a.device}")
    by_name = {p.name: a for p, a in zip(params, args)}
    for p, a in zip(params, args):
        if p.is_tensor:
            if a is not None:
                _check_tensor(op, p, a, by_name, memory)
        elif a is None:
            continue
        elif any(c.key == "eps" for c in p.clauses):
            x = next(c.ref for c in p.clauses if c.key == "eps")
            float64 = isinstance(by_name[x], Tensor) and by_name[x].dtype == torch.float64
            refusal = eps_refusal(p.name, a, x, float64)
            if refusal:
                _fail(op, refusal)
        else:
            for c in p.clauses:
                if c.key == ">=":
                    # (int(a): a bool, which the dispatcher reads as 0 or 1, written as C++ writes it)
                    _check(a >= c.number, lambda: f"my_ops.{op}: expected {p.name} to be >= {c.number}, "
                                                  f"but got {int(a)}")
                if c.key == "one_of" and a not in c.ref.split("|"):
                    expected = _or_list(f"'{w}'" for w in c.ref.split("|"))
                    _fail(op, f"expected {p.name} to be {expected}, but got '{a}'")


def check_dtype(op: str, name: str, t: Tensor, ref_name: str, ref: Tensor, or_wider: bool) -> None:
    """`like=` / `like_or_wider=`'s dtype test and message (also the Triton op's weight check)."""
    wider = _WIDER.get(ref.dtype, ()) if or_wider else ()
    also = f" or a wider float dtype ({', '.join(map(str, wider))})" if wider else ""
    _check(t.dtype == ref.dtype or t.dtype in wider, lambda: f"my_ops.{op}: expected {name} to have "
                 f"the same dtype as {ref_name} ({ref.dtype}){also}, but got {t.dtype}")


# The clauses about memory: which elements a call writes and reads.
_MEMORY = ("written", "apart", "apart_or_same")


@functools.cache
def memory_steps(op: str) -> tuple:
    """op's memory clauses in the order check() meets them, for
    check_memory(): (i, argument name, clause key, ref name, j), i and j the
    indices among op's tensor arguments of the argument and of the one its
    clause names (None: no ref)."""
    names = [p.name for p in rules(op) if p.is_tensor]
    return tuple((names.index(p.name), p.name, c.key, c.ref, names.index(c.ref) if c.ref else None)
                 for p in rules(op) if p.is_tensor for c in p.clauses if c.key in _MEMORY)


def check_memory(op: str, tensors) -> None:
    """op's memory clauses on its tensor arguments (`tensors`, in order; None
    for an absent one), as check() has them: my_ops.check_memory's kernel,
    the compiled graphs' node (_mutating.py) and vmap's (the batch whole)."""
    if op not in op_names():
        raise RuntimeError(f"my_ops.check_memory: expected op to name a my_ops op with argument rules "
                           f"({', '.join(sorted(op_names()))}), but got '{op}'")
    count = sum(p.is_tensor for p in rules(op))
    if len(tensors) != count:
        raise RuntimeError(f"my_ops.check_memory: expected tensors to hold my_ops.{op}'s {count} tensor "
                           f"arguments in order (None for an absent one), but got {len(tensors)}")
    for t in tensors:
        got = isinstance(t, Tensor) and (_not_dense(t) or (f"a quantized tensor ({t.dtype})" if t.is_quantized else ""))
        if got:
            raise RuntimeError(f"my_ops.check_memory: expected tensors to be dense (strided) tensors, but got {got}")
    for i, name, key, r, j in memory_steps(op):
        t, ref = tensors[i], None if j is None else tensors[j]
        if isinstance(t, Tensor) and (not r or isinstance(ref, Tensor)):
            _memory_clause(op, name, key, t, r, ref)


def _memory_clause(op: str, n: str, key: str, t: Tensor, r: str, ref: Tensor | None) -> None:
    """The memory clause `key` of the argument n (t), naming r (ref): the
    tests that decide most calls first (a contiguous written tensor;
    tensors that share no memory, or the same view for apart_or_same), then
    those that decide the others without pinning a symbolic size, then the
    exact test (_C.overlap) at the traced sizes. The exact test is not left
    to the graph's check_memory node: inductor may hand that node, and the
    op, fresh copies of an intermediate's views, where no overlap shows.
    While exporting, a clause on symbolic sizes is left to the program's
    own call of the op, which checks it when the program runs: a guard here
    would become an input check of the program, refusing legal calls of
    other sizes with torch's AssertionError. A relation of data-dependent
    sizes (an offset read with .item()) no trace decides: refused, naming
    what to do, as the run's check may see copies."""
    if torch.compiler.is_exporting() and _symbolic(t, ref):
        return
    try:
        _decide_memory_clause(op, n, key, t, r, ref)
    except RuntimeError as error:
        if not _data_dependent(error):
            raise
        what = f"{n} and {r} share memory" if r else f"the elements of {n} share memory"
        _fail(op, f"whether {what} depends on a value the compiled function reads (a size or offset from "
                  ".item() or nonzero()), which torch.compile cannot check before the op writes; take the views "
                  "at sizes and offsets it can trace (from tensor shapes or Python ints), or call the op outside "
                  "the compiled function (torch.compiler.disable)")


def _apart_in_one_period(a: Tensor, b: Tensor) -> bool:
    """Whether a and b, views of one shape and strides, are apart as a
    relation of their symbols, not their sizes: all strides at or above some
    stride q are multiples of it, the elements of each view take an extent e
    within each stretch of q bytes, and the views start d bytes apart with
    e <= d <= q - e (the two column halves of each row of a buffer, or
    interleaved columns). Guarded: a call that breaks it recompiles."""
    if a.shape != b.shape or a.stride() != b.stride() or a.element_size() != b.element_size():
        return False
    size = a.element_size()
    strides = [stride * size for stride in a.stride()]
    d = abs(_address(b) - _address(a))
    for q in strides:
        if q == 0:  # (a broadcast dimension: no period)
            continue
        below = [i for i, stride in enumerate(strides) if stride < q]
        if any(stride % q != 0 for stride in strides if stride >= q):
            continue
        extent = sum((a.shape[i] - 1) * strides[i] for i in below) + size
        if extent <= d and d + extent <= q:
            return True
    return False


def _decide_memory_clause(op: str, n: str, key: str, t: Tensor, r: str, ref: Tensor | None) -> None:
    if key == "written":
        if t.is_contiguous() or _apart_whatever_the_sizes(t):
            return  # (no element shares memory, whatever the sizes)
        if _C.overlap(_view(t)) != 0:
            _fail(op, f"{n} is written in place, so its elements must not share memory (it "
                      "looks like an expanded or broadcast view); pass a tensor of its own, "
                      f"e.g. {n}.clone()")
        return
    if not _shares_memory(t, ref) or (key == "apart_or_same" and _same_view(t, ref)) or _disjoint_spans(t, ref) \
            or (_symbolic(t, ref) and _apart_in_one_period(t, ref)):
        return
    a, b = _view(ref), _view(t)
    if _C.overlap(a, b) != 0:
        if key == "apart_or_same":
            _fail(op, f"{n} overlaps {r} without being the same tensor; pass {n}={r} "
                      "itself or a tensor that shares no memory with it")
        _fail(op, f"{r} and {n} must not share memory, but they overlap; pass separate "
                  f"tensors (e.g. {n}.clone())")


def _check_tensor(op: str, p: Param, t: Tensor, args: dict, memory: bool = True) -> None:
    n = p.name
    for c in p.clauses:
        if not memory and c.key in _MEMORY:
            continue
        ref = args.get(c.ref)
        r = c.ref
        if r and not isinstance(ref, Tensor):
            continue  # (an optional tensor, or None that check() names first)
        if c.key in ("like", "like_or_wider"):
            check_dtype(op, n, t, r, ref, or_wider=c.key == "like_or_wider")
            _check(t.device == ref.device, lambda: f"my_ops.{op}: expected {n} to be on the "
                         f"same device as {r} ({ref.device}), but got {t.device}")
        elif c.key == "scale":
            _check(t.dtype == torch.float32 and t.numel() == 1, lambda: f"my_ops.{op}: expected {n} to be a "
                         f"float32 tensor of one element, but got a {t.dtype} tensor of shape {_shape_text(t.shape)}")
            _check(t.device == ref.device, lambda: f"my_ops.{op}: expected {n} to be on the "
                         f"same device as {r} ({ref.device}), but got {t.device}")
        elif c.key == "dim>=":
            unit = "dimension" if c.number == 1 else "dimensions"
            _check(t.dim() >= c.number, lambda: f"my_ops.{op}: expected {n} to have at least "
                         f"{c.number} {unit}, but got a {t.dim()}-D tensor")
        elif c.key == "dim":
            _check(t.dim() == c.number, lambda: f"my_ops.{op}: expected {n} to be "
                         f"{c.number}-D, but got {t.dim()}-D shape {_shape_text(t.shape)}")
        elif c.key == "shape":
            want, why = list(ref.shape), ""
            if c.fn == "last":
                want, why = [ref.shape[-1] if ref.dim() > 0 else 1], f" (the last dimension of {r})"
            elif c.fn == "half":
                if want:
                    want[-1] = want[-1] // 2
                why = f" ({r} with its last dimension halved)"
            what = "shape " if c.fn else f"the same shape as {r} "

            def message():
                return (f"my_ops.{op}: expected {n} to have {what}{_shape_text(want)}{why}, "
                        f"but got {_shape_text(t.shape)}")

            _check(t.dim() == len(want), message)
            for got, expected in zip(t.shape, want):
                _check(got == expected, message)
        elif c.key == "even":
            if t.dim() > 0:
                _check(t.shape[-1] % 2 == 0, lambda: f"my_ops.{op}: expected the last "
                             f"dimension of {n} to be even, but got {int(t.shape[-1])}")
        elif c.key == "rows":
            _check(t.shape[0] == ref.shape[1], lambda: f"my_ops.{op}: expected {n} to have "
                         f"{int(ref.shape[1])} rows (the columns of {r}), but got shape "
                         f"{_shape_text(t.shape)}")
        elif c.key in _MEMORY:
            _memory_clause(op, n, c.key, t, r, ref)


def reject(op: str):
    """A kernel for dispatch keys my_ops has no kernel for (sparse, nested,
    quantized, ...): the rule that the argument breaks, named."""

    def kernel(*args):
        check(op, *args)
        _fail(op, "got a tensor of a kind my_ops has no kernel for; pass dense (strided) "
                  "float tensors on the CPU or a CUDA device")

    return kernel
