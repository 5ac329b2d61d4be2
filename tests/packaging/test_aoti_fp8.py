"""The fp8 ops inside an AOTInductor package: an fp8 output returned by the
package, and one read by a kernel inductor generates around the op, the
package loaded and run by a fresh Python process as a user's would. On the
CPU, torch's generated wrapper cannot declare a kernel argument of an fp8
type (`at::Float8_e4m3fn`, torch 2.11, with a plain torch fp8 tensor as well
as with my_ops'): that case is expected to fail to compile with exactly that
error, and passes the moment torch compiles it (docs/deploying.md, "fp8
outputs in a package").
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

import my_ops
from conftest import make_input
from test_aoti import _excuse_a_crash_torch_shares

HIDDEN = 64
# (batch, sequence) sizes of the calls: the example's, others (both dynamic in the package)
SHAPES = [(2, 3), (1, 1), (5, 17)]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="AOTInductor packages: Linux")


class Quantize(torch.nn.Module):
    """RMSNorm to fp8 (per tensor and per token); `read`: the fp8 values also read back by plain torch math,
    which inductor compiles into a kernel of its own taking the fp8 buffer."""

    def __init__(self, device: str, read: bool) -> None:
        super().__init__()
        self.read = read
        self.weight = torch.nn.Parameter(torch.rand(HIDDEN, device=device) + 0.5, requires_grad=False)
        self.register_buffer("scale", torch.tensor([0.05], device=device))

    def forward(self, x: torch.Tensor):
        q = my_ops.rms_norm_fp8(x, self.weight, self.scale)
        q_token, s_token = my_ops.rms_norm_fp8_per_token(x, self.weight)
        if not self.read:
            return q, q_token, s_token
        return q.float() * self.scale + 1, (q_token.float() * s_token).sum(-1)


def _package(device: str, read: bool, folder) -> tuple[Quantize, str]:
    block = Quantize(device, read).eval()
    dims = {0: torch.export.Dim("batch", min=1, max=64), 1: torch.export.Dim("seq", min=1, max=64)}
    with torch.no_grad():
        program = torch.export.export(block, (make_input((2, 3, HIDDEN), torch.float32, device),),
                                      dynamic_shapes=(dims,))
        path = torch._inductor.aoti_compile_and_package(
            program, package_path=str(folder / "quantize.pt2"),
            inductor_configs={"aot_inductor.compile_wrapper_opt_level": "O0"})
    return block, path


# Loads the package after `import my_ops` and runs it on each saved input, its outputs saved on the CPU.
RUN_PACKAGE = textwrap.dedent("""
    import sys
    import torch
    import my_ops

    model = torch._inductor.aoti_load_package(sys.argv[1])
    print("step: loaded", flush=True)
    with torch.no_grad():
        outputs = [[t.cpu() for t in model(x.to(sys.argv[4]))] for x in torch.load(sys.argv[2])]
    torch.save(outputs, sys.argv[3])
""")


def _compile_error_is_torchs_fp8_wrapper(error: Exception) -> bool:
    return type(error).__name__ == "InductorError" and "Float8_e4m3fn" in str(error)


@pytest.mark.parametrize("read", [False, True], ids=["returned", "read by inductor"])
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_fp8_outputs_in_a_package_match_eager(device, read, tmp_path):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    try:
        block, path = _package(device, read, tmp_path)
    except Exception as error:
        if device == "cpu" and read and _compile_error_is_torchs_fp8_wrapper(error):
            pytest.xfail(f"torch {torch.__version__}: the CPU wrapper cannot declare an fp8 kernel argument")
        raise
    inputs = [make_input((batch, seq, HIDDEN), torch.float32, "cpu") for batch, seq in SHAPES]
    torch.save(inputs, tmp_path / "inputs.pt")
    result = subprocess.run([sys.executable, "-X", "faulthandler", "-c", RUN_PACKAGE, path, str(tmp_path / "inputs.pt"),
                             str(tmp_path / "outputs.pt"), device], capture_output=True, text=True, timeout=600)
    _excuse_a_crash_torch_shares(result, device, tmp_path)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr[-3000:]}"
    for x, got in zip(inputs, torch.load(tmp_path / "outputs.pt")):
        with torch.no_grad():
            want = [t.cpu() for t in block(x.to(device))]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
            if g.dtype == torch.float8_e4m3fn:  # the package calls the same kernel: the same bytes
                assert torch.equal(g.view(torch.uint8), w.view(torch.uint8))
            else:
                assert not g.isnan().any()
                torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
