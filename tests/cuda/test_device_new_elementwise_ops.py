"""special.entr, special.erfcx and special.xlog1py on CUDA tensors: the op-harness cases of
tests/test_new_elementwise_ops.py on the device (values against SciPy and torch on every layout, gradients), and the
device kernels bit for bit against the CPU ones (both compile the one shared scalar function)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba.cuda")
pytest.importorskip("scipy")

import test_new_elementwise_ops  # noqa: E402
from ember import opcodes as op  # noqa: E402
from ember.kernels import cpu  # noqa: E402
from ember.kernels.cuda import elementwise as ew  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402
from op_harness import op_tests  # noqa: E402

test_forward, test_gradcheck, test_gradgradcheck = op_tests(test_new_elementwise_ops.NEW_OPS, "cuda")

EDGES = np.array([-np.inf, -30.0, -26.6, -1.0, -0.0, 0.0, 0.5, 25.99, 26.01, 1e10, np.inf, np.nan])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["entr", "erfcx"])
def test_unary_kernels_match_the_cpu(name, dtype):
    x = EDGES.astype(dtype)
    code = op.UNARY_BY_NAME[name].code
    want = np.empty_like(x)
    cpu.unary(code, x, want)
    out = DeviceStorage.empty(x.shape, x.dtype)
    ew.unary(code, DeviceStorage.from_numpy(x), out)
    np.testing.assert_array_equal(out.to_numpy(), want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_xlog1py_kernel_matches_the_cpu(dtype):
    a = np.array([0.0, 0.0, 0.0, 1.0, 2.0, -3.0], dtype)
    b = np.array([np.nan, -1.0, -2.0, -1.0, 0.5, 7.0], dtype)
    want = np.empty_like(a)
    cpu.binary(op.XLOG1PY, a, b, want)
    out = DeviceStorage.empty(a.shape, a.dtype)
    ew.binary(op.XLOG1PY, DeviceStorage.from_numpy(a), DeviceStorage.from_numpy(b), out)
    np.testing.assert_array_equal(out.to_numpy(), want)
