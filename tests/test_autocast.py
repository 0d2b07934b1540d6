"""Autocast: the region API (context manager, decorator, nesting, per-thread state, the deprecated aliases), the
CPU op policy against torch 2.13 (every listed op's output dtype, bfloat16 and float16), values under autocast,
the weight-cast cache, custom_fwd/custom_bwd, and a training step under autocast against torch."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.tensor import autocast_policy

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def name_of(dt) -> str:
    return str(dt).split(".")[-1]


# ------------------------------------------------------------------------------------------------ the region API
def test_regions_nest_and_restore():
    assert not ember.is_autocast_enabled("cpu") and ember.get_autocast_dtype("cpu") is ember.bfloat16
    assert ember.get_autocast_dtype("cuda") is ember.float16 and autocast_policy.ACTIVE == 0
    with ember.autocast("cpu") as region:
        assert region.fast_dtype is ember.bfloat16 and region.device == "cpu"
        assert ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled("cuda")
        assert not ember.is_autocast_enabled()  # no argument: CUDA's, as torch
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert ember.mm(ember.rand(2, 2), ember.rand(2, 2)).dtype is ember.float32
        with ember.autocast("cpu", dtype=ember.float16):
            assert ember.get_autocast_dtype("cpu") is ember.float16
            assert ember.mm(ember.rand(2, 2), ember.rand(2, 2)).dtype is ember.float16
        assert ember.get_autocast_dtype("cpu") is ember.bfloat16
        assert ember.mm(ember.rand(2, 2), ember.rand(2, 2)).dtype is ember.bfloat16
    assert not ember.is_autocast_enabled("cpu") and autocast_policy.ACTIVE == 0


def test_decorator_and_errors():
    @ember.autocast("cpu")
    def product(a, b):
        """Doc kept."""
        return a @ b

    assert product(ember.rand(2, 2), ember.rand(2, 2)).dtype is ember.bfloat16 and product.__doc__ == "Doc kept."
    assert not ember.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="requires a callable"):
        ember.autocast("cpu")(3)
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.autocast(1)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        ember.autocast("xyz")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'meta'"):
        ember.autocast("meta")
    with pytest.warns(UserWarning, match="target dtype is not supported. Disabling autocast"):
        region = ember.autocast("cpu", dtype=ember.float32)
    with region:
        assert not ember.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="must be bool"):
        ember.set_autocast_enabled("cpu", 1)
    assert ember.amp.is_autocast_available("cpu") and ember.amp.is_autocast_available("cuda")
    assert not ember.amp.is_autocast_available("meta")


@pytest.mark.skipif(ember.cuda.is_available(), reason="CUDA present: its region is tested under tests/cuda")
def test_cuda_region_without_cuda_warns_and_is_off():
    with pytest.warns(UserWarning, match="CUDA is not available or torch_xla is imported. Disabling autocast."):
        region = ember.autocast("cuda")
    with region:
        assert not ember.is_autocast_enabled("cuda")


def test_state_functions_and_deprecated_spellings():
    ember.set_autocast_enabled("cpu", True)
    try:
        assert ember.is_autocast_enabled("cpu") and autocast_policy.ACTIVE == 1
        with pytest.warns(DeprecationWarning, match=r"is_autocast_cpu_enabled\(\) is deprecated"):
            assert ember.is_autocast_cpu_enabled()
    finally:
        ember.set_autocast_enabled("cpu", False)
    assert autocast_policy.ACTIVE == 0
    with pytest.warns(DeprecationWarning):
        assert ember.get_autocast_cpu_dtype() is ember.bfloat16
    with pytest.warns(DeprecationWarning):
        assert ember.get_autocast_gpu_dtype() is ember.float16
    ember.set_autocast_dtype("cpu", ember.float16)
    try:
        assert ember.get_autocast_dtype("cpu") is ember.float16
    finally:
        ember.set_autocast_dtype("cpu", ember.bfloat16)
    assert ember.autocast_increment_nesting() == 1 and ember.autocast_decrement_nesting() == 0
    assert ember.is_autocast_cache_enabled()
    with ember.autocast("cpu", cache_enabled=False):
        assert not ember.is_autocast_cache_enabled()
    assert ember.is_autocast_cache_enabled()


def test_deprecated_device_classes_warn_as_torch():
    with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.autocast\(args...\)` is deprecated"):
        region = ember.cpu.amp.autocast()
    assert region.device == "cpu" and region.fast_dtype is ember.bfloat16 and isinstance(region, ember.autocast)
    with region:
        assert ember.is_autocast_enabled("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        region = ember.cuda.amp.autocast()
    assert region.device == "cuda" and region.fast_dtype is ember.float16
    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.custom_fwd\(args...\)` is deprecated"):
        ember.cuda.amp.custom_fwd(lambda ctx, x: x)


def test_the_state_is_per_thread():
    seen = {}
    with ember.autocast("cpu"):
        worker = threading.Thread(target=lambda: seen.update(
            on=ember.is_autocast_enabled("cpu"), dtype=ember.mm(ember.rand(2, 2), ember.rand(2, 2)).dtype))
        worker.start()
        worker.join()
    assert seen == {"on": False, "dtype": ember.float32}


# ------------------------------------------------------------------------------------------------ the CPU policy
def _f(*s):
    return lambda lib: lib.rand(*s)


_N = 4
# name: (function of (lib, make) where make(*shape) gives a floating tensor)
CASES = {
    "mm": lambda lib, g: lib.mm(g(_N, _N), g(_N, _N)), "matmul": lambda lib, g: lib.matmul(g(_N, _N), g(_N, _N)),
    "@": lambda lib, g: g(_N, _N) @ g(_N, _N), "bmm": lambda lib, g: lib.bmm(g(2, _N, _N), g(2, _N, _N)),
    "baddbmm": lambda lib, g: lib.baddbmm(g(2, _N, _N), g(2, _N, _N), g(2, _N, _N)),
    "addmm": lambda lib, g: lib.addmm(g(_N, _N), g(_N, _N), g(_N, _N)),
    "addbmm": lambda lib, g: lib.addbmm(g(_N, _N), g(2, _N, _N), g(2, _N, _N)),
    "addmv": lambda lib, g: lib.addmv(g(_N), g(_N, _N), g(_N)), "addr": lambda lib, g: lib.addr(g(_N, _N), g(_N), g(_N)),
    "mv": lambda lib, g: lib.mv(g(_N, _N), g(_N)), "dot": lambda lib, g: lib.dot(g(_N), g(_N)),
    "vdot": lambda lib, g: lib.vdot(g(_N), g(_N)),
    "einsum": lambda lib, g: lib.einsum("ij,jk->ik", g(_N, _N), g(_N, _N)),
    "tensordot": lambda lib, g: lib.tensordot(g(_N, _N), g(_N, _N), 1),
    "linear": lambda lib, g: lib.nn.functional.linear(g(_N, _N), g(_N, _N), g(_N)),
    "bilinear": lambda lib, g: lib.nn.functional.bilinear(g(2, _N), g(2, _N), g(3, _N, _N)),
    "conv1d": lambda lib, g: lib.nn.functional.conv1d(g(1, 2, 5), g(3, 2, 2)),
    "conv2d": lambda lib, g: lib.nn.functional.conv2d(g(1, 2, 5, 5), g(3, 2, 2, 2)),
    "conv_transpose2d": lambda lib, g: lib.nn.functional.conv_transpose2d(g(1, 2, 5, 5), g(2, 3, 2, 2)),
    "prelu": lambda lib, g: lib.nn.functional.prelu(g(_N, _N), g(1)),
    "multi_dot": lambda lib, g: lib.linalg.multi_dot([g(_N, _N), g(_N, _N)]),
    "vecdot": lambda lib, g: lib.linalg.vecdot(g(_N), g(_N)),
    "lstm_cell": lambda lib, g: lib.nn.LSTMCell(_N, _N).to(g(1).dtype)(g(2, _N))[0],
    "rnn_cell": lambda lib, g: lib.nn.RNNCell(_N, _N).to(g(1).dtype)(g(2, _N)),
    "lstm": lambda lib, g: lib.nn.LSTM(_N, _N).to(g(1).dtype)(g(3, 2, _N))[0],
    "mha": lambda lib, g: lib.nn.MultiheadAttention(_N, 1).to(g(1).dtype)(g(2, 1, _N), g(2, 1, _N), g(2, 1, _N))[0],
    "sdpa": lambda lib, g: lib.nn.functional.scaled_dot_product_attention(g(1, 2, _N), g(1, 2, _N), g(1, 2, _N)),
    "softmax": lambda lib, g: lib.softmax(g(_N, _N), 0), "exp": lambda lib, g: lib.exp(g(_N)),
    "pow": lambda lib, g: g(_N) ** 1.5, "layer_norm": lambda lib, g: lib.nn.functional.layer_norm(g(_N, _N), (_N,)),
    "group_norm": lambda lib, g: lib.nn.functional.group_norm(g(2, 4, 3), 2), "sum": lambda lib, g: lib.sum(g(_N)),
    "prod": lambda lib, g: lib.prod(g(_N)), "cumsum": lambda lib, g: lib.cumsum(g(_N), 0),
    "cdist": lambda lib, g: lib.cdist(g(_N, _N), g(_N, _N)), "trace": lambda lib, g: lib.trace(g(_N, _N)),
    "quantile": lambda lib, g: lib.quantile(g(_N), 0.5),
    "cross_entropy": lambda lib, g: lib.nn.functional.cross_entropy(g(_N, _N), lib.tensor([0, 1, 2, 3])),
    "nll_loss": lambda lib, g: lib.nn.functional.nll_loss(g(_N, _N), lib.tensor([0, 1, 2, 3])),
    "mse_loss": lambda lib, g: lib.nn.functional.mse_loss(g(_N), g(_N)),
    "l1_loss": lambda lib, g: lib.nn.functional.l1_loss(g(_N), g(_N)),
    "huber_loss": lambda lib, g: lib.nn.functional.huber_loss(g(_N), g(_N)),
    "bce": lambda lib, g: lib.nn.functional.binary_cross_entropy(g(_N), g(_N)),
    "bce_logits": lambda lib, g: lib.nn.functional.binary_cross_entropy_with_logits(g(_N), g(_N)),
    "kl_div": lambda lib, g: lib.nn.functional.kl_div(g(_N), g(_N)),
    "margin_ranking": lambda lib, g: lib.nn.functional.margin_ranking_loss(g(_N), g(_N), g(_N)),
    "triplet": lambda lib, g: lib.nn.functional.triplet_margin_loss(g(2, _N), g(2, _N), g(2, _N)),
    "ctc": lambda lib, g: lib.nn.functional.ctc_loss(g(5, 1, 3).log_softmax(2), lib.tensor([[1, 2]]), [5], [2]),
    "avg_pool3d": lambda lib, g: lib.nn.functional.avg_pool3d(g(1, 1, 4, 4, 4), 2),
    "avg_pool2d": lambda lib, g: lib.nn.functional.avg_pool2d(g(1, 2, 4, 4), 2),
    "pad_reflect": lambda lib, g: lib.nn.functional.pad(g(1, 2, 4), (1, 1), mode="reflect"),
    "pad_constant": lambda lib, g: lib.nn.functional.pad(g(1, 2, 4), (1, 1)),
    "grid_sample": lambda lib, g: lib.nn.functional.grid_sample(g(1, 1, 4, 4), g(1, 2, 2, 2), align_corners=False),
    "interpolate": lambda lib, g: lib.nn.functional.interpolate(g(1, 2, 4, 4), scale_factor=2),
    "cat": lambda lib, g: lib.cat([g(_N), g(_N)]), "stack": lambda lib, g: lib.stack([g(_N), g(_N)]),
    "sigmoid": lambda lib, g: lib.sigmoid(g(_N)), "relu": lambda lib, g: lib.nn.functional.relu(g(_N)),
}
MIXED = {
    "cat": lambda lib, lo: lib.cat([lib.rand(_N), lib.rand(_N).to(lo)]),
    "stack": lambda lib, lo: lib.stack([lib.rand(_N).to(lo), lib.rand(_N)]),
    "cat-f64": lambda lib, lo: lib.cat([lib.rand(_N).to(lo), lib.rand(_N, dtype=lib.float64)]),
    "cat-int": lambda lib, lo: lib.cat([lib.rand(_N).to(lo), lib.ones(_N, dtype=lib.int64)]),
    "add": lambda lib, lo: lib.rand(_N) + lib.rand(_N).to(lo),
    "addcmul": lambda lib, lo: lib.addcmul(lib.rand(_N), lib.rand(_N).to(lo), lib.rand(_N).to(lo)),
    "where": lambda lib, lo: lib.where(lib.rand(_N) > 0.5, lib.rand(_N), lib.rand(_N).to(lo)),
    "mm-f64": lambda lib, lo: lib.mm(lib.rand(2, 2, dtype=lib.float64), lib.rand(2, 2, dtype=lib.float64)),
    "mm-int": lambda lib, lo: lib.mm(lib.ones(2, 2, dtype=lib.int64), lib.ones(2, 2, dtype=lib.int64)),
    "mm-mixed": lambda lib, lo: lib.mm(lib.rand(2, 2), lib.rand(2, 2).to(lo)),
    "softmax-dtype": lambda lib, lo: lib.softmax(lib.rand(_N).to(lo), 0, dtype=lib.float64),
    "prod-dtype": lambda lib, lo: lib.prod(lib.rand(_N).to(lo), dtype=getattr(lib, name_of(lo))),
}


def _dtype_under_autocast(lib, fn, low: str, make) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autocast("cpu", dtype=getattr(lib, low)):
            return name_of(fn(lib, make).dtype)


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("inputs", ["float32", "low", "float64"])
def test_cpu_policy_gives_torchs_dtypes(case, low, inputs):
    fn = CASES[case]
    dtype = {"float32": "float32", "low": low, "float64": "float64"}[inputs]

    def make(lib):
        return lambda *shape: lib.rand(*shape, dtype=lib.float32).to(getattr(lib, dtype))
    if case == "lstm" and low == "float16":
        pytest.skip("torch's CPU LSTM has no float16 kernel under autocast")
    try:
        expected = _dtype_under_autocast(torch, fn, low, make(torch))
    except (RuntimeError, NotImplementedError):
        pytest.skip("torch has no kernel for it")
    assert _dtype_under_autocast(ember, fn, low, make(ember)) == expected


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", sorted(MIXED))
def test_cpu_policy_with_mixed_inputs_gives_torchs_dtypes(case, low):
    fn = MIXED[case]

    def run(lib):
        with lib.autocast("cpu", dtype=getattr(lib, low)):
            try:
                return name_of(fn(lib, getattr(lib, low)).dtype)
            except RuntimeError:
                return "error"
    assert run(ember) == run(torch)


def test_values_under_autocast_are_the_lower_precision_ops():
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((5, 7), (7, 3), (5, 3)))
    with ember.autocast("cpu"):
        mine = ember.addmm(ember.tensor(c), ember.tensor(a), ember.tensor(b))
        joined = ember.cat([ember.tensor(a[:, :3]).bfloat16(), ember.tensor(c)])
    with torch.autocast("cpu"):
        theirs = torch.addmm(torch.tensor(c), torch.tensor(a), torch.tensor(b))
        joined_ref = torch.cat([torch.tensor(a[:, :3]).bfloat16(), torch.tensor(c)])
    np.testing.assert_array_equal(mine.float().numpy(), theirs.float().numpy())
    np.testing.assert_array_equal(joined.numpy(), joined_ref.numpy())


def test_ops_with_out_or_in_place_are_not_cast():
    with ember.autocast("cpu"):
        x = ember.rand(2, 2)
        assert x.addmm_(ember.rand(2, 2), ember.rand(2, 2)).dtype is ember.float32
        assert ember.softmax(ember.rand(3).bfloat16(), 0, dtype=ember.float32).dtype is ember.float32


# ------------------------------------------------------------------------------------------------ the weight cache
def test_weight_casts_are_cached_within_the_outermost_region():
    w = ember.rand(4, 4, requires_grad=True)
    with ember.autocast("cpu"):
        first = ember.mm(ember.rand(2, 4), w)
        ember.mm(ember.rand(2, 4), w)
        assert len(autocast_policy.state.cache) == 1
        with ember.autocast("cpu"):
            ember.mm(ember.rand(2, 4), w)
        assert len(autocast_policy.state.cache) == 1  # an inner region's exit keeps it
        first.float().sum().backward()
    assert len(autocast_policy.state.cache) == 0
    assert w.grad.dtype is ember.float32 and w.grad.shape == (4, 4)
    with ember.autocast("cpu", cache_enabled=False):
        ember.mm(ember.rand(2, 4), w)
        assert len(autocast_policy.state.cache) == 0


# ------------------------------------------------------------------------------------------------ custom Functions
def _functions(lib, seen):
    class CastToFloat(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", cast_inputs=lib.float32)
        def forward(ctx, a, b):
            seen.append(("fwd", name_of(a.dtype), lib.is_autocast_enabled("cpu")))
            return a @ b

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen.append(("bwd", name_of(g.dtype), lib.is_autocast_enabled("cpu")))
            return g, g

    class Follow(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu")
        def forward(ctx, a, b):
            seen.append(("fwd2", name_of((a @ b).dtype), lib.is_autocast_enabled("cpu")))
            return a @ b

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen.append(("bwd2", name_of((g @ g).dtype), lib.is_autocast_enabled("cpu")))
            return g, g
    return CastToFloat, Follow


def test_custom_fwd_and_custom_bwd_as_torch():
    logs = {}
    for lib in (ember, torch):
        seen = logs[lib.__name__] = []
        cast_to_float, follow = _functions(lib, seen)
        a = lib.rand(2, 2).bfloat16().requires_grad_()
        with lib.autocast("cpu"):
            out = cast_to_float.apply(a, lib.rand(2, 2, dtype=lib.bfloat16))
        seen.append(("out", name_of(out.dtype), None))
        out.sum().backward()
        seen.append(("outside", name_of(cast_to_float.apply(a, lib.rand(2, 2).bfloat16()).dtype), None))
        x = lib.rand(2, 2, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.float16):
            out = follow.apply(x, lib.rand(2, 2))
        out.float().sum().backward()
    assert logs["ember"] == logs["torch"]
    with pytest.raises(TypeError):
        ember.amp.custom_fwd(lambda ctx: ctx)
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.amp.custom_fwd(device_type=3)


# ------------------------------------------------------------------------------------------------ training
def test_an_autocast_training_step_matches_torch():
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    model = ember.nn.Sequential(ember.nn.Linear(16, 32), ember.nn.ReLU(), ember.nn.Linear(32, 4))
    model.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    rng = np.random.default_rng(1)
    x, target = rng.standard_normal((8, 16)).astype(np.float32), rng.integers(0, 4, 8)
    opt, opt_ref = ember.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(3):
        with ember.autocast("cpu"):
            out = model(ember.tensor(x))
            loss = F.cross_entropy(out, ember.tensor(target))
        with torch.autocast("cpu"):
            out_ref = ref(torch.tensor(x))
            loss_ref = TF.cross_entropy(out_ref, torch.tensor(target))
        assert out.dtype is ember.bfloat16 and loss.dtype is ember.float32
        np.testing.assert_array_equal(out.float().detach().numpy(), out_ref.float().detach().numpy())
        np.testing.assert_allclose(loss.item(), loss_ref.item(), rtol=1e-6)
        opt.zero_grad(), opt_ref.zero_grad()
        loss.backward(), loss_ref.backward()
        for p, p_ref in zip(model.parameters(), ref.parameters()):
            assert p.grad.dtype is ember.float32
            np.testing.assert_allclose(p.grad.numpy(), p_ref.grad.numpy(), rtol=2e-2, atol=2e-3)
        opt.step(), opt_ref.step()
