"""The runtime names scripts call around autograd: grad-mode decorators, inference tensors, anomaly switches,
legacy ``Variable``, pinned memory and ``non_blocking`` copies, compared with torch where it is installed."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import ember


def _decorated_modes(torch):
    """What grad and inference mode are inside and between the calls of decorated functions and generators."""
    out = []

    @torch.no_grad()
    def generator():
        sent = yield torch.is_grad_enabled()
        out.append(("sent", sent, torch.is_grad_enabled()))
        try:
            yield torch.is_grad_enabled()
        except ValueError:
            out.append(("thrown", torch.is_grad_enabled()))
            yield "caught"
        return "done"

    it = generator()
    out += [next(it), torch.is_grad_enabled(), it.send(5), torch.is_grad_enabled(), it.throw(ValueError("x"))]
    with pytest.raises(StopIteration) as stop:
        next(it)
    out.append(stop.value.value)

    @torch.no_grad
    def bare():
        return torch.is_grad_enabled()

    @torch.enable_grad
    def enabled():
        return torch.is_grad_enabled()

    @torch.inference_mode
    def inference():
        return torch.is_inference_mode_enabled(), torch.is_grad_enabled()

    @torch.inference_mode(False)
    def not_inference():
        return torch.is_inference_mode_enabled(), torch.is_grad_enabled()

    @torch.set_grad_enabled(False)
    def disabled():
        return torch.is_grad_enabled()

    @torch.autograd.grad_mode.no_grad()
    def through_module():
        return torch.is_grad_enabled()

    out += [bare(), bare.__name__, inference(), (torch.is_grad_enabled(), disabled(), torch.is_grad_enabled()),
            through_module()]
    with torch.no_grad():
        out += [enabled(), not_inference()]

    @torch.inference_mode()
    def inference_generator():
        yield torch.is_inference_mode_enabled()
        yield torch.is_inference_mode_enabled()

    it = inference_generator()
    out += [next(it), torch.is_inference_mode_enabled(), next(it)]
    return out


def test_grad_mode_decorators_match_torch(torch_ref):
    assert _decorated_modes(ember) == _decorated_modes(torch_ref)


def test_decorated_generator_closed_early_runs_its_cleanup_in_the_mode():
    seen = []

    @ember.no_grad()
    def gen():
        try:
            yield 1
        finally:
            seen.append(ember.is_grad_enabled())

    it = gen()
    next(it)
    it.close()
    assert seen == [False] and ember.is_grad_enabled()


def _switches(torch):
    out = []
    torch.set_grad_enabled(False)
    out.append(torch.is_grad_enabled())
    torch.set_grad_enabled(True)
    with torch.set_grad_enabled(False):
        out.append(torch.is_grad_enabled())
    out.append(torch.is_grad_enabled())
    torch.autograd.set_detect_anomaly(True)
    out.append(torch.is_anomaly_enabled())
    torch.autograd.set_detect_anomaly(False)
    with torch.autograd.set_detect_anomaly(True, check_nan=False):
        out.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    out.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    torch.set_anomaly_enabled(True, False)
    out.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    torch.set_anomaly_enabled(False)
    out.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly(check_nan=False):
            out.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    out.append(torch.is_anomaly_enabled())
    return out


def test_grad_and_anomaly_switches_as_calls_and_blocks_match_torch(torch_ref):
    assert _switches(ember) == _switches(torch_ref)


def _inference_tensors(torch):
    out = []
    normal = torch.ones(3)
    with torch.inference_mode():
        x = torch.ones(3)
        x.add_(1)  # allowed inside
        out += [x.is_inference(), torch.is_inference(x), x.requires_grad, normal[:2].is_inference(),
                (normal * 2).is_inference()]
        with torch.inference_mode(False):
            out.append((torch.ones(1).is_inference(), torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
    w = torch.ones(3, requires_grad=True)
    out += [x.view(3).is_inference(), x[0].is_inference(), x.clone().is_inference(), (x * 2).is_inference(),
            (x + w).grad_fn is not None]
    for bad in (lambda: x * w, lambda: x.add_(1), lambda: x.zero_(), lambda: x.requires_grad_()):
        with pytest.raises(RuntimeError) as info:
            bad()
        out.append(str(info.value))
    return out


def test_inference_tensors_and_their_errors_match_torch(torch_ref):
    assert _inference_tensors(ember) == _inference_tensors(torch_ref)


def test_refused_inplace_update_of_an_inference_tensor_changes_nothing():
    """torch writes before its check fails; ember checks first, so the tensor keeps its values."""
    with ember.inference_mode():
        x = ember.full((3,), 2.0)
    for op in (lambda: x.add_(1), lambda: x.zero_(), lambda: x.copy_(ember.zeros(3)), lambda: x.__setitem__(0, 5.0)):
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
            op()
    assert x.tolist() == [2.0, 2.0, 2.0]


def test_inference_mode_is_per_thread():
    made = []
    entered, release = threading.Event(), threading.Event()

    def inside():
        with ember.inference_mode():
            entered.set()
            release.wait(5)

    thread = threading.Thread(target=inside)
    thread.start()
    try:
        assert entered.wait(5)
        made.append(ember.ones(2))
    finally:
        release.set()
        thread.join(5)
    assert not made[0].is_inference() and not ember.is_inference_mode_enabled()
    w = ember.ones(2, requires_grad=True)
    (made[0] * w).sum().backward()  # a normal tensor: saved for backward without complaint
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0])


def test_inference_mode_skips_the_graph_but_allows_requires_grad_factories():
    w = ember.ones(2, requires_grad=True)
    with ember.inference_mode():
        y = w * 2
        z = ember.ones(2, requires_grad=True)
    assert y.grad_fn is None and not y.requires_grad and z.requires_grad and z.is_inference()


def test_variable_is_the_legacy_tensor_wrapper(torch_ref):
    def run(torch):
        from_leaf = torch.ones(2)
        v = torch.autograd.Variable(from_leaf, requires_grad=True)
        w = torch.ones(2, requires_grad=True)
        cut = torch.autograd.Variable(w * 2)
        with pytest.raises(TypeError) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.autograd.Variable(3)
        with pytest.warns(UserWarning, match="volatile was removed"):
            torch.autograd.Variable(from_leaf, volatile=True)
        return (type(v).__name__, v is from_leaf, v.data_ptr() == from_leaf.data_ptr(), v.requires_grad,
                from_leaf.requires_grad, isinstance(from_leaf, torch.autograd.Variable), cut.grad_fn,
                cut.requires_grad, str(info.value), tuple(torch.autograd.Variable().shape))

    assert run(ember) == run(torch_ref)


def test_autograd_names_scripts_import_exist(torch_ref):
    for name in torch_ref.autograd.functional.__all__:
        assert callable(getattr(ember.autograd.functional, name)), name
    for name in ("Variable", "Function", "backward", "grad", "grad_mode", "detect_anomaly", "set_detect_anomaly",
                 "enable_grad", "no_grad", "inference_mode", "set_grad_enabled", "gradcheck", "gradgradcheck",
                 "variable", "functional", "forward_ad", "graph"):
        assert hasattr(ember.autograd, name), name
    for name in ("is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
                 "is_inference_mode_enabled", "is_inference", "inference_mode", "set_grad_enabled",
                 "is_grad_enabled", "no_grad", "enable_grad"):
        assert hasattr(ember, name), name
    with pytest.raises(TypeError, match=r"is_inference\(\): argument 'input' \(position 1\) must be Tensor"):
        ember.is_inference(3)


def test_functional_jacobian_runs_under_no_grad_decorator():
    @ember.no_grad()
    def outer(x):
        return ember.autograd.functional.jacobian(lambda t: t * t, x)

    jac = outer(ember.tensor([1.0, 2.0]))
    np.testing.assert_allclose(jac.numpy(), np.diag([2.0, 4.0]))


def _cuda_usable() -> bool:
    return ember.cuda.is_available()


def test_pinning_and_non_blocking_on_the_cpu(torch_ref):
    def run(torch):
        x = torch.arange(6.0).reshape(2, 3)
        y = torch.empty(2, 3)
        y.copy_(x, non_blocking=True)
        return (x.is_pinned(), x.to("cpu", non_blocking=True) is x, str(x.to(torch.float64, non_blocking=True).dtype),
                str(x.to("cpu", torch.float64, non_blocking=True).dtype), y.tolist())

    ours, theirs = run(ember), run(torch_ref)
    assert ours[:1] + ours[1:2] + ours[4:] == theirs[:1] + theirs[1:2] + theirs[4:]
    assert [s.split(".")[-1] for s in ours[2:4]] == [s.split(".")[-1] for s in theirs[2:4]]


@pytest.mark.skipif(_cuda_usable(), reason="checks the machine without a usable GPU")
def test_pin_memory_and_cuda_copies_without_a_gpu_raise_runtime_errors():
    x = ember.ones(3)
    with pytest.raises(RuntimeError):
        x.pin_memory()
    with pytest.raises(RuntimeError):
        x.cuda(non_blocking=True)
    assert not x.is_pinned()


def test_non_blocking_copy_keeps_the_gradient_path():
    x = ember.ones(3, requires_grad=True)
    y = ember.zeros(3).copy_(x * 2, non_blocking=True)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
