"""torch.export over the ops: strict and non-strict, with grad on and off, and
run_decompositions; each graph calls the ops themselves and gives eager's results."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import my_ops
from conftest import assert_matches, make_input
from my_ops import reference
from test_compile import GatedBlock

MY_OPS = {"my_ops.rms_norm.default", "my_ops.silu_and_mul.default", "my_ops.matmul.default",
          "my_ops.mul.default", "my_ops.muladd.default", "my_ops.short_kernel.default"}


def _called_ops(program) -> set:
    """The call targets of the program's graph and its subgraphs (a region
    with grad switched is a higher-order op over a subgraph)."""
    return {str(node.target) for module in program.graph_module.modules() if hasattr(module, "graph")
            for node in module.graph.nodes if node.op == "call_function"}


@pytest.mark.parametrize("grad", [True, False], ids=["grad", "no_grad"])
@pytest.mark.parametrize("strict", [True, False], ids=["strict", "non-strict"])
def test_exported_block_matches_eager(strict, grad, device):
    block = GatedBlock(32, device)
    with torch.no_grad():
        block.norm.weight.uniform_(0.5, 1.5)
    x = make_input((6, 32), torch.float32, device, low=-1, high=1)
    with torch.set_grad_enabled(grad):
        want = block(x).detach()
        program = torch.export.export(block, (x,), strict=strict)
    assert MY_OPS <= _called_ops(program), _called_ops(program)
    decomposed = program.run_decompositions()
    assert MY_OPS <= _called_ops(decomposed)  # custom ops are kept whole
    for exported in (program, decomposed):
        with torch.no_grad():
            assert_matches(exported.module()(x), want.double(), torch.float32)


class _VmappedNorm(nn.Module):
    """rms_norm under torch.vmap inside the exported code, with grad on or off."""

    def __init__(self, grad: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.rand(8, dtype=torch.float64) + 0.5)
        self.grad = grad

    def forward(self, x):
        with torch.set_grad_enabled(self.grad):
            return torch.vmap(lambda row: my_ops.rms_norm(row, self.weight, 1e-6))(x)


@pytest.mark.parametrize("grad", [True, False], ids=["grad", "no_grad"])
def test_non_strict_export_of_vmap(grad):
    """Non-strict export runs the Python API eagerly, under its tracing modes
    and with torch.func's vmap on: the call takes the op's full path, which the
    trace records (torch.compile, and strict export, cannot trace vmap over the ops)."""
    module = _VmappedNorm(grad)
    x = torch.randn(3, 8, dtype=torch.float64)
    program = torch.export.export(module, (x,), strict=False)
    assert "my_ops.rms_norm.default" in _called_ops(program)
    with torch.no_grad():
        got = program.module()(x)
    assert_matches(got, reference.rms_norm(x, module.weight.detach(), 1e-6), torch.float64)


class _GradOfNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.rand(8, dtype=torch.float64) + 0.5)

    def forward(self, x):
        return torch.func.grad(lambda v: my_ops.rms_norm(v, self.weight, 1e-6).pow(2).sum())(x)


def test_non_strict_export_of_torch_func_grad_refused():
    """Differentiating transforms over the ops cannot be traced: the refusal
    names torch.export beside torch.compile, and what works instead."""
    with pytest.raises(RuntimeError, match=r"outside torch.compile and torch.export .* exporting the function "
                                           r"without the transform works"):
        torch.export.export(_GradOfNorm(), (torch.randn(3, 8, dtype=torch.float64),), strict=False)


class _NormInPlace(nn.Module):
    """A mutating op inside torch.no_grad() in forward, its read-only weight a parameter (requires grad)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden, dtype=torch.float64).float())
        self.register_buffer("residual", torch.zeros(4, hidden))

    def forward(self, x):
        x, residual = x.clone(), self.residual.clone()
        with torch.no_grad():
            my_ops.fused_add_rms_norm(x, residual, self.weight, 1e-6)
        return x


def test_exported_mutating_op_after_run_decompositions():
    """The inference IR (run_decompositions) drops the no_grad region, so the op
    meets its parameter with grad mode on, as a training step would, where its
    weight would silently get no gradient: refused, naming the op, the argument
    and what to do; under torch.no_grad() the program runs as eagerly."""
    x = make_input((4, 16), torch.float32, "cpu")
    model = _NormInPlace(16)
    expected = model(x)
    program = torch.export.export(model, (x,)).run_decompositions()
    # (decomposed, the program calls the op's functional form: docs/deploying.md)
    with pytest.raises(RuntimeError, match=r"^my_ops\.fused_add_rms_norm_functional: argument 'weight' requires "
                                           r"grad, .*"
                                           r"run_decompositions\(\) drops torch\.no_grad\(\) blocks: run its "
                                           r"module\(\) under torch\.no_grad\(\); torch\.jit\.trace does not "
                                           r"record them either: call the traced function under torch\.no_grad\(\)$"):
        program.module()(x)
    with torch.no_grad():
        got = program.module()(x)
    assert torch.equal(got, expected)
    want, _ = reference.fused_add_rms_norm(x, torch.zeros(4, 16), model.weight.detach(), 1e-6)
    assert_matches(got, want, torch.float32)


def test_traced_module_calling_an_inference_op_under_no_grad():
    """torch.jit.trace does not record a torch.no_grad() block: the traced
    module calls the fp8 inference op on its parameter with grad mode on,
    refused naming jit.trace and the fix; under torch.no_grad() it gives the
    eager bits."""

    class Quantize(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(16))

        def forward(self, x):
            with torch.no_grad():
                return my_ops.rms_norm_fp8_per_token(x, self.weight, None)

    x = make_input((4, 16), torch.float32, "cpu")
    model = Quantize()
    want = model(x)
    traced = torch.jit.trace(model, (x,), check_trace=False)
    with pytest.raises(RuntimeError, match=r"my_ops\.rms_norm_fp8_per_token: argument 'weight' requires grad, "
                                           r".*torch\.jit\.trace does not record them either"):
        traced(x)
    with torch.no_grad():
        got = traced(x)
    assert torch.equal(got[0].view(torch.uint8), want[0].view(torch.uint8)) and torch.equal(got[1], want[1])


class _OutIntoTheBuffer(nn.Module):
    """add_out(buf[:n], b, buf[-n:]): out is a itself where the buffer holds n
    elements, apart from it at 2n or more, overlapping it in between."""

    def forward(self, buf, b):
        n = b.shape[0]
        my_ops.add_out(buf[:n], b, buf[-n:])
        return buf


class _ResidualInTheBuffer(nn.Module):
    """fused_add_rms_norm with x and residual at the two ends of one buffer."""

    def forward(self, buf, weight):
        n = weight.shape[0]
        my_ops.fused_add_rms_norm(buf[:n].view(1, n), buf[-n:].view(1, n), weight, 1e-6)
        return buf


def _outcome(fn):
    """fn()'s result, or its refusal's message (the op named as the user called it)."""
    try:
        return fn()
    except RuntimeError as error:
        return str(error).replace("_functional:", ":")


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "non-strict"])
@pytest.mark.parametrize("module", [_OutIntoTheBuffer, _ResidualInTheBuffer], ids=lambda m: m.__name__)
def test_dynamic_export_leaves_memory_rules_to_the_run(module, strict):
    """A program exported with a dynamic buffer and length gives eager's result
    or eager's refusal for every placement: its memory rules are checked when
    it runs, not turned into guards on the sizes (which refused the legal
    `out = a` call of another size with torch's AssertionError)."""
    dims = {"buf": {0: torch.export.Dim("size", min=2, max=100)},
            ("b" if module is _OutIntoTheBuffer else "weight"): {0: torch.export.Dim("n", min=2, max=8)}}
    with torch.no_grad():
        program = torch.export.export(module(), (torch.arange(20.0), torch.ones(8)), strict=strict,
                                      dynamic_shapes=dims)
    refused = 0
    for exported in (program, program.run_decompositions()):
        for size, n in ((20, 8), (30, 6), (12, 8), (8, 8), (9, 5)):
            buf, other = make_input((size,), torch.float32, "cpu"), make_input((n,), torch.float32, "cpu")
            want = _outcome(lambda: module()(buf.clone(), other))
            got = _outcome(lambda: exported.module()(buf.clone(), other))
            if isinstance(want, str):
                assert got == want
                refused += 1
            else:
                assert isinstance(got, torch.Tensor), got
                assert not got.isnan().any()
                torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert 0 < refused < 20
