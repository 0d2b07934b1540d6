"""Every backend provides the contract of ``ember.backend`` with the same signatures."""
import inspect

import numpy as np
import pytest

from ember import backend, cpu_kernels, opcodes as op

BACKENDS = [pytest.param(cpu_kernels, id="cpu")]


@pytest.mark.parametrize("module", BACKENDS)
def test_backend_exports_contract_with_signatures(module):
    assert isinstance(module, backend.Backend)
    for name in backend.CONTRACT:
        expected = list(inspect.signature(getattr(backend.Backend, name)).parameters)[1:]
        assert list(inspect.signature(getattr(module, name)).parameters) == expected, name


@pytest.mark.parametrize("module", BACKENDS)
def test_backend_contract_computes(module):
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    out = np.empty_like(x)
    module.unary(op.NEG, x, out)
    np.testing.assert_array_equal(out, -x)
    module.binary(op.MUL, x, x[0], out)
    np.testing.assert_array_equal(out, x * x[0])
    module.ternary(op.CLAMP, x, np.array(1.0), np.array(4.0), out)
    np.testing.assert_array_equal(out, np.clip(x, 1, 4))
    red = np.empty((1, 3))
    module.reduce(op.R_SUM, x, (0,), red)
    np.testing.assert_array_equal(red, x.sum(0, keepdims=True))
    values, indices = np.empty((2, 1)), np.empty((2, 1), np.int64)
    module.arg_reduce(op.A_MAX, x, 1, values, indices)
    np.testing.assert_array_equal(indices.ravel(), [2, 2])
    module.scan(op.S_SUM, x, 1, out)
    np.testing.assert_array_equal(out, np.cumsum(x, 1))
    prod = np.empty((1, 2, 2))
    module.matmul(x[None], x.T[None], prod)
    np.testing.assert_array_equal(prod[0], x @ x.T)


@pytest.mark.parametrize("module", BACKENDS)
def test_backend_provides_kernel_families_with_cpu_signatures(module):
    for family, names in backend.KERNEL_FAMILIES.items():
        mine, reference = getattr(module, family), getattr(cpu_kernels, family)
        for name in names:
            assert callable(getattr(mine, name)), (family, name)
            assert inspect.signature(getattr(mine, name)) == inspect.signature(getattr(reference, name)), \
                (family, name)
            assert name in reference.__all__, (family, name)
