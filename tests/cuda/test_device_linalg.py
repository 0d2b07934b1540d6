"""ember.linalg on CUDA tensors: decompositions run through the host with one warning per function, return their
results on the device, match the CPU values, and pass gradients back to the device."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.linalg import _host


def _spd(n: int = 4, seed: int = 0) -> np.ndarray:
    a = np.random.default_rng(seed).standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def _rhs(seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((4, 2))


CASES = {
    "inv": lambda A, B: ember.linalg.inv(A),
    "det": lambda A, B: ember.linalg.det(A),
    "slogdet": lambda A, B: ember.linalg.slogdet(A).logabsdet,
    "cholesky": lambda A, B: ember.linalg.cholesky(A),
    "qr": lambda A, B: ember.linalg.qr(A).R,
    "svdvals": lambda A, B: ember.linalg.svdvals(A),
    "eigvalsh": lambda A, B: ember.linalg.eigvalsh(A),
    "eigh": lambda A, B: ember.linalg.eigh(A).eigenvalues,
    "pinv": lambda A, B: ember.linalg.pinv(A),
    "solve": lambda A, B: ember.linalg.solve(A, B),
    "solve_triangular": lambda A, B: ember.linalg.solve_triangular(A, B, upper=False),  # reads the lower half
    "lstsq": lambda A, B: ember.linalg.lstsq(A, B).solution,
    "matrix_norm_2": lambda A, B: ember.linalg.matrix_norm(A, ord=2),
    "matrix_norm_nuc": lambda A, B: ember.linalg.matrix_norm(A, ord="nuc"),
    "legacy_svd": lambda A, B: ember.svd(A).S,
    "logdet": lambda A, B: ember.logdet(A),
    "inverse_method": lambda A, B: A.inverse(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_linalg_on_cuda_matches_cpu_with_gradients(name):
    op = CASES[name]
    values = {}
    for device in ("cpu", "cuda"):
        A = ember.tensor(_spd(), dtype=ember.float64, device=device, requires_grad=True)
        B = ember.tensor(_rhs(), dtype=ember.float64, device=device, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = op(A, B)
        assert out.device.type == device
        out.sum().backward()
        assert A.grad.device.type == device
        values[device] = (out.detach().cpu().numpy(), A.grad.cpu().numpy(),
                          None if B.grad is None else B.grad.cpu().numpy())
    for got, want in zip(values["cuda"], values["cpu"]):
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_host_path_warns_once_per_function(monkeypatch):
    monkeypatch.setattr(_host, "_WARNED", set())
    A = ember.tensor(_spd(), dtype=ember.float64, device="cuda")
    with pytest.warns(UserWarning, match=r"ember.linalg.inv: no CUDA kernel"):
        ember.linalg.inv(A)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.linalg.inv(A)  # no second warning
    with pytest.warns(UserWarning, match=r"ember.linalg.det"):
        ember.linalg.det(A)


def test_namedtuple_results_keep_their_fields_on_the_device():
    A = ember.tensor(_spd(), dtype=ember.float64, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = ember.linalg.svd(A)
    assert type(result).__name__ == "linalg_svd"
    assert all(t.is_cuda for t in (result.U, result.S, result.Vh))
    rebuilt = (result.U * result.S.unsqueeze(0)) @ result.Vh
    np.testing.assert_allclose(rebuilt.cpu().numpy(), _spd(), rtol=1e-10)


def test_out_argument_on_the_device():
    A = ember.tensor(_spd(), dtype=ember.float64, device="cuda")
    out = ember.empty(4, 4, dtype=ember.float64, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        returned = ember.linalg.inv(A, out=out)
    assert returned is out and out.is_cuda
    np.testing.assert_allclose(out.cpu().numpy(), np.linalg.inv(_spd()), rtol=1e-10)


def test_mixed_devices_are_torchs_error():
    A = ember.tensor(_spd(), dtype=ember.float64, device="cuda")
    B = ember.tensor(_rhs(), dtype=ember.float64)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.linalg.solve(A, B)


def test_linalg_errors_still_raise_for_cuda_inputs():
    singular = ember.zeros(3, 3, dtype=ember.float64, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ember.linalg.LinAlgError):
            ember.linalg.inv(singular)
