"""SyncBatchNorm on 2 ranks with half batches against BatchNorm on the full batch (outputs, gradients, running
statistics), alone and under DistributedDataParallel; eval mode and conversion in one process."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn

pytest.importorskip("mpi4py")
from test_ddp import WORLD, run_on_ranks  # noqa: E402  (the shared 2-rank launcher)

_RNG = np.random.default_rng(3)
X = _RNG.standard_normal((8, 3, 4, 4)).astype(np.float32) * 2 + 1
W = _RNG.standard_normal((8, 3, 4, 4)).astype(np.float32)  # fixed weights of the loss sum(out * W)
X1 = _RNG.standard_normal((8, 5)).astype(np.float32)
Y1 = _RNG.standard_normal((8, 2)).astype(np.float32)


def _bn(cls, momentum):
    ember.manual_seed(0)
    m = cls(3, momentum=momentum)
    with ember.no_grad():
        m.weight.copy_(ember.tensor([0.5, -1.5, 2.0]))
        m.bias.copy_(ember.tensor([0.1, 0.2, -0.3]))
    return m


def _run_bn(module, x, w, steps: int = 2):
    x = ember.tensor(x, requires_grad=True)
    for _ in range(steps):
        x.grad = None
        module.zero_grad()
        out = module(x)
        (out * ember.tensor(w)).sum().backward()
    return {"out": out.detach().numpy(), "dx": x.grad.numpy(), "dw": module.weight.grad.numpy(),
            "db": module.bias.grad.numpy(), "rm": module.running_mean.numpy().copy(),
            "rv": module.running_var.numpy().copy(), "nbt": int(module.num_batches_tracked.item())}


def _net():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.Tanh(), nn.Linear(4, 2))


def _train(model, x, y, steps: int = 2):
    """Train ``model`` (a net from ``_net``, or DDP around one); its parameters and BatchNorm running_var."""
    net = getattr(model, "module", model)
    opt = ember.optim.SGD(model.parameters(), lr=0.2)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()] + [net[1].running_var.numpy().copy()]


def _half(a, rank):
    per = a.shape[0] // WORLD
    return a[rank * per:(rank + 1) * per]


def _scenarios(rank: int, world: int) -> dict:
    from ember.nn.parallel import DistributedDataParallel as DDP

    out = {m: _run_bn(_bn(nn.SyncBatchNorm, m), _half(X, rank), _half(W, rank)) for m in (0.1, None)}
    model = nn.SyncBatchNorm.convert_sync_batchnorm(_net())
    out["ddp"] = _train(DDP(model), ember.tensor(_half(X1, rank)), ember.tensor(_half(Y1, rank)))
    return out


@pytest.fixture(scope="module")
def ranks() -> list:
    return run_on_ranks(_scenarios)



@pytest.mark.parametrize("momentum", [0.1, None])
def test_half_batches_equal_batchnorm_on_the_full_batch(ranks, momentum):
    ref = _run_bn(_bn(nn.BatchNorm2d, momentum), X, W)
    for rank, got in enumerate(ranks):
        got = got[momentum]
        np.testing.assert_allclose(got["out"], _half(ref["out"], rank), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got["dx"], _half(ref["dx"], rank), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got["rm"], ref["rm"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["rv"], ref["rv"], rtol=1e-5, atol=1e-6)
        assert got["nbt"] == ref["nbt"] == 2
    for key in ("dw", "db"):  # local, as torch's: the ranks' parts sum to the full-batch gradient
        np.testing.assert_allclose(sum(r[momentum][key] for r in ranks), ref[key], rtol=1e-4, atol=1e-4)


def test_converted_model_under_ddp_trains_like_one_process(ranks):
    ref = _train(_net(), ember.tensor(X1), ember.tensor(Y1))
    for r in ranks:
        for a, b in zip(r["ddp"], ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_eval_and_single_process_are_batchnorm():
    x = ember.tensor(X)
    sync, plain = _bn(nn.SyncBatchNorm, 0.1), _bn(nn.BatchNorm2d, 0.1)
    np.testing.assert_allclose(sync(x).detach().numpy(), plain(x).detach().numpy(), rtol=1e-6, atol=1e-6)
    sync.eval(), plain.eval()
    np.testing.assert_allclose(sync(x).detach().numpy(), plain(x).detach().numpy(), rtol=1e-6, atol=1e-6)


def test_convert_sync_batchnorm_shares_parameters_and_buffers():
    net = nn.Sequential(nn.Conv2d(3, 3, 1), nn.Sequential(nn.BatchNorm2d(3)), nn.BatchNorm1d(2).eval())
    bn = net[1][0]
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(net, process_group=None)
    assert isinstance(converted[1][0], nn.SyncBatchNorm) and isinstance(converted[2], nn.SyncBatchNorm)
    assert converted[1][0].weight is bn.weight and converted[1][0].running_mean is bn.running_mean
    assert not converted[2].training and isinstance(converted[0], nn.Conv2d)
    assert list(converted.state_dict()) == list(net.state_dict())


def test_input_checks():
    with pytest.raises(ValueError, match="at least 2D"):
        nn.SyncBatchNorm(3)(ember.ones(3))


def test_matches_torch_in_one_process():
    torch = pytest.importorskip("torch")
    ours = _bn(nn.SyncBatchNorm, 0.1).eval()
    theirs = torch.nn.SyncBatchNorm(3).eval()
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    np.testing.assert_allclose(ours(ember.tensor(X)).detach().numpy(),
                               theirs(torch.tensor(X)).detach().numpy(), rtol=1e-5, atol=1e-6)
