"""CUDA tensors through the public API: moving, creating, modules and optimizers, and the errors torch gives."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn

CUDA0 = ember.device("cuda", 0)


def test_to_cuda_and_back_keeps_values_and_reports_the_device():
    host = ember.arange(12.0).reshape(3, 4)
    dev = host.to("cuda")
    assert dev.device == CUDA0 and dev.is_cuda and not dev.is_cpu and dev.get_device() == 0
    assert host.cuda().device == CUDA0 and dev.cuda() is dev and dev.to("cuda:0") is dev
    back = dev.cpu()
    assert back.device == ember.device("cpu") and back.get_device() == -1
    np.testing.assert_array_equal(back.numpy(), host.numpy())
    assert repr(dev).endswith("device='cuda:0')")


def test_views_share_the_device_buffer():
    x = ember.zeros(3, 4, device="cuda")
    x.t()[1, 2] = 5.0  # element (2, 1) of x, written through a transposed view
    x[:, 0] += 1
    expected = np.zeros((3, 4), np.float32)
    expected[2, 1] = 5.0
    expected[:, 0] += 1
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    assert x.t().stride() == (1, 4) and x[1:].storage_offset() == 4


@pytest.mark.parametrize("make", [
    lambda: ember.zeros(2, 3, device="cuda"), lambda: ember.ones(2, 3, device="cuda"),
    lambda: ember.full((2, 3), 7.0, device="cuda"), lambda: ember.arange(6, device="cuda"),
    lambda: ember.linspace(0, 1, 5, device="cuda"), lambda: ember.eye(3, device="cuda"),
    lambda: ember.randn(2, 3, device="cuda"), lambda: ember.randint(0, 5, (4,), device="cuda"),
    lambda: ember.tensor([1.0, 2.0], device="cuda"), lambda: ember.zeros_like(ember.ones(2, device="cuda")),
    lambda: ember.ones(2, device="cuda").new_zeros(3), lambda: ember.rand_like(ember.ones(2, device="cuda")),
])
def test_creation_functions_place_on_the_device(make):
    assert make().device == CUDA0


def test_gradients_flow_back_across_devices():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x.cuda() * x.cuda()).sum().backward()
    assert x.grad.device == ember.device("cpu")
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_module_to_cuda_keeps_parameters_and_the_optimizer_state_follows():
    ember.manual_seed(0)
    model = nn.Linear(4, 2)
    weight = model.weight
    optimizer = ember.optim.Adam(model.parameters(), lr=0.1)
    assert model.to("cuda") is model and model.weight is weight and weight.device == CUDA0
    loss = model(ember.randn(3, 4, device="cuda")).square().mean()
    loss.backward()
    assert weight.grad.device == CUDA0
    before = weight.detach().cpu().numpy().copy()
    optimizer.step()
    assert optimizer.state[weight]["exp_avg"].device == CUDA0
    assert not np.array_equal(weight.detach().cpu().numpy(), before)


def test_mixing_devices_is_torchs_runtime_error():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least two "
                                           "devices, cuda:0 and cpu!"):
        ember.ones(3, device="cuda") + ember.ones(3)
    # a 0-d CPU tensor and a Python number may meet a CUDA tensor, as in torch
    out = ember.ones(3, device="cuda") * ember.tensor(2.0) + 1
    np.testing.assert_array_equal(out.cpu().numpy(), [3.0, 3.0, 3.0])


def test_host_conversion_and_missing_kernels_are_clear_errors():
    x = ember.randn(3, device="cuda")
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        x.numpy()
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        np.asarray(x)
    assert x.half().dtype == ember.float16 and x.half().device == x.device  # float16 lives on the device too
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.zeros(2, device="cuda:7")


def test_checkpoint_replays_cuda_dropout_masks():
    """Recomputing a checkpointed segment in backward draws the forward's dropout mask again on the device."""
    from ember.utils.checkpoint import checkpoint

    def segment(x):
        return ember.nn.functional.dropout(x * 2.0, p=0.5, training=True)

    grads = []
    for wrap in (lambda x: segment(x), lambda x: checkpoint(segment, x, use_reentrant=False)):
        ember.manual_seed(11)
        x = ember.ones(32, device="cuda", requires_grad=True)
        out = wrap(x)
        out.sum().backward()
        grads.append((out.detach().cpu().numpy(), x.grad.cpu().numpy()))
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    np.testing.assert_array_equal(grads[0][1], grads[1][1])
    assert 0 < (grads[0][1] == 0).sum() < 32


def test_module_moved_after_a_backward_keeps_accumulating_on_the_new_device():
    """Leaves cache their gradient sink: moving the parameters (``Module.to``) must move what it expects too."""
    model = ember.nn.Linear(2, 1)
    model(ember.ones(1, 2)).sum().backward()
    model.cuda()
    model(ember.ones(1, 2, device="cuda")).sum().backward()
    assert model.weight.grad.is_cuda
    np.testing.assert_array_equal(model.weight.grad.cpu().numpy(), [[2.0, 2.0]])


def test_packed_sequences_on_cuda_match_the_cpu():
    from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    ember.manual_seed(0)
    lstm = ember.nn.LSTM(2, 3, batch_first=True)
    x = ember.randn(3, 4, 2)
    results = []
    for device in ("cpu", "cuda"):
        lstm.to(device).zero_grad()
        xd = x.detach().to(device).requires_grad_()
        packed = pack_padded_sequence(xd, ember.tensor([2, 4, 1]), batch_first=True, enforce_sorted=False)
        assert packed.data.device.type == device and packed.sorted_indices.device.type == device
        assert packed.batch_sizes.device.type == "cpu"
        out, (h, _) = lstm(packed)
        padded, lengths = pad_packed_sequence(out, batch_first=True)
        assert padded.device.type == device and lengths.tolist() == [2, 4, 1]
        padded.sum().backward()
        results.append([t.detach().cpu().numpy() for t in (padded, h, xd.grad, lstm.weight_hh_l0.grad)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    moved = pack_padded_sequence(x, ember.tensor([2, 4, 1]), batch_first=True, enforce_sorted=False).cuda()
    assert moved.data.is_cuda and moved.sorted_indices.is_cuda and not moved.batch_sizes.is_cuda
    assert not moved.cpu().data.is_cuda and not moved.cpu().sorted_indices.is_cuda


def test_closeness_on_cuda():
    a = ember.tensor([1.0, float("nan"), 3.0], device="cuda")
    b = ember.tensor([1.0 + 1e-7, float("nan"), 3.1], device="cuda")
    close = ember.isclose(a, b, equal_nan=True)
    assert close.is_cuda and close.tolist() == [True, True, False]
    assert not ember.allclose(a, b) and ember.allclose(a[:2], b[:2], equal_nan=True)
    assert ember.equal(a[::2], a[::2].clone()) and not ember.equal(a, a)


def test_gradcheck_takes_cuda_inputs():
    from ember.autograd import gradcheck, gradgradcheck

    x = ember.randn(3, 2, dtype=ember.float64, device="cuda", requires_grad=True)
    w = ember.randn(2, 4, dtype=ember.float64, device="cuda", requires_grad=True)
    assert gradcheck(lambda a, b: (a @ b).tanh(), (x, w))
    assert gradgradcheck(lambda a, b: (a @ b).tanh(), (x, w))
    assert not gradcheck(lambda a: a.detach() * 2 + a, (x,), raise_exception=False)
    assert x.is_cuda and w.is_cuda  # perturbed in place and restored where they live
