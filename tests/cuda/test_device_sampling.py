"""Sampling CUDA tensors on the device: seeding and replay, distributions, layouts, generators, dropout, and that
no sample passes through the host (run under NUMBA_ENABLE_CUDASIM=1 with tiny sizes)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():
    pytest.skip("CUDA (or the simulator) is not available", allow_module_level=True)

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

CUDA0 = ember.device("cuda", 0)
N = 2000

SAMPLERS = {
    "rand": lambda: ember.rand(3, 5, device="cuda"),
    "randn": lambda: ember.randn(17, device="cuda"),
    "randint": lambda: ember.randint(-4, 9, (13,), device="cuda"),
    "normal_numbers": lambda: ember.normal(1.0, 2.0, (9,), device="cuda"),
    "normal_tensors": lambda: ember.normal(ember.zeros(9, device="cuda"), ember.ones(9, device="cuda")),
    "bernoulli": lambda: ember.bernoulli(ember.full((20,), 0.5, device="cuda")),
    "rand_like": lambda: ember.rand_like(ember.ones(2, 4, device="cuda")),
    "randn_like": lambda: ember.randn_like(ember.ones(2, 4, device="cuda")),
    "randint_like": lambda: ember.randint_like(ember.ones(12, device="cuda"), 100),
    "uniform_": lambda: ember.empty(11, device="cuda").uniform_(-1, 1),
    "normal_": lambda: ember.empty(11, device="cuda").normal_(),
    "bernoulli_": lambda: ember.empty(24, device="cuda").bernoulli_(0.5),
    "bernoulli_tensor_p": lambda: ember.empty(24, device="cuda").bernoulli_(ember.full((24,), 0.5, device="cuda")),
    "random_": lambda: ember.empty(11, device="cuda").random_(0, 1000),
    "exponential_": lambda: ember.empty(11, device="cuda").exponential_(),
    "geometric_": lambda: ember.empty(11, device="cuda").geometric_(0.2),
    "log_normal_": lambda: ember.empty(11, device="cuda").log_normal_(),
    "cauchy_": lambda: ember.empty(11, device="cuda").cauchy_(),
    "dropout": lambda: F.dropout(ember.ones(40, device="cuda"), 0.5),
    "dropout2d": lambda: F.dropout2d(ember.ones(4, 6, 2, 2, device="cuda"), 0.5),
}


def _host(t) -> np.ndarray:
    assert t.device == CUDA0
    return t.cpu().numpy()


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("seed_all", [ember.manual_seed, ember.cuda.manual_seed])
def test_a_seed_replays_and_consecutive_calls_differ(name, seed_all):
    sample = SAMPLERS[name]
    seed_all(1234)
    first, second = _host(sample()), _host(sample())
    seed_all(1234)
    np.testing.assert_array_equal(_host(sample()), first)
    np.testing.assert_array_equal(_host(sample()), second)
    assert not np.array_equal(first, second)


def test_rng_state_replays_device_draws_and_fork_rng_restores_them():
    ember.manual_seed(5)
    ember.randn(4, device="cuda")
    state = ember.cuda.get_rng_state()
    expected = _host(ember.rand(6, device="cuda"))
    ember.cuda.set_rng_state(state)
    np.testing.assert_array_equal(_host(ember.rand(6, device="cuda")), expected)
    ember.cuda.set_rng_state(state)
    with ember.random.fork_rng():
        ember.rand(6, device="cuda")
        ember.rand(2)
    np.testing.assert_array_equal(_host(ember.rand(6, device="cuda")), expected)


def test_cuda_and_cpu_streams_are_separate():
    ember.manual_seed(3)
    cpu, dev = ember.randn(8).numpy(), _host(ember.randn(8, device="cuda"))
    assert not np.array_equal(cpu, dev)  # as in torch: one seed, different numbers per device
    ember.manual_seed(3)
    ember.cuda.manual_seed(99)  # reseeds CUDA only
    np.testing.assert_array_equal(ember.randn(8).numpy(), cpu)
    assert not np.array_equal(_host(ember.randn(8, device="cuda")), dev)
    ember.manual_seed(3)
    ember.rand(100)  # CPU draws do not move the CUDA stream
    np.testing.assert_array_equal(_host(ember.randn(8, device="cuda")), dev)


def _moments(x: np.ndarray) -> tuple[float, float]:
    x = x.astype(np.float64)
    return x.mean(), x.std()


def test_uniform_samplers_range_and_moments():
    x = _host(ember.rand(N, device="cuda"))
    assert x.dtype == np.float32 and x.min() >= 0 and x.max() < 1
    mean, std = _moments(x)
    assert abs(mean - 0.5) < 0.03 and abs(std - 12 ** -0.5) < 0.02
    y = _host(ember.empty(N, dtype=ember.float64, device="cuda").uniform_(-3, 5))
    assert y.dtype == np.float64 and y.min() >= -3 and y.max() < 5 and abs(y.mean() - 1) < 0.25


def test_normal_samplers_moments():
    mean, std = _moments(_host(ember.randn(N, device="cuda")))
    assert abs(mean) < 0.08 and abs(std - 1) < 0.06
    mean, std = _moments(_host(ember.normal(3.0, 0.5, (N,), device="cuda")))
    assert abs(mean - 3) < 0.04 and abs(std - 0.5) < 0.04
    means = ember.tensor([-10.0, 10.0], device="cuda").reshape(2, 1).expand(2, N // 2)
    x = _host(ember.normal(means, ember.full((N // 2,), 0.1, device="cuda")))
    assert x.shape == (2, N // 2)
    np.testing.assert_allclose(x.mean(axis=1), [-10, 10], atol=0.02)
    mean, std = _moments(_host(ember.empty(N, device="cuda").normal_(-2, 3)))
    assert abs(mean + 2) < 0.25 and abs(std - 3) < 0.2


def test_integer_samplers_cover_their_range_uniformly():
    x = _host(ember.randint(-3, 5, (N,), device="cuda"))
    assert x.dtype == np.int64 and set(np.unique(x)) == set(range(-3, 5))
    assert np.bincount(x + 3).min() > N / 8 * 0.75
    y = _host(ember.empty(N, dtype=ember.int32, device="cuda").random_(10))
    assert y.dtype == np.int32 and y.min() == 0 and y.max() == 9
    wide = _host(ember.empty(64, dtype=ember.int64, device="cuda").random_())
    assert wide.min() >= 0 and wide.max() > 2 ** 60  # [0, 2**63 - 1]: two words per value
    full = _host(ember.empty(64, dtype=ember.int64, device="cuda").random_(-2 ** 63, None))
    assert (full < 0).any() and (full > 0).any()
    flags = _host(ember.empty(200, dtype=ember.bool, device="cuda").random_())
    assert flags.dtype == np.bool_ and 0.35 < flags.mean() < 0.65


def test_bernoulli_fractions():
    x = _host(ember.empty(N, device="cuda").bernoulli_(0.3))
    assert set(np.unique(x)) <= {0.0, 1.0} and abs(x.mean() - 0.3) < 0.04
    p = ember.tensor([0.0, 1.0, 0.5, 0.1], device="cuda")
    y = _host(ember.bernoulli(p.expand(N // 4, 4).contiguous()))
    assert (y[:, 0] == 0).all() and (y[:, 1] == 1).all()
    assert abs(y[:, 2].mean() - 0.5) < 0.08 and abs(y[:, 3].mean() - 0.1) < 0.05
    z = _host(ember.zeros(N // 4, 4, dtype=ember.uint8, device="cuda").bernoulli_(p))  # p expands to the target
    assert z.dtype == np.uint8 and (z[:, 0] == 0).all() and (z[:, 1] == 1).all()


def test_derived_distributions():
    e = _host(ember.empty(N, device="cuda").exponential_(2.0))
    assert e.min() >= 0 and np.isfinite(e).all() and abs(e.mean() - 0.5) < 0.04
    g = _host(ember.empty(N, device="cuda").geometric_(0.25))
    assert g.min() >= 1 and np.all(g == np.round(g)) and abs(g.mean() - 4) < 0.35
    gi = _host(ember.empty(200, dtype=ember.int64, device="cuda").geometric_(0.5))
    assert gi.dtype == np.int64 and gi.min() == 1
    ln = _host(ember.empty(N, device="cuda").log_normal_(1.0, 0.5))
    assert ln.min() > 0 and abs(np.log(ln).mean() - 1) < 0.04 and abs(np.log(ln).std() - 0.5) < 0.04
    c = _host(ember.empty(N, device="cuda").cauchy_(2.0, 0.5))
    assert abs(np.median(c) - 2) < 0.1 and abs(np.mean(np.abs(c - 2) < 0.5) - 0.5) < 0.05


@pytest.mark.parametrize("make,dtype,shape", [
    (lambda: ember.rand(2, 3, device="cuda", dtype=ember.float64), ember.float64, (2, 3)),
    (lambda: ember.randn((4,), device="cuda"), ember.float32, (4,)),
    (lambda: ember.randint(5, (2, 2), device="cuda"), ember.int64, (2, 2)),
    (lambda: ember.randint(0, 2, (3,), device="cuda", dtype=ember.bool), ember.bool, (3,)),
    (lambda: ember.randint_like(ember.ones(3, dtype=ember.int32, device="cuda"), 7), ember.int32, (3,)),
    (lambda: ember.rand_like(ember.ones(2, 2), device="cuda"), ember.float32, (2, 2)),
    (lambda: ember.normal(ember.zeros(2, 1, device="cuda", dtype=ember.float64), ember.ones(3, device="cuda")),
     ember.float64, (2, 3)),
    (lambda: ember.bernoulli(ember.rand(5, device="cuda")), ember.float32, (5,)),
    (lambda: ember.randperm(6, device="cuda"), ember.int64, (6,)),
    (lambda: ember.multinomial(ember.ones(2, 5, device="cuda"), 3), ember.int64, (2, 3)),
])
def test_results_have_the_requested_dtype_shape_and_device(make, dtype, shape):
    t = make()
    assert t.device == CUDA0 and t.dtype == dtype and tuple(t.shape) == shape


def test_requires_grad_and_empty_results():
    t = ember.randn(3, device="cuda", requires_grad=True)
    assert t.requires_grad and t.is_leaf
    assert tuple(ember.rand(0, 4, device="cuda").shape) == (0, 4)


def test_in_place_samplers_write_through_strided_views():
    base = ember.zeros(6, 8, device="cuda")
    view = base.t()[1:7:2]  # non-contiguous: a transposed, stepped slice
    before = base._version.value
    view.uniform_(2, 3)
    host = _host(base)
    written = host.T[1:7:2]
    assert written.min() >= 2 and written.max() < 3
    assert np.count_nonzero(host) == written.size and base._version.value > before
    ints = ember.zeros(4, 5, dtype=ember.int32, device="cuda")
    ints[:, 1:4].random_(1, 4)
    h = _host(ints)
    assert (h[:, [0, 4]] == 0).all() and h[:, 1:4].min() >= 1 and h[:, 1:4].max() <= 3


def test_generator_device_types():
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator but found 'cpu'"):
        ember.rand(3, device="cuda", generator=ember.Generator())
    gen = ember.Generator("cuda")
    assert isinstance(gen, ember.Generator) and gen.device == CUDA0
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'cuda'"):
        ember.rand(3, generator=gen)
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type"):
        ember.randperm(3, device="cuda", generator=gen)  # randperm samples on the host


def test_a_cuda_generator_is_its_own_stream():
    gen = ember.Generator("cuda").manual_seed(7)
    assert gen.initial_seed() == 7
    ember.cuda.manual_seed(7)
    state = gen.get_state()
    first = _host(ember.rand(5, device="cuda", generator=gen))
    ember.empty(5, device="cuda").normal_(generator=gen)
    # the default generator, seeded alike, was not advanced by gen's draws: it starts where gen started
    np.testing.assert_array_equal(_host(ember.rand(5, device="cuda")), first)
    gen.set_state(state)
    np.testing.assert_array_equal(_host(ember.rand(5, device="cuda", generator=gen)), first)


def test_dropout_masks_fraction_scaling_and_gradient():
    ember.manual_seed(0)
    x = ember.ones(N, device="cuda", requires_grad=True)
    y = F.dropout(x, 0.25)
    out = _host(y.detach())
    kept = out != 0
    assert abs(kept.mean() - 0.75) < 0.03
    np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(_host(x.grad), np.where(kept, 1 / 0.75, 0.0), rtol=1e-6)
    ember.manual_seed(0)
    np.testing.assert_array_equal(_host(F.dropout(ember.ones(N, device="cuda"), 0.25)), out)


def test_channel_and_alpha_dropout_on_the_device():
    z = _host(F.dropout2d(ember.ones(8, 25, 2, 2, device="cuda"), 0.4))
    per_channel = z.reshape(200, 4)
    assert np.all(per_channel == per_channel[:, :1])  # whole channels kept or dropped
    assert abs((per_channel[:, 0] == 0).mean() - 0.4) < 0.1
    np.testing.assert_allclose(per_channel[per_channel[:, 0] != 0], 1 / 0.6, rtol=1e-6)
    a = _host(F.alpha_dropout(ember.zeros(N, device="cuda"), 0.5, training=True))
    assert len(np.unique(a)) == 2
    assert _host(F.dropout(ember.ones(10, device="cuda"), 1.0)).max() == 0


class _NoHostSampling:
    """Stands in for the CPU generator's NumPy stream: any use of it fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"a CUDA sample used the host generator ({name})")


@pytest.fixture
def no_host_path(monkeypatch):
    """Fail on any draw from the CPU generator and on any host-to-device copy bigger than a scalar constant."""
    monkeypatch.setattr(ember.default_generator, "_np", _NoHostSampling())
    real_from_numpy, real_to_device = DeviceStorage.from_numpy.__func__, cuda.to_device

    def from_numpy(cls, array):
        assert np.size(array) <= 1, f"host array of shape {np.shape(array)} copied to the device"
        return real_from_numpy(cls, array)

    def to_device(array, *args, **kwargs):
        assert np.size(array) <= 1, f"host array of shape {np.shape(array)} copied to the device"
        return real_to_device(array, *args, **kwargs)

    monkeypatch.setattr(DeviceStorage, "from_numpy", classmethod(from_numpy))
    monkeypatch.setattr(cuda, "to_device", to_device)


@pytest.mark.parametrize("name", sorted(set(SAMPLERS) - {"normal_tensors", "bernoulli", "bernoulli_tensor_p"}))
def test_device_samples_never_take_a_host_path(name, no_host_path):
    assert SAMPLERS[name]().device == CUDA0


def test_tensor_parameters_stay_on_the_device(no_host_path):
    ones = ember.ones(40, device="cuda")  # made before: ember.ones is not under test
    half = ones * 0.5
    assert ember.normal(ones * 0, ones).device == CUDA0
    assert ember.bernoulli(half).device == CUDA0
    assert ember.empty(40, device="cuda").bernoulli_(half).device == CUDA0


def test_seeding_imports_no_numba_cuda():
    """``ember.manual_seed``/``fork_rng`` also seed/restore the CUDA generators, without loading numba-cuda."""
    code = textwrap.dedent("""
        import json, sys
        sys.modules["numba.cuda"] = None  # importing it would raise
        import ember
        ember.manual_seed(11)
        ember.seed()
        with ember.random.fork_rng():
            ember.rand(3)
        from ember.cuda.random import generator_state
        ember.manual_seed(12)
        print(json.dumps({"seed": generator_state(0).seed,
                          "loaded": [m for m in sys.modules if m.startswith(("numba.cuda", "ember.kernels.cuda"))
                                     and sys.modules[m] is not None]}))
    """)
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out == {"seed": 12, "loaded": []}
