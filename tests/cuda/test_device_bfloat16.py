"""bfloat16 on CUDA (bits in uint16 storage, computed in float32), autocast("cuda") and GradScaler("cuda"): the
same bits as the CPU backend, small shapes for the simulator."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.nn.functional as F

BF16 = np.dtype(ml_dtypes.bfloat16)
_RNG = np.random.default_rng(0)
_A = _RNG.standard_normal((4, 6)).astype(np.float32)


def both(a):
    host = ember.tensor(a).bfloat16()
    return host, host.cuda()


def assert_same(dev, host):
    assert dev.device.type == "cuda" and dev.dtype is host.dtype
    np.testing.assert_array_equal(dev.cpu().float().numpy(), host.float().numpy())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN and inf cast as NumPy's casts warn
def test_storage_holds_the_bits_and_converts_as_the_cpu():
    bits = np.arange(0, 1 << 16, 97, dtype=np.uint16)
    values = bits.view(BF16)
    dev = ember.tensor(values.astype(np.float32)).bfloat16().cuda()
    assert dev._array.buffer.dtype == np.uint16 and dev._array.dtype == BF16
    np.testing.assert_array_equal(dev.cpu().numpy().view(np.uint16)[~np.isnan(values.astype(np.float32))],
                                  bits[~np.isnan(values.astype(np.float32))])
    wide = (_RNG.standard_normal(300) * 10.0 ** _RNG.integers(-30, 30, 300)).astype(np.float32)
    wide = np.concatenate([wide, np.float32([3.4e38, -0.0, math.inf, 2.0 ** -134])])
    narrowed = ember.tensor(wide, device="cuda").bfloat16()
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(narrowed.cpu().numpy().view(np.uint16), wide.astype(BF16).view(np.uint16))
    for target in (ember.float32, ember.float16, ember.float64, ember.int64, ember.bool):
        host, dev = both(_A * 5)
        assert_same(dev.to(target), host.to(target))


def test_ops_give_the_cpus_bits():
    host, dev = both(_A)
    other_host, other_dev = both(_A.T[:, :4].copy())
    assert_same(dev + 1.7, host + 1.7)
    assert_same(dev * dev - dev / 3, host * host - host / 3)
    assert_same(dev.exp(), host.exp())
    assert_same(dev.T.contiguous(), host.T.contiguous())
    assert_same(dev @ other_dev, host @ other_host)
    assert_same(dev.sum(1), host.sum(1))
    assert_same(dev.amax(0), host.amax(0))
    assert_same(dev.sort(1).values, host.sort(1).values)
    assert_same(dev.cumsum(1), host.cumsum(1))
    assert_same(dev.softmax(1), host.softmax(1))
    assert_same(dev[[0, 2]], host[[0, 2]])
    assert_same(ember.where(dev > 0, dev, 0.3), ember.where(host > 0, host, 0.3))
    assert_same(ember.cat([dev, dev]), ember.cat([host, host]))
    d, h = dev.clone(), host.clone()
    d[[1, 3]] = 1.1
    h[[1, 3]] = 1.1
    assert_same(d, h)
    index = ember.tensor([0, 1, 1, 5])
    assert_same(ember.zeros(6, dtype=ember.bfloat16, device="cuda").scatter_add(0, index.cuda(), dev[0, :4]),
                ember.zeros(6, dtype=ember.bfloat16).scatter_add(0, index, host[0, :4]))
    assert ember.rand(64, dtype=ember.bfloat16, device="cuda").float().max().item() < 1
    assert repr(dev[:1, :2]).endswith("device='cuda:0', dtype=ember.bfloat16)")


def test_a_bfloat16_linear_layer_trains_as_on_the_cpu():
    layer = ember.nn.Linear(6, 3).bfloat16()
    layer_dev = ember.nn.Linear(6, 3).bfloat16().cuda()
    layer_dev.load_state_dict({k: v.cuda() for k, v in layer.state_dict().items()})
    host, dev = both(_A)
    for model, x in ((layer, host), (layer_dev, dev)):
        F.mse_loss(model(x), ember.zeros(4, 3, dtype=ember.bfloat16, device=x.device)).backward()
    assert_same(layer_dev.weight.grad, layer.weight.grad)
    assert_same(layer_dev.bias.grad, layer.bias.grad)


def test_cuda_autocast_policy():
    a, b = ember.rand(4, 4, device="cuda"), ember.rand(4, 4, device="cuda")
    with ember.autocast("cuda"):
        assert ember.is_autocast_enabled("cuda") and not ember.is_autocast_enabled("cpu")
        assert (a @ b).dtype is ember.float16 and F.linear(a, b).dtype is ember.float16
        assert ember.mv(a, b[0]).dtype is ember.float16  # a lower-precision op on CUDA, not on the CPU
        low = a.half()
        for result in (low.exp(), low.softmax(0), low.sum(), F.layer_norm(low, (4,)), low ** 2,
                       F.mse_loss(low, low)):
            assert result.dtype is ember.float32
        assert low.sum(dtype=ember.float16).dtype is ember.float16
        assert ember.addcmul(a, low, low).dtype is ember.float32  # promoted to the widest
        assert ember.cat([low, a]).dtype is ember.float32
        assert (ember.rand(4, 4) @ ember.rand(4, 4)).dtype is ember.float32  # CPU tensors: the CPU's state
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(low.sigmoid(), low.sigmoid())
    with ember.autocast("cuda", dtype=ember.bfloat16):
        assert (a @ b).dtype is ember.bfloat16
    assert ember.cuda.is_bf16_supported()


def test_cuda_grad_scaler_follows_the_cpu_trajectory():
    scalers = {dev: ember.amp.GradScaler(dev, init_scale=8.0, growth_interval=2) for dev in ("cpu", "cuda")}
    params = {dev: ember.nn.Parameter(ember.ones(3, device=dev)) for dev in ("cpu", "cuda")}
    opts = {dev: ember.optim.SGD([params[dev]], lr=0.5) for dev in ("cpu", "cuda")}
    for step in range(5):
        for dev in ("cpu", "cuda"):
            opts[dev].zero_grad()
            scalers[dev].scale((params[dev] * params[dev]).sum()).backward()
            if step == 2:
                with ember.no_grad():
                    params[dev].grad[0] = math.inf
            scalers[dev].step(opts[dev])
            scalers[dev].update()
        assert scalers["cuda"].get_scale() == scalers["cpu"].get_scale()
        np.testing.assert_array_equal(params["cuda"].detach().cpu().numpy(), params["cpu"].detach().numpy())
