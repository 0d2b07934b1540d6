"""Pinned host memory: Tensor.pin_memory/is_pinned, non_blocking copies from it, DataLoader(pin_memory=True)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.tensor import pinned
from ember.utils.data import DataLoader, TensorDataset


def test_pin_memory_copies_into_pinned_memory_and_views_stay_pinned():
    x = ember.arange(6.0).reshape(2, 3)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and not p.is_cuda and p is not x
    np.testing.assert_array_equal(p.numpy(), x.numpy())
    assert p.pin_memory() is p  # already pinned: itself, as in torch
    assert p[1].is_pinned() and p.t().is_pinned()
    assert not p.clone().is_pinned()


def test_pin_memory_is_differentiable_and_refuses_cuda_tensors():
    x = ember.ones(3, requires_grad=True)
    (x.pin_memory() * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        ember.ones(2, device="cuda").pin_memory()
    assert not ember.ones(2, device="cuda").is_pinned()


def test_creation_with_pin_memory():
    t = ember.zeros(4, pin_memory=True)
    assert t.is_pinned() and t.tolist() == [0.0] * 4
    assert ember.empty(2, 2, pin_memory=True).is_pinned()
    assert ember.tensor([1.0, 2.0], pin_memory=True).is_pinned()


@pytest.mark.parametrize("move", [lambda t: t.to("cuda", non_blocking=True), lambda t: t.cuda(non_blocking=True),
                                  lambda t: t.to(device="cuda", dtype=ember.float64, non_blocking=True)])
def test_non_blocking_copies_from_pinned_memory(move, monkeypatch):
    calls = []
    real = pinned.copy_to_device_async
    monkeypatch.setattr(pinned, "copy_to_device_async", lambda a: calls.append(a.shape) or real(a))
    host = ember.arange(5.0).pin_memory()
    on_device = move(host)
    ember.cuda.synchronize()
    assert on_device.is_cuda and calls == [(5,)]
    np.testing.assert_array_equal(on_device.cpu().numpy(), np.arange(5.0))
    move(ember.arange(3.0))  # not pinned: an ordinary synchronous copy
    assert calls == [(5,)]


def test_dataloader_pins_every_tensor_of_a_batch():
    data = TensorDataset(ember.randn(8, 3), ember.arange(8))
    batches = list(DataLoader(data, batch_size=4, pin_memory=True))
    assert len(batches) == 2 and all(t.is_pinned() for batch in batches for t in batch)
    assert not any(t.is_pinned() for batch in DataLoader(data, batch_size=4) for t in batch)
    dicts = list(DataLoader([{"x": ember.ones(2), "name": "a"}] * 2, batch_size=2, pin_memory=True))
    assert dicts[0]["x"].is_pinned() and dicts[0]["name"] == ["a", "a"]
