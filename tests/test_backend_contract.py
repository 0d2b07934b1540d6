"""Every backend in this process against the whole backend contract (``ember.kernels.contract``).

One test, parametrized over the backends and over the contract's parts (core functions, kernel families and
the array surface); the checks are ``kernel_contract``'s, which ``tests/cuda/test_device_contract.py`` runs on
the CUDA backend (the simulator, or a GPU). Here: the CPU backend, and in a child process the CPU backend with
``NUMBA_DISABLE_JIT=1`` (its kernels as plain Python, every array access bounds-checked).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kernel_contract
from ember.kernels import contract

JIT_DISABLED = os.environ.get("NUMBA_DISABLE_JIT") == "1"
BACKENDS = [pytest.param(kernel_contract.CPU, id="cpu-nojit" if JIT_DISABLED else "cpu")]


@pytest.mark.parametrize("check", kernel_contract.contract_checks())
@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_meets_the_contract(backend, check):
    check(backend)


def test_every_name_of_the_array_surface_has_a_check():
    assert sorted(kernel_contract.FUNCTION_CASES) == sorted(contract.ARRAY_FUNCTIONS)
    assert sorted(kernel_contract.METHOD_CASES) == sorted(contract.ARRAY_METHODS)
    assert len(set(contract.ARRAY_UFUNCS)) == len(contract.ARRAY_UFUNCS)
    assert all(name in contract.ARRAY_UFUNCS for name in kernel_contract.OPERATORS.values())


@pytest.mark.skipif(JIT_DISABLED, reason="this is the child process")
def test_the_cpu_backend_meets_the_contract_with_jit_disabled():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                             "-k", "test_backend_meets_the_contract"], cwd=Path(__file__).parents[1], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout.splitlines()[-1]
