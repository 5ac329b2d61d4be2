"""CUDA devices other than the current one, and streams."""

from __future__ import annotations

import pytest
import torch

import my_ops
from conftest import assert_matches, make_input
from my_ops import reference

needs_two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")


@needs_two_gpus
def test_inputs_on_second_gpu():
    """Kernels run on the tensors' device even when another one is current."""
    torch.cuda.set_device(0)
    x = make_input((8, 256), torch.bfloat16, "cuda:1")
    w = make_input((256,), torch.bfloat16, "cuda:1")
    out = my_ops.rms_norm(x, w, 1e-6)
    assert out.device == torch.device("cuda:1")
    assert_matches(out, reference.rms_norm(x, w, 1e-6), torch.bfloat16)
    a = make_input((70, 30), torch.float32, "cuda:1")
    b = make_input((30, 50), torch.float32, "cuda:1")
    assert_matches(my_ops.matmul(a, b), a.double() @ b.double(), torch.float32, scale=6)


@needs_two_gpus
def test_mixed_gpus_rejected():
    with pytest.raises(RuntimeError, match=r"expected b to be on the same device as a \(cuda:0\), but got cuda:1"):
        my_ops.mul(torch.randn(3, device="cuda:0"), torch.randn(3, device="cuda:1"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_runs_on_the_current_stream():
    """Work is queued on the caller's stream, so it orders with other work on that stream."""
    stream = torch.cuda.Stream()
    x = make_input((4096, 1024), torch.float16, "cuda")
    w = make_input((1024,), torch.float16, "cuda")
    with torch.cuda.stream(stream):
        y = x * 2  # queued on `stream`
        out = my_ops.rms_norm(y, w, 1e-6)  # must run after it, on the same stream
    stream.synchronize()
    assert_matches(out, reference.rms_norm(x * 2, w, 1e-6), torch.float16)
