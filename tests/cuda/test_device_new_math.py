"""gcd, lcm and nextafter as CUDA elementwise kernels (against the CPU kernels, NumPy and Python's math), and the
composite math names of the same issue on CUDA tensors against the CPU (values, device, gradients)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

import ember  # noqa: E402
from ember import opcodes as op
from ember.kernels import cpu  # noqa: E402
from ember.kernels.cuda import elementwise as ew  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

R = np.random.default_rng(0)
NEXTAFTER = {"float64": op.NEXTAFTER, "float32": op.NEXTAFTER_F32}


def _kernel_pair(code, a, b, out_dtype, device_view):
    """(cuda result, cpu result) of binary kernel ``code`` on ``a`` and ``b`` (broadcast)."""
    shape = np.broadcast_shapes(a.shape, b.shape)
    expected = np.zeros(shape, out_dtype)
    cpu.binary(code, a, b, expected)
    out = DeviceStorage.empty(shape, out_dtype)
    ew.binary(code, device_view(a), device_view(b), out)
    return out.to_numpy(), expected


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
@pytest.mark.parametrize("code", [op.GCD, op.LCM], ids=["gcd", "lcm"])
def test_gcd_lcm_kernels_match_cpu_and_python(code, dtype, device_view, layouts):
    lo = 0 if dtype == "uint8" else -11
    base = R.integers(lo, 12, (2, 3, 4)).astype(dtype)
    for name, view in layouts(base).items():
        other = R.integers(lo, 12, view.shape[-1:]).astype(dtype)  # a broadcast row
        got, expected = _kernel_pair(code, view, other, np.dtype(dtype), device_view)
        np.testing.assert_array_equal(got, expected, err_msg=name)
        python = math.gcd if code == op.GCD else math.lcm
        want = np.vectorize(python)(view.astype(np.int64), other.astype(np.int64)).astype(dtype)
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_gcd_lcm_kernels_refuse_floats(device_view):
    a = np.ones(3)
    with pytest.raises(TypeError, match="floating-point"):
        ew.binary(op.GCD, device_view(a), device_view(a), DeviceStorage.empty((3,), np.float64))


EDGES = [0.0, -0.0, 1.0, -1.0, 0.75, 2.0, np.inf, -np.inf, np.nan, 1e-40, 6.5, -3.25]


@pytest.mark.parametrize("dtype", sorted(NEXTAFTER))
def test_nextafter_kernels_are_bit_exact(dtype, device_view):
    x = np.array(EDGES + [np.finfo(dtype).tiny, np.finfo(dtype).max, np.finfo(dtype).smallest_subnormal], dtype)
    targets = np.array([np.inf, -np.inf, 0.0, 1.0], dtype)
    got, expected = _kernel_pair(NEXTAFTER[dtype], x[:, None], targets[None, :], np.dtype(dtype), device_view)
    with np.errstate(all="ignore"):
        want = np.nextafter(x[:, None], targets[None, :])
    for result in (got, expected):
        np.testing.assert_array_equal(result, want)
        np.testing.assert_array_equal(np.signbit(result), np.signbit(want))


def test_nextafter_half_kernel_steps_in_float16_carried_in_float32(device_view):
    x = np.array([0.0, 1.0, -1.0, 2.0 ** -24, 2.0 ** -14, 65504.0, 6.5, np.inf], np.float16)
    toward = np.array([1.0, 2.0, 0.0, 0.0, 0.0, np.inf, -1.0, 0.0], np.float16)
    got, expected = _kernel_pair(op.NEXTAFTER_F16, x.astype(np.float32), toward.astype(np.float32),
                                 np.dtype(np.float32), device_view)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(got.astype(np.float16), np.nextafter(x, toward))
    np.testing.assert_array_equal(got, expected)


# ------------------------------------------------------------------------------------------------ tensor level
def _on_both(fn, *arrays, requires_grad=False):
    """``fn(*tensors)`` on CPU tensors and on CUDA copies: (cpu inputs, cpu out, cuda inputs, cuda out)."""
    cpu_in = [ember.tensor(a, requires_grad=requires_grad and a.dtype.kind == "f") for a in arrays]
    cuda_in = [ember.tensor(a, device="cuda", requires_grad=requires_grad and a.dtype.kind == "f") for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cpu_in, fn(*cpu_in), cuda_in, fn(*cuda_in)


def _assert_same(cpu_out, cuda_out, rtol=1e-10, atol=1e-12):
    for c, g in zip(cpu_out if isinstance(cpu_out, tuple) else (cpu_out,),
                    cuda_out if isinstance(cuda_out, tuple) else (cuda_out,)):
        assert g.device == ember.device("cuda", 0) and g.dtype == c.dtype and g.shape == c.shape
        np.testing.assert_allclose(g.detach().cpu().numpy().astype(np.float64),
                                   c.detach().numpy().astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)


def test_gcd_lcm_nextafter_on_cuda_tensors():
    a = R.integers(-30, 30, (3, 4))
    b = R.integers(-30, 30, (4,))
    for fn in (ember.gcd, ember.lcm, lambda x, y: x.t().gcd(y[:3]), lambda x, y: x.clone().lcm_(y)):
        _assert_same(_on_both(fn, a, b)[1], _on_both(fn, a, b)[3])
    for dtype in ("float64", "float32", "float16"):
        x = np.array(EDGES, dtype)
        y = np.roll(x, 3)
        _, c, _, g = _on_both(ember.nextafter, x, y)
        _assert_same(c, g, rtol=0, atol=0)
        np.testing.assert_array_equal(np.signbit(g.cpu().numpy()), np.signbit(c.numpy()))


F64 = lambda *shape: R.uniform(-2, 2, shape)  # noqa: E731
POS = lambda *shape: R.uniform(0.5, 2.5, shape)  # noqa: E731
ROWS = [
    ("addmv", lambda c, m, v: ember.addmv(c, m, v, beta=0.5, alpha=2), (F64(3), F64(3, 4), F64(4))),
    ("addr", lambda c, u, v: ember.addr(c, u, v, beta=0), (F64(3, 4), F64(3), F64(4))),
    ("baddbmm_addbmm", lambda c, a, b: ember.baddbmm(c, a, b) + ember.addbmm(c, a, b, alpha=-1),
     (F64(3, 5), F64(2, 3, 4), F64(2, 4, 5))),
    ("vdot_chain", lambda a, b: ember.vdot(a[0], b[:, 0]) + ember.chain_matmul(a, b, a).sum(),
     (F64(3, 4), F64(4, 3))),
    ("cov_corrcoef", lambda x, w: ember.cov(x, aweights=w) + ember.corrcoef(x), (F64(3, 5), POS(5))),
    ("trapezoid", lambda y, x: ember.trapezoid(y, x) + ember.cumulative_trapezoid(y, dx=0.5).sum(-1),
     (F64(3, 4), np.cumsum(POS(4)))),
    ("renorm", lambda x: ember.renorm(x, 2, 1, 1.0), (F64(3, 4),)),
    ("index_reduce", lambda x, s: ember.index_reduce(x, 0, ember.tensor([0, 2, 0], device=x.device), s, "prod"),
     (F64(3, 4), F64(3, 4))),
    ("aminmax_nanmedian", lambda x: ember.aminmax(x, dim=1).max + ember.nanmedian(x, 1).values, (F64(3, 4),)),
    ("special", lambda x: ember.polygamma(2, x) + ember.mvlgamma(x + 1, 2) + ember.i0(x)
     + ember.igamma(x.detach(), x) + ember.frexp(x).mantissa, (POS(3, 4),)),
]


@pytest.mark.parametrize("name, fn, arrays", ROWS, ids=[row[0] for row in ROWS])
def test_composite_names_on_cuda_match_cpu(name, fn, arrays):
    cpu_in, c, cuda_in, g = _on_both(fn, *arrays, requires_grad=True)
    _assert_same(c, g)
    w = R.uniform(-1, 1, c.shape)
    (c * ember.tensor(w)).sum().backward()
    (g * ember.tensor(w, device="cuda")).sum().backward()
    for a, b in zip(cpu_in, cuda_in):
        if a.grad is not None:
            assert b.grad.device == b.device
            np.testing.assert_allclose(b.grad.cpu().numpy(), a.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_histogram_and_windows_on_cuda():
    x = R.uniform(-2, 2, 20)
    _, c, _, g = _on_both(lambda t: ember.histogram(t, 5, density=True), x)
    _assert_same(c, g)
    for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"):
        _assert_same(getattr(ember, name)(6), getattr(ember, name)(6, device="cuda"))
        ember.set_default_device("cuda")
        try:
            assert getattr(ember, name)(5).device == ember.device("cuda", 0)
        finally:
            ember.set_default_device(None)


def test_apply_and_map_refuse_cuda_tensors():
    t = ember.ones(3, device="cuda")
    with pytest.raises(TypeError, match="apply_ is only implemented on CPU tensors"):
        t.apply_(lambda v: v)
    with pytest.raises(TypeError, match="map_ is only implemented on CPU tensors"):
        t.map_(t, lambda u, v: u)
