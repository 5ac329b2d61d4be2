"""my_ops.triton_rms_norm: the Triton kernels of RMSNorm (issue 22).

Against the float64 reference on fresh random inputs, backward against the
reference's autograd, gradcheck (the kernels take float64), opcheck,
torch.compile(fullgraph=True) and no graph break in any of the three
implementations. The kernels run on a CUDA device; with TRITON_INTERPRET=1
the numeric tests also run on the CPU, in Triton's interpreter (slow: small
shapes only). opcheck and torch.compile need the real kernels (CUDA).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

pytest.importorskip("triton", reason="my_ops.triton_rms_norm needs Triton")

import my_ops  # noqa: E402
import my_ops.rms_norm_triton  # noqa: E402,F401  (registers my_ops::triton_rms_norm, as my_ops.triton_rms_norm's first use does)
from conftest import assert_matches, make_input  # noqa: E402
from my_ops import reference  # noqa: E402

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu" if INTERPRET else None
needs_kernels = pytest.mark.skipif(DEVICE is None, reason="needs a CUDA device (or TRITON_INTERPRET=1 to run "
                                                          "the kernels in Triton's interpreter on the CPU)")
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA device (compiled Triton kernels)")
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
OPS = torch.ops.my_ops
# This family has no spec (tests/ops/specs/); its smoke tier is here (test_smoke_tier.py checks it).
SMOKE_OPS = ("triton_rms_norm", "triton_rms_norm_backward")

# hidden 1, odd, narrow (several rows per program), not a power of two, empty
SHAPES = [(1,), (3, 1), (5, 13), (4, 1000), (2, 3, 256), (130, 64), (0, 8), (4, 0), (9, 4097), (2, 3, 4096)]
# the backward's row loop: several blocks of 32 rows a program, the last block
# and the last program short (the next block's loads run past the slice, masked)
SHAPES += [(641, 64)]
if CUDA:  # many programs, the register limit, long sweeps of rows in the backward
    SHAPES += [(3000, 1031), (20000, 33), (2, 65536), (700, 16), (4096, 128), (8, 16384)]


def _inputs(shape, dtype, layout="contiguous"):
    x = make_input(shape, dtype, DEVICE, layout)
    weight = make_input(shape[-1:], dtype, DEVICE, low=0.5, high=1.5)
    return x, weight


@needs_kernels
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced_odd"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_forward(shape, layout, dtype):
    x, weight = _inputs(shape, dtype, layout)
    eps = float(torch.empty(()).uniform_(1e-6, 1e-3))
    out = my_ops.triton_rms_norm(x, weight, eps)
    assert out.is_contiguous() and out.device == x.device
    assert_matches(out, reference.rms_norm(x, weight, eps), dtype)


@needs_kernels
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_backward(shape, dtype):
    x, weight = _inputs(shape, dtype, "sliced_odd" if len(shape) > 1 else "contiguous")
    grad = make_input(shape, dtype, DEVICE, "transposed" if len(shape) > 1 else "contiguous")
    x_, w_ = x.detach().requires_grad_(), weight.detach().requires_grad_()
    my_ops.triton_rms_norm(x_, w_, 1e-5).backward(grad)
    x64, w64 = x.double().requires_grad_(), weight.double().requires_grad_()
    reference.rms_norm(x64, w64, 1e-5).backward(grad.double())
    # as in test_rms_norm: dx cancels two terms; dweight sums over rows
    assert_matches(x_.grad, x64.grad, dtype, scale=4)
    rows = max(1, x.numel() // max(1, shape[-1]))
    assert_matches(w_.grad, w64.grad, dtype, scale=4 * rows ** 0.5)


@needs_kernels
@pytest.mark.smoke
@pytest.mark.parametrize("dtype, layout", [(torch.float32, "contiguous"), (torch.float64, "contiguous"),
                                           (torch.bfloat16, "sliced_odd")], ids=str)
def test_smoke(dtype, layout):
    """One case of each dtype class, one of them rows read from a wider tensor: forward and backward."""
    x, weight = _inputs((3, 40), dtype, layout)
    x_, w_ = x.detach().requires_grad_(), weight.detach().requires_grad_()
    out = my_ops.triton_rms_norm(x_, w_, 1e-5)
    assert_matches(out, reference.rms_norm(x, weight, 1e-5), dtype)
    grad = make_input((3, 40), dtype, DEVICE)
    out.backward(grad)
    x64, w64 = x.double().requires_grad_(), weight.double().requires_grad_()
    reference.rms_norm(x64, w64, 1e-5).backward(grad.double())
    assert_matches(x_.grad, x64.grad, dtype, scale=4)
    assert_matches(w_.grad, w64.grad, dtype, scale=8)


@needs_kernels
def test_weight_in_another_dtype():
    """bf16 activations with a float32 weight: output in x's dtype, grad_weight in weight's."""
    x = make_input((64, 256), torch.bfloat16, DEVICE).requires_grad_()
    weight = make_input((256,), torch.float32, DEVICE, low=0.5, high=1.5).requires_grad_()
    out = my_ops.triton_rms_norm(x, weight, 1e-6)
    assert out.dtype == torch.bfloat16
    assert_matches(out, reference.rms_norm(x, weight, 1e-6), torch.bfloat16)
    out.sum().backward()
    assert x.grad.dtype == torch.bfloat16 and weight.grad.dtype == torch.float32


@needs_kernels
@pytest.mark.parametrize("through", ["python", "torch.ops"])
def test_forward_mode_ad_refused_on_every_road(through):
    """No forward formula: a dual tensor is refused on every road, never its tangent dropped."""
    import torch.autograd.forward_ad as fwAD

    x, weight = _inputs((4, 32), torch.float32)
    fn = my_ops.triton_rms_norm if through == "python" else OPS.triton_rms_norm
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.randn_like(x))
        with pytest.raises(RuntimeError, match="forward-mode AD"):
            fn(dual, weight, 1e-6)
        grad = fwAD.make_dual(torch.randn_like(x), torch.randn_like(x))
        with pytest.raises(RuntimeError, match="forward-mode AD"):
            OPS.triton_rms_norm_backward(grad, x, weight, 1e-6)


@needs_kernels
def test_float64_keeps_every_bit_of_eps():
    """eps matters (rows of small values) and is no float32 number: float64 math must use it whole."""
    x = make_input((6, 40), torch.float64, DEVICE, low=-1e-3, high=1e-3)
    weight = make_input((40,), torch.float64, DEVICE, low=0.5, high=1.5)
    for eps in (1e-7 * (1 + 1e-9), float(torch.empty((), dtype=torch.float64).uniform_(1e-8, 1e-6)), 1e-50):
        out = my_ops.triton_rms_norm(x, weight, eps)
        torch.testing.assert_close(out, reference.rms_norm(x, weight, eps), rtol=1e-12, atol=1e-15)
        x_, w_ = x.clone().requires_grad_(), weight.clone().requires_grad_()
        my_ops.triton_rms_norm(x_, w_, eps).sum().backward()
        x64, w64 = x.clone().requires_grad_(), weight.clone().requires_grad_()
        reference.rms_norm(x64, w64, eps).sum().backward()
        torch.testing.assert_close(x_.grad, x64.grad, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(w_.grad, w64.grad, rtol=1e-12, atol=1e-12)


@needs_kernels
@pytest.mark.parametrize("transform", ["grad", "vjp", "jacrev", "hessian"])
def test_torch_func_transforms(transform):
    """torch.func's reverse-mode transforms give the gradients of the float64
    reference; forward mode (hessian is jacfwd of jacrev) is refused, as by my_ops.rms_norm."""
    x = make_input((3, 16), torch.float64, DEVICE)
    weight = make_input((16,), torch.float64, DEVICE, low=0.5, high=1.5)

    def loss(fn):
        return lambda a, b: (fn(a, b, 1e-6) * torch.arange(16, device=a.device)).sum()

    ours, ref = loss(my_ops.triton_rms_norm), loss(reference.rms_norm)
    if transform == "vjp":
        _, vjp_ours = torch.func.vjp(lambda a: my_ops.triton_rms_norm(a, weight, 1e-6), x)
        _, vjp_ref = torch.func.vjp(lambda a: reference.rms_norm(a, weight, 1e-6), x)
        g = torch.randn_like(x)
        got, want = vjp_ours(g), vjp_ref(g)
    elif transform == "hessian":
        with pytest.raises(RuntimeError, match="forward-mode AD"):
            torch.func.hessian(ours)(x, weight)
        return
    else:
        make = getattr(torch.func, transform)
        got, want = make(ours, argnums=(0, 1))(x, weight), make(ref, argnums=(0, 1))(x, weight)
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)


@needs_kernels
@pytest.mark.parametrize("road", ["hooks", "checkpoint"])
def test_second_order_under_saved_tensor_hooks(road):
    """A gradient of a gradient within saved-tensor hooks or a non-reentrant
    checkpoint (torch.func refuses to run under them), against the float64 reference."""
    from torch.utils.checkpoint import checkpoint

    x, weight = _inputs((5, 40), torch.float64)

    def second_order(fn):
        def gradient_of_gradient(v, w):
            (grad,) = torch.autograd.grad(fn(v, w, 1e-6).pow(2).sum(), v, create_graph=True)
            return torch.autograd.grad(grad.pow(2).sum(), (v, w), create_graph=True)

        v, w = x.clone().requires_grad_(), weight.clone().requires_grad_()
        if road == "checkpoint":
            return checkpoint(gradient_of_gradient, v, w, use_reentrant=False)
        with torch.autograd.graph.saved_tensors_hooks(torch.clone, lambda packed: packed):
            return gradient_of_gradient(v, w)

    for got, want in zip(second_order(my_ops.triton_rms_norm), second_order(reference.rms_norm)):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)


@needs_kernels
def test_gradcheck_float64():
    """float64 inputs are computed in float64, so gradcheck runs at its usual tolerances."""
    x = make_input((5, 40), torch.float64, DEVICE).requires_grad_()
    weight = make_input((40,), torch.float64, DEVICE, low=0.5, high=1.5).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: my_ops.triton_rms_norm(a, b, 1e-6), (x, weight))
    assert torch.autograd.gradgradcheck(lambda a, b: my_ops.triton_rms_norm(a, b, 1e-6), (x, weight))


@needs_kernels
def test_weight_gradient_is_deterministic():
    """Per-program partial sums and one reduction: the same bits on every run."""
    shape = (3000, 512) if CUDA else (300, 64)
    x, weight = _inputs(shape, torch.bfloat16)
    grad = make_input(shape, torch.bfloat16, DEVICE)
    first = OPS.triton_rms_norm_backward(grad, x, weight, 1e-6)
    for _ in range(3):
        again = OPS.triton_rms_norm_backward(grad, x, weight, 1e-6)
        assert torch.equal(again[0], first[0]) and torch.equal(again[1], first[1])


@needs_kernels
def test_nan_propagates():
    """A NaN in a row gives NaN in that row only; the tests' comparisons never let NaN pass."""
    x, weight = _inputs((4, 64), torch.float32)
    x[1, 3] = float("nan")
    out = my_ops.triton_rms_norm(x, weight, 1e-6)
    assert out[1].isnan().all() and not out[[0, 2, 3]].isnan().any()
    with pytest.raises(AssertionError):
        assert_matches(out, reference.rms_norm(x.nan_to_num(), weight, 1e-6), torch.float32)


@needs_kernels
def test_module_impl_triton():
    norm, cuda_norm = (my_ops.RMSNorm(96, impl="triton", device=DEVICE), my_ops.RMSNorm(96, device=DEVICE))
    assert "impl='triton'" in repr(norm) and cuda_norm.impl == "cuda"
    x = make_input((3, 7, 96), torch.float32, DEVICE)
    assert_matches(norm(x), reference.rms_norm(x, norm.weight, 1e-6), torch.float32)
    torch.testing.assert_close(norm(x), cuda_norm(x))
    with pytest.raises(ValueError, match=r"my_ops.RMSNorm: expected impl to be 'cuda' or 'triton', but got 'cpp'"):
        my_ops.RMSNorm(8, impl="cpp")


@needs_kernels
def test_forward_mode_ad_refused():
    import torch.autograd.forward_ad as fwAD

    x, weight = _inputs((3, 8), torch.float32)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.randn_like(x))
        with pytest.raises(RuntimeError, match=r"my_ops.triton_rms_norm: forward-mode AD .* is not supported"):
            my_ops.triton_rms_norm(dual, weight)


# ------------------------------------------------- the eager road and the op's road
# my_ops.triton_rms_norm on plain tensors outside torch.compile launches the
# kernels from one autograd.Function (rms_norm_triton._Eager) instead of the
# custom op's layers (host time: benchmarks/NOTES.md); compiled code, torch.func
# and torch.ops take the op. Both roads must give the same bits.

@needs_kernels
@pytest.mark.parametrize("x_dtype, weight_dtype", [(torch.float32, torch.float32), (torch.bfloat16, torch.bfloat16),
                                                   (torch.bfloat16, torch.float32), (torch.float64, torch.float64)],
                         ids=str)
def test_eager_road_gives_the_ops_bits(x_dtype, weight_dtype):
    """Forward and backward through the Python API against the op and its
    backward op called through torch.ops: the same bits, rows read from a wider
    tensor and a gradient that is not contiguous (a broadcast one, as .sum() gives)."""
    x = make_input((7, 3, 96), x_dtype, DEVICE, "sliced_odd").requires_grad_()
    weight = make_input((96,), weight_dtype, DEVICE, low=0.5, high=1.5).requires_grad_()
    eps = float(torch.empty(()).uniform_(1e-6, 1e-3))
    out = my_ops.triton_rms_norm(x, weight, eps)
    assert out.grad_fn.name() == "_EagerBackward"  # the eager road was taken
    assert torch.equal(out, OPS.triton_rms_norm(x.detach(), weight.detach(), eps))
    assert_matches(out, reference.rms_norm(x.detach(), weight.detach(), eps), x_dtype)
    grad = make_input((96,), x_dtype, DEVICE).expand(7, 3, 96)
    got = torch.autograd.grad(out, (x, weight), grad)
    want = OPS.triton_rms_norm_backward(grad, x.detach(), weight.detach(), eps)
    assert got[0].dtype == x_dtype and got[1].dtype == weight_dtype
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


@needs_kernels
@pytest.mark.parametrize("road", ["api", "api with a Parameter", "torch.ops"])
def test_vmap_over_0d_samples_is_refused(road):
    """Samples of x that are 0-D are refused on every road (folded into rows, the batch would
    be normalized as one row)."""
    x = make_input((5,), torch.float64, DEVICE)
    weight = make_input((5,), torch.float64, DEVICE)
    if road == "api with a Parameter":
        weight = torch.nn.Parameter(weight)
    call = OPS.triton_rms_norm if road == "torch.ops" else my_ops.triton_rms_norm
    with pytest.raises(RuntimeError, match="expected x to have at least 1 dimension, but got a 0-D tensor"):
        torch.vmap(lambda a: call(a, weight, 1e-6))(x)


@needs_kernels
def test_eager_road_takes_a_modules_parameter():
    """my_ops.RMSNorm(impl="triton"): its weight is an nn.Parameter, which the eager road takes."""
    module = my_ops.RMSNorm(64, impl="triton").to(DEVICE)
    module.weight.data.uniform_(0.5, 1.5)
    x = make_input((5, 64), torch.float32, DEVICE).requires_grad_()
    out = module(x)
    assert out.grad_fn.name() == "_EagerBackward"
    assert_matches(out, reference.rms_norm(x.detach(), module.weight.detach(), module.eps), torch.float32)


@needs_kernels
@pytest.mark.parametrize("needs", ["x", "weight"])
def test_eager_road_one_input_requiring_grad(needs):
    """A frozen weight (or a frozen x): the other gradient is right and the frozen one is not computed."""
    x, weight = _inputs((5, 64), torch.float64)
    x_, w_ = x.clone().requires_grad_(needs == "x"), weight.clone().requires_grad_(needs == "weight")
    my_ops.triton_rms_norm(x_, w_, 1e-6).square().sum().backward()
    x64, w64 = x.clone().requires_grad_(), weight.clone().requires_grad_()
    reference.rms_norm(x64, w64, 1e-6).square().sum().backward()
    got, want, frozen = (x_, x64, w_) if needs == "x" else (w_, w64, x_)
    torch.testing.assert_close(got.grad, want.grad, rtol=1e-9, atol=1e-9)
    assert frozen.grad is None


@needs_kernels
def test_eager_road_under_inference_mode_and_no_grad():
    x, weight = _inputs((4, 3, 80), torch.float32)
    want = reference.rms_norm(x, weight, 1e-6)
    with torch.inference_mode():
        assert_matches(my_ops.triton_rms_norm(x, weight, 1e-6), want, torch.float32)
    with torch.no_grad():
        out = my_ops.triton_rms_norm(x.requires_grad_(), weight, 1e-6)
    assert out.grad_fn is None and not out.requires_grad
    assert_matches(out, want, torch.float32)


@needs_kernels
def test_torch_func_over_plain_tensors():
    """Under torch.func.grad, a call whose own arguments are plain tensors (captured,
    not differentiated) still takes part: the gradient flows through its output."""
    x, weight = _inputs((3, 16), torch.float64)
    scale = make_input((16,), torch.float64, DEVICE)

    def loss(fn):
        return lambda s: (fn(x, weight, 1e-6) * s).square().sum()

    got = torch.func.grad(loss(my_ops.triton_rms_norm))(scale)
    want = torch.func.grad(loss(reference.rms_norm))(scale)
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------ bad input
@pytest.mark.smoke
@pytest.mark.parametrize("call, message", [
    (lambda: my_ops.triton_rms_norm(torch.empty(2, 4096, device="meta"), torch.empty(4095, device="meta")),
     r"my_ops.triton_rms_norm: expected weight to have shape \[4096\] \(the last dimension of x\), but got \[4095\]"),
    (lambda: my_ops.triton_rms_norm(torch.empty(2, 8, device="meta", dtype=torch.int32), torch.empty(8, device="meta")),
     r"my_ops.triton_rms_norm: expected x to be a float32, float16, bfloat16 or float64 tensor, but got torch.int32"),
    (lambda: my_ops.triton_rms_norm(torch.empty(2, 70000, device="meta"), torch.empty(70000, device="meta")),
     r"my_ops.triton_rms_norm: rows of 70000 elements are longer .* use my_ops.rms_norm"),
    (lambda: my_ops.triton_rms_norm(torch.empty((), device="meta"), torch.empty(1, device="meta")),
     r"my_ops.triton_rms_norm: expected x to have at least 1 dimension"),
    (lambda: my_ops.triton_rms_norm(torch.empty(2, 8, device="meta"), torch.empty(8, device="meta"), -1.0),
     r"my_ops.triton_rms_norm: expected eps to be a finite number >= 0, but got -1"),
    (lambda: OPS.triton_rms_norm_backward(torch.empty(2, 7, device="meta"), torch.empty(2, 8, device="meta"),
                                          torch.empty(8, device="meta"), 1e-6),
     r"my_ops.triton_rms_norm_backward: expected grad_out to have the same shape as x \[2, 8\], but got \[2, 7\]"),
    (lambda: my_ops.triton_rms_norm(torch.empty(2, 8, device="meta"),
                                    torch.empty(8, device="meta", dtype=torch.bfloat16)),
     r"my_ops.triton_rms_norm: expected weight to have the same dtype as x \(torch.float32\) or a wider float "
     r"dtype \(torch.float64\), but got torch.bfloat16"),
], ids=["weight shape", "dtype", "long rows", "0-D", "eps", "grad_out shape", "narrower weight"])
def test_bad_input(call, message):
    """Checked in the op's body, which is also its fake kernel: meta tensors (shape inference) hit the same checks."""
    with pytest.raises(RuntimeError, match=message):
        call()


@pytest.mark.parametrize("x_dtype, weight_dtype", [(torch.float32, torch.bfloat16), (torch.float64, torch.float32),
                                                   (torch.float16, torch.bfloat16), (torch.bfloat16, torch.float16)])
def test_weight_dtypes_as_my_ops_rms_norm(x_dtype, weight_dtype):
    """A weight narrower than x (or as wide, another dtype) is refused with my_ops.rms_norm's message."""
    x, weight = torch.empty(2, 8, device="meta", dtype=x_dtype), torch.empty(8, device="meta", dtype=weight_dtype)
    with pytest.raises(RuntimeError) as cuda_c:
        my_ops.rms_norm(x, weight)
    with pytest.raises(RuntimeError) as triton:
        my_ops.triton_rms_norm(x, weight)
    assert str(triton.value) == str(cuda_c.value).replace("my_ops.rms_norm:", "my_ops.triton_rms_norm:")


@pytest.mark.skipif(INTERPRET, reason="the interpreter runs the kernels on CPU tensors")
def test_cpu_tensor_names_the_fix():
    with pytest.raises(RuntimeError, match=r"my_ops.triton_rms_norm: expected x to be a CUDA tensor .* on cpu; "
                                           r"on the CPU use my_ops.rms_norm"):
        my_ops.triton_rms_norm(torch.randn(2, 8), torch.ones(8))


@pytest.mark.smoke
def test_meta_shapes():
    y = my_ops.triton_rms_norm(torch.empty(2, 3, 64, device="meta", dtype=torch.bfloat16),
                               torch.empty(64, device="meta", dtype=torch.float32))
    assert y.shape == (2, 3, 64) and y.dtype == torch.bfloat16
    grad_x, grad_weight = OPS.triton_rms_norm_backward(y, y, torch.empty(64, device="meta"), 1e-6)
    assert grad_x.shape == y.shape and grad_weight.dtype == torch.float32


def test_import_my_ops_leaves_triton_unloaded():
    """Triton (about a second to import) loads on the first use of my_ops.triton_rms_norm, not with my_ops."""
    code = ("import sys, torch, my_ops\n"
            "assert 'triton' not in sys.modules and 'my_ops.rms_norm_triton' not in sys.modules, 'loaded early'\n"
            "assert not hasattr(torch.ops.my_ops, 'triton_rms_norm')\n"
            "fn = my_ops.triton_rms_norm\n"
            "assert fn is my_ops.triton_rms_norm and 'triton' in sys.modules\n"
            "assert hasattr(torch.ops.my_ops, 'triton_rms_norm') and my_ops.HAVE_TRITON\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def test_without_triton_a_clear_import_error():
    """Where Triton does not import, my_ops imports and my_ops.triton_rms_norm raises ImportError."""
    code = ("import sys; sys.modules['triton'] = None\n"
            "import torch, my_ops\n"
            "assert not my_ops.HAVE_TRITON and not hasattr(torch.ops.my_ops, 'triton_rms_norm')\n"
            "for call in (lambda: my_ops.triton_rms_norm(torch.ones(8), torch.ones(8)),\n"
            "             lambda: my_ops.RMSNorm(8, impl='triton')):\n"
            "    try:\n"
            "        call()\n"
            "    except ImportError as e:\n"
            "        assert 'my_ops.triton_rms_norm needs Triton' in str(e), e\n"
            "    else:\n"
            "        raise SystemExit('no ImportError')\n"
            "print(my_ops.rms_norm(torch.ones(2, 8), torch.ones(8)).shape)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "torch.Size([2, 8])" in result.stdout


# ---------------------------------------------- opcheck, compile, explain
@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("shape", [(5, 13), (2, 3, 256), (64, 4096)], ids=str)
def test_opcheck(shape, dtype):
    x, weight = _inputs(shape, dtype)
    grad = make_input(shape, dtype, DEVICE)
    torch.library.opcheck(OPS.triton_rms_norm.default, (x, weight, 1e-6))
    torch.library.opcheck(OPS.triton_rms_norm.default, (x.requires_grad_(), weight.requires_grad_(), 1e-6))
    torch.library.opcheck(OPS.triton_rms_norm_backward.default, (grad, x.detach(), weight.detach(), 1e-6))


@needs_cuda
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph(backend):
    torch._dynamo.reset()
    norm = my_ops.RMSNorm(256, impl="triton", device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)

    def block(x):
        return norm(x * 2).float().square().sum()

    x = make_input((4, 33, 256), torch.bfloat16, "cuda").requires_grad_()
    compiled = torch.compile(block, fullgraph=True, backend=backend)
    out = compiled(x)
    out.backward()
    got = (x.grad.clone(), norm.weight.grad.clone())
    x.grad, norm.weight.grad = None, None
    want = block(x)
    want.backward()
    torch.testing.assert_close(out, want, rtol=1e-2, atol=1e-2)
    assert_matches(got[0], x.grad.double(), torch.bfloat16, scale=4)
    assert_matches(got[1], norm.weight.grad.double(), torch.bfloat16, scale=40)


def _eager_composite(x, weight, eps):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


@pytest.mark.parametrize("impl", ["eager", "my_ops.rms_norm", "my_ops.triton_rms_norm"])
def test_no_graph_breaks(impl):
    """torch._dynamo.explain: one graph, no break, for each of the three implementations."""
    if impl == "my_ops.triton_rms_norm" and not CUDA:
        pytest.skip("needs a CUDA device (interpreted kernels cannot be traced)")
    device = "cuda" if CUDA else "cpu"
    fn = {"eager": _eager_composite, "my_ops.rms_norm": my_ops.rms_norm,
          "my_ops.triton_rms_norm": my_ops.triton_rms_norm}[impl]
    torch._dynamo.reset()
    x, weight = make_input((4, 64), torch.float32, device), make_input((64,), torch.float32, device)
    explanation = torch._dynamo.explain(lambda a, b: fn(a, b, 1e-6) * 2)(x, weight)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


@needs_kernels
def test_vmap_runs_the_kernels_batched():
    """vmap through the op's vmap rule: a batch of rows in one call, a batched
    weight once per sample, per-sample gradients; against the reference."""
    x = make_input((3, 4, 64), torch.float32, DEVICE)
    weight = make_input((64,), torch.float32, DEVICE, low=0.5, high=1.5)
    weights = make_input((3, 64), torch.float32, DEVICE, low=0.5, high=1.5)
    assert_matches(torch.vmap(lambda v: my_ops.triton_rms_norm(v, weight))(x),
                   reference.rms_norm(x, weight, 1e-6), torch.float32)
    assert_matches(torch.vmap(my_ops.triton_rms_norm)(x, weights),
                   torch.stack([reference.rms_norm(x[i], weights[i], 1e-6) for i in range(3)]), torch.float32)
    x64, w64 = x.double(), weight.double()
    grads = torch.vmap(torch.func.grad(lambda v: my_ops.triton_rms_norm(v, w64).sum()))(x64)
    want = torch.vmap(torch.func.grad(lambda v: reference.rms_norm(v, w64, 1e-6).sum()))(x64)
    assert_matches(grads, want, torch.float64, scale=10)


@pytest.mark.parametrize("layout", [torch.jagged, torch.strided], ids=str)
@pytest.mark.parametrize("road", ["python", "module", "torch.ops", "backward"])
def test_nested_tensor_refused_by_name(layout, road):
    """A nested tensor is refused naming the op and the argument, as the C ops
    refuse it (no kernels run: the refusal comes first, on any device)."""
    device = DEVICE or "cpu"
    nested = torch.nested.nested_tensor([torch.randn(2, 8), torch.randn(3, 8)], layout=layout, device=device)
    weight = torch.rand(8, device=device)
    call = {"python": lambda: my_ops.triton_rms_norm(nested, weight),
            "module": lambda: my_ops.RMSNorm(8, impl="triton", device=device)(nested),
            "torch.ops": lambda: OPS.triton_rms_norm(nested, weight, 1e-6),
            "backward": lambda: OPS.triton_rms_norm_backward(nested, nested, weight, 1e-6)}[road]
    name = "triton_rms_norm_backward" if road == "backward" else "triton_rms_norm"
    with pytest.raises(RuntimeError, match=rf"^my_ops\.{name}: expected x to be a dense \(strided\) tensor, but "
                                           "got a nested tensor$"):
        call()
