"""ember.save/ember.load of CUDA tensors: torch's map_location rules, views sharing one storage, and checkpoints
moving between devices."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn


def _roundtrip(obj, tmp_path, **kwargs):
    path = tmp_path / "obj.pt"
    ember.save(obj, path)
    return ember.load(path, **kwargs)


def test_cuda_tensors_load_back_on_their_device(tmp_path):
    t = ember.arange(6.0, device="cuda").reshape(2, 3)
    loaded = _roundtrip({"t": t, "n": 3}, tmp_path)
    assert loaded["t"].is_cuda and loaded["n"] == 3
    np.testing.assert_array_equal(loaded["t"].cpu().numpy(), t.cpu().numpy())


@pytest.mark.parametrize("location", ["cpu", ember.device("cpu"), {"cuda:0": "cpu"},
                                      lambda storage, loc: storage.cpu()])
def test_map_location_sends_cuda_tensors_to_the_cpu(tmp_path, location):
    t = ember.arange(4.0, device="cuda")
    loaded = _roundtrip(t, tmp_path, map_location=location)
    assert not loaded.is_cuda
    assert loaded.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_map_location_sends_cpu_tensors_to_cuda(tmp_path):
    loaded = _roundtrip(ember.arange(3.0), tmp_path, map_location="cuda")
    assert loaded.is_cuda and loaded.tolist() == [0.0, 1.0, 2.0]
    seen = []
    loaded = _roundtrip(ember.arange(3.0, device="cuda"), tmp_path,
                        map_location=lambda storage, loc: seen.append(loc))  # None: default placement
    assert seen == ["cuda:0"] and loaded.is_cuda


def test_views_of_one_cuda_storage_are_saved_once_with_their_layout(tmp_path):
    base = ember.arange(12.0, device="cuda").reshape(3, 4)
    views = {"base": base, "t": base.t(), "row": base[1], "flip": base.flip(0)}
    loaded = _roundtrip(views, tmp_path, map_location="cpu")
    for name, view in views.items():
        np.testing.assert_array_equal(loaded[name].numpy(), view.cpu().numpy(), err_msg=name)
    loaded["base"][1, 2] = -1.0  # one storage in the file: the views see the write
    assert loaded["t"][2, 1].item() == -1.0 and loaded["row"][2].item() == -1.0


def test_checkpoint_moves_between_devices(tmp_path):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to("cuda")
    opt = ember.optim.Adam(model.parameters(), lr=0.1)
    model(ember.randn(5, 3, device="cuda")).sum().backward()
    opt.step()
    state = _roundtrip({"model": model.state_dict(), "opt": opt.state_dict()}, tmp_path)
    cpu_model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    cpu_model.load_state_dict(state["model"])
    for (name, p), q in zip(model.state_dict().items(), cpu_model.state_dict().values()):
        assert state["model"][name].is_cuda and not q.is_cuda
        np.testing.assert_array_equal(q.numpy(), p.cpu().numpy(), err_msg=name)
    cpu_opt = ember.optim.Adam(cpu_model.parameters(), lr=0.1)
    cpu_opt.load_state_dict(_roundtrip(opt.state_dict(), tmp_path, map_location="cpu"))
    assert cpu_opt.state_dict()["state"][0]["exp_avg"].device.type == "cpu"


def test_requires_grad_and_parameters_survive(tmp_path):
    p = nn.Parameter(ember.ones(2, device="cuda"))
    t = ember.zeros(2, device="cuda", requires_grad=True)
    loaded = _roundtrip([p, t], tmp_path)
    assert isinstance(loaded[0], nn.Parameter) and loaded[0].is_cuda and loaded[0].requires_grad
    assert loaded[1].requires_grad and loaded[1].is_leaf and loaded[1].is_cuda
