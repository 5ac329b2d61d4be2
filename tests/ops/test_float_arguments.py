"""Float arguments of the Python API: eps=None means what it means to
torch.nn.functional.rms_norm and nn.RMSNorm (the machine epsilon of the
computation dtype: float32 for half types); NumPy scalars are taken, and
a str or bool is refused, as torch.ops.my_ops takes and refuses them."""

from __future__ import annotations

import pytest
import torch

import my_ops
import specs


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_rms_norm_eps_none_is_the_machine_epsilon(dtype):
    x = torch.randn(5, 32, dtype=dtype) * 1e-3  # small rows, where eps matters
    w = torch.rand(32, dtype=dtype)
    want = torch.nn.functional.rms_norm(x, (32,), w, None)  # the op my_ops is a drop-in for
    tol = {torch.float32: 1e-5, torch.bfloat16: 2e-2, torch.float64: 1e-12}[dtype]
    torch.testing.assert_close(my_ops.rms_norm(x, w, None), want, rtol=tol, atol=tol)
    module = my_ops.RMSNorm(32, eps=None, dtype=dtype)
    with torch.no_grad():
        module.weight.copy_(w)
    torch.testing.assert_close(module(x), torch.nn.RMSNorm(32, eps=None, dtype=dtype, elementwise_affine=False)(x) * w,
                               rtol=tol, atol=tol)


def test_fused_add_rms_norm_eps_none():
    x, residual, w = torch.randn(3, 16) * 1e-3, torch.randn(3, 16) * 1e-3, torch.rand(16)
    want_residual = residual + x
    want_x = torch.nn.functional.rms_norm(want_residual, (16,), w, None)
    my_ops.fused_add_rms_norm(x, residual, w, None)
    torch.testing.assert_close(residual, want_residual)
    torch.testing.assert_close(x, want_x)


def _float_arguments():
    """Every float argument of every op with a Python API (from its schema)."""
    return [pytest.param(spec, a.name, value, id=f"{spec.id}-{a.name}-{value!r}")
            for spec in specs.where(api=True) for a in spec.op._schema.arguments
            if str(a.type) in ("float", "Optional[float]") for value in ("0.5", True, 1 + 2j)]


@pytest.mark.parametrize("spec, argument, value", _float_arguments())
def test_a_str_or_bool_is_refused_like_torch_ops_refuses_it(spec, argument, value):
    """A bool, which torch.ops converts to a float, is refused by the Python
    API; what torch.ops refuses (a str, a complex), the API refuses with the
    same error."""
    args = list(spec.resolve(torch.randn(2, 8)))
    index = spec.argument_names().index(argument)
    args[index] = value
    if isinstance(value, bool):
        with pytest.raises(RuntimeError, match=rf"my_ops\.{spec.name}: expected {argument} to be a float"):
            spec.api(*args)
        return
    with pytest.raises(RuntimeError, match=rf"my_ops::{spec.name}\(\) Expected a value of type") as through_ops:
        spec.op(*args)
    with pytest.raises(type(through_ops.value)) as through_api:
        spec.api(*args)
    assert str(through_api.value) == str(through_ops.value)


def _numpy_float_arguments():
    """Every float argument of every op with a Python API, as NumPy scalars."""
    import numpy as np

    return [pytest.param(spec, a.name, value, id=f"{spec.id}-{a.name}-{type(value).__name__}")
            for spec in specs.where(api=True) for a in spec.op._schema.arguments if str(a.type) == "float"
            for value in (np.float32(0.25), np.int64(1))]


@pytest.mark.parametrize("spec, argument, value", _numpy_float_arguments())
def test_numpy_scalars_are_taken_as_torch_ops_takes_them(spec, argument, value):
    x = torch.randn(3, 8, dtype=torch.float64)
    args = list(spec.resolve(x))
    index = spec.argument_names().index(argument)
    args[index] = value
    want_args = list(args)
    want_args[index] = float(value)
    clones = [a.clone() if isinstance(a, torch.Tensor) else a for a in want_args]
    got = spec.api(*args)
    want = spec.api(*clones)
    if spec.mutates:  # compare what was written
        got, want = [a for a in args if isinstance(a, torch.Tensor)], [a for a in clones if isinstance(a, torch.Tensor)]
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_rms_norm_module_takes_a_numpy_eps():
    import numpy as np

    x = torch.randn(4, 16)
    want = my_ops.RMSNorm(16, eps=1e-5)(x)
    torch.testing.assert_close(my_ops.RMSNorm(16, eps=np.float32(1e-5))(x), want, rtol=1e-6, atol=1e-6)


def test_rms_norm_module_keeps_a_numpy_eps_as_a_float_under_compile():
    """The module stores eps as a float: torch.compile would trace a NumPy
    scalar attribute as a tensor, which the op's `float? eps` does not take."""
    import numpy as np

    module = my_ops.RMSNorm(16, eps=np.float32(1e-5))
    x = torch.randn(4, 16)
    torch._dynamo.reset()
    assert type(module.eps) is float
    torch.testing.assert_close(torch.compile(module, fullgraph=True, backend="aot_eager")(x), module(x), rtol=0, atol=0)


def test_numbers_past_a_float_refused_and_decimals_taken():
    """A finite number past a float's range (NumPy's longdouble, a Decimal) would become inf: refused by
    the op and the argument, as an int too large is; a Decimal in range is taken as its float; an infinite
    value stays infinite (a Python inf is taken too)."""
    import decimal

    import numpy as np

    a = torch.randn(2, 4)
    for value, kind in ((np.longdouble("1e400"), "longdouble"), (decimal.Decimal("-1e400"), "Decimal")):
        with pytest.raises(RuntimeError, match=rf"^my_ops\.muladd: expected c to be a float, but got {kind} too "
                                               r"large to convert to float$"):
            my_ops.muladd(a, a, value)
    torch.testing.assert_close(my_ops.muladd(a, a, decimal.Decimal("0.5")), my_ops.muladd(a, a, 0.5))
    assert my_ops.muladd(a, a, np.float64("inf")).isinf().all()


@pytest.mark.parametrize("eps", ["ndarray", "complex", "Decimal"])
def test_rms_norm_module_refuses_an_eps_no_float_can_hold(eps):
    """Refused when the module is made, naming the module, not at its first call."""
    import decimal

    import numpy as np

    value = {"ndarray": np.array([2.0]), "complex": 2 + 0j, "Decimal": decimal.Decimal("1e400")}[eps]
    with pytest.raises((ValueError, RuntimeError), match=r"^my_ops\.RMSNorm: expected eps to be a float \(or None "
                                                         rf"for the machine epsilon\), but got {eps}"):
        my_ops.RMSNorm(8, eps=value)


def _tensor_float_arguments():
    """Every float argument of every op with a Python API (from its schema)."""
    return [pytest.param(spec, a.name, id=f"{spec.id}-{a.name}") for spec in specs.where(api=True)
            for a in spec.op._schema.arguments if str(a.type) in ("float", "Optional[float]")]


@pytest.mark.parametrize("spec, argument", _tensor_float_arguments())
def test_a_tensor_float_argument_is_its_value_unless_it_needs_a_gradient(spec, argument):
    """A one-element tensor is read as its number, as torch.ops reads it. One
    that requires grad is refused by name (its gradient would be dropped
    silently), and so is a bool tensor, as a bool is."""
    x = torch.randn(3, 8, dtype=torch.float64)
    index = spec.argument_names().index(argument)
    value = torch.rand((), dtype=torch.float64) * 0.5 + 0.25
    args = list(spec.resolve(x))
    as_float, as_tensor = list(args), [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    as_float[index], as_tensor[index] = value.item(), value
    got, want = spec.api(*as_tensor), spec.api(*as_float)
    if spec.mutates:  # compare what was written
        got, want = ([a for i, a in enumerate(written) if isinstance(a, torch.Tensor) and i != index]
                     for written in (as_tensor, as_float))
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    args[index] = value.clone().requires_grad_()
    with pytest.raises(RuntimeError, match=rf"^my_ops\.{spec.name}: {argument} is a tensor that requires grad, .* "
                                           rf"pass a float \({argument}\.item\(\)\)"):
        spec.api(*args)
    args[index] = torch.tensor(True)
    with pytest.raises(RuntimeError, match=rf"^my_ops\.{spec.name}: expected {argument} to be a float.*, but got a "
                                           "bool tensor$"):
        spec.api(*args)


def test_rms_norm_module_refuses_an_eps_parameter():
    """An eps that is a Parameter would be listed among the module's parameters and never get a gradient."""
    with pytest.raises(RuntimeError, match=r"^my_ops\.RMSNorm: eps is a tensor that requires grad"):
        my_ops.RMSNorm(8, eps=torch.nn.Parameter(torch.tensor(0.1)))
