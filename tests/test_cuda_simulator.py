"""Run the CUDA test suite (tests/cuda) under Numba's CUDA simulator, in its own process.

The simulator must be switched on before numba is imported, which this process has already done. The child
starts right after collection (``conftest.pytest_collection_finish`` calls ``start_simulator_suite``), so
on a 2-core CI machine it runs beside the CPU tests instead of after them; this test waits for it, and a failure
prints the child's output so the failing CUDA test is named.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

CUDA_TESTS = Path(__file__).with_name("cuda")
_RUN: dict = {}


def start_simulator_suite() -> None:
    """Start the simulator's pytest process in the background (once; nothing without numba-cuda)."""
    if _RUN or importlib.util.find_spec("numba_cuda") is None:
        return
    output = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: a full pipe would stall the child
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    _RUN["output"] = output
    _RUN["process"] = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(CUDA_TESTS)],
        env=env, stdout=output, stderr=subprocess.STDOUT, text=True)


def stop_simulator_suite() -> None:
    """Kill the child if the session ends before its test collected it (``-x``, Ctrl-C)."""
    process = _RUN.get("process")
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()
    if "output" in _RUN:
        _RUN["output"].close()


@pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None,
                    reason="numba-cuda is not installed (pip install -e \".[test]\" brings it)")
def test_cuda_suite_passes_under_the_simulator():
    start_simulator_suite()
    process, output = _RUN["process"], _RUN["output"]
    try:
        returncode = process.wait(timeout=1800)
    except subprocess.TimeoutExpired:
        stop_simulator_suite()
        raise
    output.seek(0)
    text = output.read()
    output.close()
    summary = text.strip().splitlines()[-1:] if text.strip() else []
    assert returncode == 0, text[-12000:]
    assert summary and "passed" in summary[0], text[-2000:]
