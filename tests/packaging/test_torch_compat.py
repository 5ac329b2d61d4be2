"""The wheel on a torch release without the private API it uses.

my_ops uses private torch names (torch._C._*, underscore attributes) in one
module, my_ops/_torch_compat.py, which falls back to public behaviour where
a name is missing. Each test here starts a Python session in which one name
is missing before `import my_ops`, and runs a representative subset of the
op tests there: forward values, backward and double backward, torch.func,
the mutating ops (in place, version counters, the requires-grad refusal),
the forward-mode AD refusal and torch.compile. Where nothing in torch itself
needs the name, the session deletes it from torch; where torch does (deleting
it would break torch, not simulate a release without it), the session hides
it from my_ops through MY_OPS_COMPAT_HIDE, which only _torch_compat reads.
"""

from __future__ import annotations

import ast
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

TESTS = pathlib.Path(__file__).parents[1]
PACKAGE = TESTS.parent / "python" / "my_ops"

# A subset of the op tests: under ~20 s on a 2-core CPU.
SUBSET = [
    "tests/ops/test_rms_norm.py::test_rms_norm[float32-cpu-contiguous-(4, 1000)]",
    "tests/ops/test_rms_norm.py::test_rms_norm_backward[float32-cpu-contiguous-(5, 13)]",
    "tests/ops/test_rms_norm.py::test_rms_norm_second_order_matches_pytorch",
    "tests/ops/test_rms_norm.py::test_rms_norm_gradgradcheck",
    "tests/ops/test_rms_norm.py::test_fused_add_rms_norm[float32-cpu-contiguous-(4, 1000)]",
    "tests/ops/test_rules.py::test_bad_call_refused_untouched[cpu-fused_add_rms_norm residual requires grad]",
    "tests/ops/test_rules.py::test_bad_call_refused_untouched[cpu-fused_add_rms_norm x is residual]",
    "tests/ops/test_rules.py::test_bad_call_refused_untouched[cpu-fused_add_rms_norm x and residual overlap]",
    "tests/ops/test_elementwise.py::test_mul[float32-cpu-contiguous-(3, 333)]",
    "tests/ops/test_op_specs.py::test_gradcheck",
    "tests/ops/test_elementwise.py::test_add_out_in_place",
    "tests/ops/test_elementwise.py::test_add_out_requires_grad_rejected_but_allowed_under_no_grad",
    "tests/ops/test_rules.py::test_bad_call_refused_untouched[cpu-add_out requires grad]",
    "tests/ops/test_rules.py::test_bad_call_refused_untouched[cpu-add_out out partial overlap]",
    "tests/ops/test_rules.py::test_mutating_ops_bump_version_counters",
    "tests/ops/test_act_and_mul.py::test_backward[silu_and_mul-float32-cpu-contiguous-(3, 2)]",
    "tests/ops/test_act_and_mul.py::test_second_order_matches_eager",
    "tests/ops/test_call_paths.py::test_idle_autograd_results",
    "tests/ops/test_call_paths.py::test_gradients_still_recorded",
    "tests/ops/test_call_paths.py::test_forward_mode_ad_refused",
    "tests/ops/test_call_paths.py::test_forward_mode_ad_refused_through_torch_ops",
    "tests/ops/test_call_paths.py::test_torch_func_transforms",
    "tests/ops/test_call_paths.py::test_torch_func_through_torch_ops",
    "tests/ops/test_func_vjp_outside.py",
    "tests/ops/test_call_paths.py::test_linearize_refused",
    "tests/ops/test_call_paths.py::test_second_order_under_saved_tensor_hooks",
    "tests/ops/test_inference_tensors.py",
    "tests/ops/test_compile.py::test_compiled_mutating_ops",
    "tests/ops/test_fp8.py::test_grad_input_refused_naming_the_op",
    "tests/ops/test_roads.py::test_overlap_refused_after_a_graph_compiled_for_apart_arguments"
    "[fused_add_rms_norm-torch.ops-aot_eager]",
    "tests/ops/test_compile.py::test_compiled_block_matches_eager[cpu-aot_eager]",
    *(f"tests/packaging/test_aoti_functional_route.py::test_exported_program_takes_the_functional_route[{case}]"
      for case in ("python-api-non-strict", "python-api-strict")),
]

# Without the op's own Autograd kernel, the ops take torch's register_autograd,
# on every road: torch.func over them fails in torch's own check
# (pytorch#168393), a dual tensor is refused below torch's kernel (and every
# call under an open dual level where no transform can be told apart), and
# an inference tensor that requires grad cannot be saved for backward
# (refused by name).
_AS_REGISTER_AUTOGRAD = ("not torch_func and not test_func_vjp_outside and not inference and not functional_route "
                         "and not test_forward_mode_ad_refused[")
_REGISTER_AUTOGRAD = "not compat.OWN_AUTOGRAD_KERNEL and runtime._lib is not None"

# name: (statement that deletes it from torch, or None to hide it through
# MY_OPS_COMPAT_HIDE; what must hold in my_ops once it is missing; -k filter)
CASES = {
    # the redispatch by the kernel's own keys: the whole subset holds
    "_after_autograd_keyset": (None, "isinstance(compat.PAST_AUTOGRAD, frozenset)", ""),  # torch uses it
    # ... and under torch's Python dispatcher the in-place kernels run twice (two version bumps)
    "DispatchKey": (None, _REGISTER_AUTOGRAD, _AS_REGISTER_AUTOGRAD + " and not python_dispatcher"),  # torch uses it
    "_SingleLevelFunction": (None, _REGISTER_AUTOGRAD, _AS_REGISTER_AUTOGRAD),  # torch.func's own
    "enable_single_level_autograd_function": (None, _REGISTER_AUTOGRAD, _AS_REGISTER_AUTOGRAD),
    # the overlap check in compiled graphs: none (torch 2.11 does not guard aliasing); the
    # mutating ops' export route: the Python API takes it (torch.ops calls, no longer)
    "FunctionalTensorMode": (
        None, "not compat.FUNCTIONALIZATION_RULES and my_ops.families.rms_norm._fused_add_rms_norm "
        "is not torch.ops.my_ops.fused_add_rms_norm.default",
        "not overlap_refused"),
}


def _session(name: str) -> str:
    delete, holds, _ = CASES[name]
    return textwrap.dedent(f"""
        import inspect, sys
        import torch, torch.autograd.forward_ad
        {delete or 'pass'}
        import my_ops
        from my_ops import _mutating as mutating, _runtime as runtime, _torch_compat as compat
        assert {holds}, "my_ops did not take the fallback for {name}"
        import pytest
        sys.exit(pytest.main(sys.argv[1:]))
    """)


def test_cases_cover_every_private_name():
    """Every private name _torch_compat looks up has a case here; five at most
    (each must pay for itself: docs/performance.md, "Host time")."""
    source = (PACKAGE / "_torch_compat.py").read_text()
    looked_up = set(re.findall(r"_private\([^,]+, \"(\w+)\"\)", source))
    looked_up |= set(re.findall(r"\"(\w+)\" in _HIDDEN", source))
    assert looked_up == set(CASES), looked_up ^ set(CASES)
    assert len(CASES) <= 5, sorted(CASES)


@pytest.mark.parametrize("name", CASES)
def test_ops_without_private_name(name):
    """(in the installed my_ops, as every test here)"""
    delete, _, select = CASES[name]
    env = dict(os.environ)
    env["MY_OPS_COMPAT_HIDE"] = "" if delete else name
    args = ["-x", "-q", "-p", "no:cacheprovider", "-W", "ignore", *SUBSET]
    if select:
        args += ["-k", select]
    result = subprocess.run([sys.executable, "-c", _session(name), *args], cwd=TESTS.parent, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert re.search(r"\d+ passed", result.stdout), result.stdout[-2000:]


# Not torch: CPython's documented frame access (my_ops/__init__.py).
_ALLOWED = {"sys._getframe"}


def _private_uses(source: str):
    """(line, text) of each private name in the source: an underscore attribute
    (torch._C, op._schema, storage._cdata), one fetched by name (getattr(x,
    "_name")), an import from a private torch module, and the base apply
    under torch.autograd.Function.apply (super(torch.autograd.Function, ...))."""
    tree = ast.parse(source)
    # the package's own modules (from . import _runtime): their underscore names are ours, not torch's
    own = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level
           for alias in node.names}
    for node in ast.walk(tree):
        text = ast.unparse(node) if isinstance(node, ast.expr) else ""
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.endswith("__"):
            if text not in _ALLOWED and not (isinstance(node.value, ast.Name) and node.value.id in own):
                yield node.lineno, text
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("getattr", "hasattr", "setattr", "delattr") and len(node.args) > 1 \
                    and isinstance(node.args[1], ast.Constant) and re.match(r"_(?!_)", str(node.args[1].value)):
                yield node.lineno, text
            if node.func.id == "super" and node.args and ast.unparse(node.args[0]) == "torch.autograd.Function":
                yield node.lineno, text
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            for module in modules:
                if module.startswith("torch") and "._" in module:
                    yield node.lineno, f"import {module}"


def test_private_torch_api_only_in_compat_module():
    offenders = [f"{path.relative_to(PACKAGE)}:{line}: {text}"
                 for path in sorted(PACKAGE.rglob("*.py")) if path.name != "_torch_compat.py"
                 for line, text in _private_uses(path.read_text())]
    assert not offenders, "private torch API outside _torch_compat.py:\n" + "\n".join(offenders)


def test_private_use_check_finds_them():
    """The check above finds each form of private use, also inside an f-string."""
    source = textwrap.dedent("""
        import torch._dynamo
        from torch._subclasses import FakeTensorMode
        torch._C._after_autograd_keyset
        f"{op._schema.name}"
        getattr(torch._C, "_any_requires_grad", None)
        super(torch.autograd.Function, Function).apply
        sys._getframe(1)
        from . import _runtime
        _runtime._call(x)
    """)
    found = [text for _, text in _private_uses(source)]
    assert len(set(line for line, _ in _private_uses(source))) == 6, found
