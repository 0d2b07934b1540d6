"""The kernels run as plain Python (``NUMBA_DISABLE_JIT=1``) and agree with NumPy.

This is the no-JIT backend of the test matrix: in pure Python every array access
is bounds-checked, so these runs also prove the kernels stay in bounds on the
layouts they cover (contiguous, strided, broadcast, negative strides, 0-d, empty).
"""
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import numpy as np
    import ember
    from ember import opcodes as op
    from ember.kernels.cpu import arg_reduce, binary, matmul, reduce, scan, ternary, unary

    rng = np.random.default_rng(0)
    base = rng.standard_normal((3, 4, 5))
    layouts = [base, base.transpose(2, 0, 1), base[::-1, ::2], base[..., 1], np.float64(2.5) * np.ones(()),
               base[:0]]
    for x in layouts:
        out = np.empty(x.shape)
        unary(op.EXP, x, out)
        np.testing.assert_allclose(out, np.exp(x))
        binary(op.MUL, x, x[..., :1] if x.ndim else x, out)
        np.testing.assert_allclose(out, x * (x[..., :1] if x.ndim else x))
        ternary(op.CLAMP, x, np.array(-0.5), np.array(0.5), out)
        np.testing.assert_allclose(out, np.clip(x, -0.5, 0.5))
        for dims in ([()] if x.ndim == 0 else [(0,), (x.ndim - 1,), tuple(range(x.ndim))]):
            red = np.empty([1 if d in dims else n for d, n in enumerate(x.shape)])
            reduce(op.R_SUM, x, dims, red)
            np.testing.assert_allclose(red, x.sum(axis=dims, keepdims=True), atol=1e-12)
        if x.ndim and x.size:
            values = np.empty(x.shape[:-1] + (1,))
            indices = np.empty(x.shape[:-1] + (1,), np.int64)
            arg_reduce(op.A_MAX, x, x.ndim - 1, values, indices)
            np.testing.assert_array_equal(indices[..., 0], x.argmax(-1))
            scan(op.S_SUM, x, 0, out)
            np.testing.assert_allclose(out, np.cumsum(x, 0), atol=1e-12)
    a = rng.integers(-5, 5, (2, 3, 4))
    b = rng.integers(-5, 5, (2, 4, 3))
    prod = np.empty((2, 3, 3), np.int64)
    matmul(a, b, prod)
    np.testing.assert_array_equal(prod, a @ b)
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    (x.tanh() * x.T.T).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.tanh(x.detach().numpy()) + x.detach().numpy()
                               / np.cosh(x.detach().numpy()) ** 2)
    print("no-jit ok")
""")


def test_kernels_run_as_plain_python():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    result = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "no-jit ok" in result.stdout
