"""Batch invariance and determinism, as promised in docs/determinism.md.

* Batch invariance: a row of every forward op's output is bit for bit the
  same whichever rows share the call with it (1 row or thousands, at any
  position), so a request's result does not depend on the batch it was
  served in.
* Determinism: the backward ops give the same bits run after run for the same
  inputs (the weight gradient's sum over rows included).

Bits are compared, not values: -0.0 against 0.0 or two NaN payloads would be a
difference too. Every forward op of the specs is covered (the backward ops are
checked for determinism through autograd), on every device, in every float
dtype; the CUDA shapes are large enough to reach the kernels' multi-wave and
wide-row layouts, their row counts follow the GPU's multiprocessor count.
Layouts: contiguous, rows read in place at two strides (the other row-shaped
arguments contiguous, or laid out as x), and a 3-D x whose inner rows are read
in place; weights of x's dtype and, beside 16-bit x, float32 (mixed
precision's, a kernel path of its own). A part is also called on its rows
copied into a new buffer, as a request served alone is: for every op from a
contiguous batch (whose rows, at a width of part vectors, start at every
16-byte phase, where a new buffer starts aligned), and from every layout for
the ops that promise one order for every layout.
"""

from __future__ import annotations

import pytest
import torch

import my_ops
from conftest import DEVICES
from specs import ALL, OpSpec

FORWARD = [s for s in ALL if not s.name.endswith("_backward")]
DIFFERENTIABLE = [s for s in FORWARD if s.differentiable]
INVARIANCE_DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64]
LAYOUTS = ["contiguous", "sliced", "sliced_alike", "sliced_odd", "3d"]
WEIGHTS = ["x's", "float32"]
# The ops whose CUDA C kernel for a row may follow the call's layout (its
# stride and 16-byte phase), so a row copied out of its batch may be summed
# in another order (docs/determinism.md, "Not covered"): the CUDA C RMSNorm,
# the fused add's functional form included (the same kernels); every other op
# reads a row in one order whatever its layout.
READ_BY_LAYOUT = {"rms_norm", "fused_add_rms_norm", "fused_add_rms_norm_functional"}
# More rows than two per multiprocessor: the CUDA kernels' many-row launches
# (rows.cuh's few_rows below it), which the full call takes and its parts do not.
MANY = max(301, 2 * torch.cuda.get_device_properties(0).multi_processor_count + 37) \
    if torch.cuda.is_available() else 301
# (rows, width) per device: the rows of the full call (not equal to any other
# dimension, so the row dimension of each argument is told apart by its size).
SHAPES = {
    "cpu": [(301, 64), (67, 1000)],
    # (MANY rows at the widths of each fp8 RMSNorm layout, 4096, 8192 and 16384; width 4098, not
    # whole 16-byte vectors, leaves contiguous rows past the first unaligned, and the gated units'
    # halves odd; 37 rows of 32768: few rows, each split over blocks)
    "cuda": [(2053, 64), (1031, 4096), (MANY, 8192), (MANY, 16384), (MANY, 4098), (MANY + 2, 5000), (37, 32768)],
}
INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


# Row ranges of the full call, each called alone: near its start, and past the
# first 257 rows (the middle row, the last rows, a range across the last wave).
def parts(rows: int) -> list[tuple[int, int]]:
    return [(0, 1), (5, 6), (0, 7), (30, 37), (1, 257), (rows // 2, rows // 2 + 1), (rows - 1, rows),
            (rows - 33, rows)]


def bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bit patterns, so -0.0 != 0.0 and NaN payloads count."""
    t = t.detach().contiguous()
    return t.view(INT_OF_SIZE[t.element_size()]) if t.is_floating_point() else t


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(bits(a), bits(b))


def rows_input(rows, width, dtype, device, layout) -> torch.Tensor:
    """x of [rows, width]: contiguous, or rows sliced from wider rows (read in
    place): "sliced" at a stride of width + 8, "sliced_odd" at width + 3,
    whose rows start at every 16-byte phase, some of them aligned (a row
    called alone, x[i:i+1], keeps the stride); "sliced_alike" as "sliced" (the
    test lays the op's other arguments of x's shape out as x too); "3d": x of
    [rows, 2, width], sliced from [rows, 2, width + 8] (a part x[i:j] holds
    2 (j - i) rows)."""
    if layout == "3d":
        wide = torch.empty(rows, 2, width + 8, dtype=torch.float64, device=device).uniform_(-3, 3).to(dtype)
        return wide[..., 4:4 + width]
    if layout == "contiguous":
        return torch.empty(rows, width, dtype=torch.float64, device=device).uniform_(-3, 3).to(dtype)
    if layout == "sliced_odd":
        wide = torch.empty(rows, width + 3, dtype=torch.float64, device=device).uniform_(-3, 3).to(dtype)
        return wide[:, :width]
    wide = torch.empty(rows, width + 8, dtype=torch.float64, device=device).uniform_(-3, 3).to(dtype)
    return wide[:, 4:4 + width]  # ("sliced", "sliced_alike")


def take_rows(args: tuple, rows: int, part: slice, copied: bool = False) -> tuple:
    """The arguments of a call on x[part]: tensors with x's row count are
    sliced (`copied`: into new contiguous tensors, aligned as an allocation
    is), the rest shared."""
    def take(a):
        return a[part].clone(memory_format=torch.contiguous_format) if copied else a[part]
    return tuple(take(a) if isinstance(a, torch.Tensor) and a.dim() >= 2 and a.shape[0] == rows else a for a in args)


def copy_in_place(t: torch.Tensor) -> torch.Tensor:
    """A copy of t laid out as t: the same strides and offset in a storage of its
    own (clone() would make a slice contiguous, and so aligned)."""
    extent = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1
    storage = torch.empty(extent if t.numel() else 0, dtype=t.dtype, device=t.device)
    copy = storage.as_strided(t.shape, t.stride(), t.storage_offset())
    return copy.copy_(t)


def laid_out_like(args: tuple, x: torch.Tensor) -> tuple:
    """The arguments with every tensor of x's shape but x laid out as x: rows
    of one phase and stride across the call's tensors, which the CUDA C
    fused_add_rms_norm reads with covering vectors (another kernel than a
    contiguous residual beside a sliced x takes)."""
    def like_x(a):
        copy = copy_in_place(x)
        return copy.copy_(a)
    return tuple(like_x(a) if isinstance(a, torch.Tensor) and a is not x and a.shape == x.shape else a
                 for a in args)


def outputs(spec: OpSpec, args: tuple) -> list:
    """The op's results: the arguments it writes (each a copy laid out as the
    caller's, so the call reads the rows as given), then the tensors it returns."""
    names = spec.argument_names()
    written = {names.index(n) for n in spec.mutates}
    args = tuple(copy_in_place(a) if i in written else a for i, a in enumerate(args))
    result = spec.op(*args)
    written = [args[i] for i in sorted(written)]
    if result is None:
        return written
    return written + (list(result) if isinstance(result, (tuple, list)) else [result])


def taken(spec: OpSpec, device: str, width: int, dtype, layout: str, weight: str) -> bool:
    """Whether the case is one the op takes and that adds a kernel path: a 3-D
    x is a row-wise op's; a float32 weight is mixed precision's, beside 16-bit x."""
    return (dtype in spec.dtypes
            # (matmul's [rows, 32768] @ [32768, 4] adds nothing the narrower shapes do not)
            and not (spec.name == "matmul" and width > 5000)
            and (layout != "3d" or spec.row_wise)
            and (weight == "x's" or ("weight" in spec.argument_names() and dtype.itemsize == 2)))


def cases(specs: list, layouts: list) -> list:
    """pytest params (spec, device, rows, width, dtype, layout, weight) of the cases taken."""
    return [pytest.param(spec, device, rows, width, dtype, layout, weight,
                         id=f"{spec.id}-{device}-{rows}x{width}-{str(dtype)[6:]}-{layout}-weight_{weight}".replace(
                             "'", ""))
            for spec in specs for device in DEVICES for rows, width in SHAPES[device.split(":")[0]]
            for dtype in INVARIANCE_DTYPES for layout in layouts for weight in WEIGHTS
            if taken(spec, device, width, dtype, layout, weight)]


def with_weight(spec: OpSpec, args: tuple, weight: str) -> tuple:
    if weight == "x's":
        return args
    at = spec.argument_names().index("weight")
    return (*args[:at], args[at].float(), *args[at + 1:])


@pytest.mark.parametrize("spec,device,rows,width,dtype,layout,weight", cases(FORWARD, LAYOUTS))
def test_row_output_does_not_depend_on_the_batch(spec, device, rows, width, dtype, layout, weight):
    x = rows_input(rows, width, dtype, device, layout)
    args = with_weight(spec, spec.resolve(x), weight)
    if layout == "sliced_alike":
        args = laid_out_like(args, x)
    # (the rows copied into a new buffer too: from a contiguous batch for every op, from
    # other layouts where the op reads every layout in one order: docs/determinism.md)
    presentations = [False] if layout != "contiguous" and spec.name in READ_BY_LAYOUT else [False, True]
    with torch.no_grad():
        full = outputs(spec, args)
        for start, stop in parts(rows):
            part = slice(start, stop)
            for copied in presentations:
                alone = outputs(spec, take_rows(args, rows, part, copied))
                for index, (whole, piece) in enumerate(zip(full, alone)):
                    assert same_bits(whole[part], piece), (
                        f"{spec.id}: output {index} of rows {start}:{stop} differs when called with "
                        f"{stop - start} rows{' copied into a new buffer' if copied else ''} instead of {rows}")


def _gradients(spec: OpSpec, args: tuple, grad_outs: list) -> list:
    # (copies laid out as the arguments: a clone would make a sliced x contiguous)
    leaves = [copy_in_place(a.detach()).requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point()
              else a for a in args]
    result = spec.call(leaves[0], tuple(leaves[1:]))
    result = list(result) if isinstance(result, (tuple, list)) else [result]
    inputs = [a for a in leaves if isinstance(a, torch.Tensor)]
    return list(torch.autograd.grad(result, inputs, grad_outs))


# (sliced: the backward reads x in place too)
@pytest.mark.parametrize("spec,device,rows,width,dtype,layout,weight", cases(DIFFERENTIABLE, ["contiguous", "sliced"]))
def test_backward_is_deterministic(spec, device, rows, width, dtype, layout, weight):
    x = rows_input(rows, width, dtype, device, layout)
    args = with_weight(spec, spec.resolve(x), weight)
    with torch.no_grad():
        grad_outs = [torch.randn_like(o) for o in outputs(spec, args)]
    first = _gradients(spec, args, grad_outs)
    for attempt in range(2):
        again = _gradients(spec, args, grad_outs)
        for index, (a, b) in enumerate(zip(first, again)):
            assert same_bits(a, b), f"{spec.id}: gradient {index} differs on run {attempt + 2}"


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="the Triton kernels need a CUDA device")


@needs_cuda
@pytest.mark.parametrize("layout", ["contiguous", "sliced"])  # (sliced: the batch copied, a row read in place)
@pytest.mark.parametrize("weight_dtype", ["x's", torch.float32], ids=str)  # (float32: mixed precision's)
@pytest.mark.parametrize("dtype", INVARIANCE_DTYPES, ids=lambda d: str(d).replace("torch.", ""))
@pytest.mark.parametrize("rows,width", SHAPES["cuda"], ids=str)
def test_triton_rms_norm_batch_invariance_and_determinism(rows, width, dtype, weight_dtype, layout):
    if weight_dtype == torch.float32 and dtype.itemsize != 2:
        pytest.skip("a float32 weight is mixed precision's beside 16-bit x")
    x = rows_input(rows, width, dtype, "cuda", layout)
    w = torch.empty(width, dtype=dtype if weight_dtype == "x's" else weight_dtype, device="cuda").uniform_(0.5, 1.5)
    with torch.no_grad():
        full = my_ops.triton_rms_norm(x, w, 1e-6)
        for start, stop in parts(rows):
            alone = my_ops.triton_rms_norm(x[start:stop], w, 1e-6)
            assert same_bits(full[start:stop], alone), f"rows {start}:{stop} differ alone"
    grad = torch.randn_like(full)

    def gradients():
        xs, ws = copy_in_place(x).requires_grad_(), w.clone().requires_grad_()  # (xs laid out as x)
        return torch.autograd.grad(my_ops.triton_rms_norm(xs, ws, 1e-6), (xs, ws), grad)

    first = gradients()
    for a, b in zip(first, gradients()):
        assert same_bits(a, b)
