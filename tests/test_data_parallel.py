"""nn.DataParallel and nn.parallel on a machine without CUDA, as torch's CPU build behaves: the wrapper just calls
the module, ``data_parallel`` cannot pick a device, and the helpers' errors match. (The multi-device path is
tested under the simulator in tests/cuda/test_device_data_parallel.py.)
"""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember
import ember.nn as nn

pytestmark = pytest.mark.skipif(ember.cuda.is_available(), reason="the CPU-only behaviour")


def _pair(torch):
    """The same Linear in torch and ember."""
    ref = torch.nn.Linear(3, 2)
    mine = nn.Linear(3, 2)
    with ember.no_grad():
        mine.weight.copy_(ember.tensor(ref.weight.detach().numpy()))
        mine.bias.copy_(ember.tensor(ref.bias.detach().numpy()))
    return ref, mine


def test_without_cuda_the_wrapper_calls_the_module(torch_ref):
    ref, mine = _pair(torch_ref)
    wrapped_ref = torch_ref.nn.DataParallel(ref, device_ids=[0, 1], output_device=1, dim=1)
    wrapped = nn.DataParallel(mine, device_ids=[0, 1], output_device=1, dim=1)
    assert wrapped.module is mine and wrapped.device_ids == wrapped_ref.device_ids == []
    for attribute in ("dim", "output_device", "src_device_obj"):
        assert hasattr(wrapped, attribute) == hasattr(wrapped_ref, attribute)
    assert list(wrapped.state_dict()) == list(wrapped_ref.state_dict()) == ["module.weight", "module.bias"]
    assert repr(wrapped) == repr(wrapped_ref)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    out, out_ref = wrapped(ember.tensor(x)), wrapped_ref(torch_ref.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), out_ref.detach().numpy(), rtol=1e-6)
    out.sum().backward()
    out_ref.sum().backward()
    np.testing.assert_allclose(mine.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-6)


def test_wrapped_module_loads_a_plain_state_dict_through_module_prefix():
    source, target = nn.Linear(2, 2), nn.DataParallel(nn.Linear(2, 2))
    target.load_state_dict({"module." + k: v for k, v in source.state_dict().items()})
    assert target.module.weight.tolist() == source.weight.tolist()


def test_keyword_arguments_pass_through():
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            return x * factor

    assert nn.DataParallel(Scale())(ember.ones(2), factor=3.0).tolist() == [3.0, 3.0]


def test_functional_form_needs_a_device(torch_ref):
    for parallel, lib in ((nn.parallel, ember), (torch_ref.nn.parallel, torch_ref)):
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            parallel.data_parallel(lib.nn.Linear(1, 1), lib.ones(1, 1))


def test_gather_of_cpu_tensors_is_torchs_error(torch_ref):
    for parallel, lib in ((nn.parallel, ember), (torch_ref.nn.parallel, torch_ref)):
        with pytest.raises(AssertionError, match="Gather function not implemented for CPU tensors"):
            parallel.gather([lib.ones(1), lib.ones(1)], -1)
        assert parallel.gather([None, None], -1) is None


def test_parallel_exports_torchs_names(torch_ref):
    assert set(nn.parallel.__all__) == set(torch_ref.nn.parallel.__all__)
    assert nn.DataParallel is nn.parallel.DataParallel


def test_parallel_apply_checks_its_lengths():
    with pytest.raises(AssertionError, match="The number of modules 1 is not equal to the number of inputs 2"):
        nn.parallel.parallel_apply([nn.Identity()], [ember.ones(1), ember.ones(1)])
    with pytest.raises(AssertionError, match="number of kwargs_tup 0"):
        nn.parallel.parallel_apply([nn.Identity()], [ember.ones(1)], [])


def test_unbalanced_gpus_are_warned_about(monkeypatch):
    dp_module = importlib.import_module("ember.nn.parallel.data_parallel")  # the name is also the function's

    properties = {0: (16, 80), 1: (16, 40), 2: (8, 80)}
    monkeypatch.setattr(dp_module, "get_device_properties",
                        lambda i: type("P", (), {"total_memory": properties[i][0],
                                                 "multi_processor_count": properties[i][1]}))
    with pytest.warns(UserWarning, match="GPU 2 has less than 75% of the total memory of GPU 0"):
        dp_module._check_balance([0, 2])
    with pytest.warns(UserWarning, match="GPU 1 has less than 75% of the multi processor count of GPU 0"):
        dp_module._check_balance([0, 1])
