"""Run the CUDA test suite (tests/cuda) under Numba's CUDA simulator, in its own process.

The simulator must be switched on before numba is imported, which this process has already done; a failure
prints the child's output so the failing CUDA test is named.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

CUDA_TESTS = Path(__file__).with_name("cuda")


@pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None,
                    reason="numba-cuda is not installed (pip install -e \".[test]\" brings it)")
def test_cuda_suite_passes_under_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(CUDA_TESTS)],
                            env=env, capture_output=True, text=True, timeout=1200)
    summary = result.stdout.strip().splitlines()[-1:] if result.stdout.strip() else []
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]
    assert summary and "passed" in summary[0], result.stdout[-2000:]
