"""tools/cuda_compile_check.py: recorded kernels are rebuilt faithfully, and (where NVVM and NVRTC exist) compile."""
from __future__ import annotations

import importlib.util
import os
import pickle
import subprocess
import sys
import types
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "cuda_compile_check.py"
spec = importlib.util.spec_from_file_location("cuda_compile_check", TOOL)
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

SCALE = 3


def _helper(v):
    return v * SCALE


def _make_kernel(offset):
    def kernel(v):
        return _helper(v) + offset
    return kernel


def test_a_recorded_function_is_rebuilt_with_its_closure_and_rebound_globals():
    original = _make_kernel(5)
    namespace = {**original.__globals__, "SCALE": 10}  # a device build rebinding one global, as scalar_ops does
    rebound = types.FunctionType(original.__code__, namespace, original.__name__, None, original.__closure__)
    for fn, expected in ((original, 2 * 3 + 5), (rebound, 2 * 3 + 5)):
        recorded = pickle.loads(pickle.dumps(check._function_spec(fn)))
        assert check._rebuild_function(recorded, cuda=None)(2) == expected
    # the rebound global is recorded only where it differs from the module's own
    assert check._function_spec(original)[-1] == ()
    names = dict(check._function_spec(types.FunctionType(_helper.__code__, {**_helper.__globals__, "SCALE": 10},
                                                         "_helper"))[-1])
    assert pickle.loads(names["SCALE"][1]) == 10
    assert check._rebuild_function(check._function_spec(
        types.FunctionType(_helper.__code__, {**_helper.__globals__, "SCALE": 10}, "_helper")), cuda=None)(2) == 20


def test_recordings_of_one_kernel_compare_equal_once_canonical():
    a, b = check._function_spec(_make_kernel(1)), check._function_spec(_make_kernel(1))
    assert check._canonical(a) == check._canonical(b)
    assert check._canonical(a) != check._canonical(check._function_spec(_make_kernel(2)))


def _compiler_available() -> bool:
    if importlib.util.find_spec("numba_cuda") is None:
        return False
    probe = ("from numba.cuda.cudadrv import nvvm; import cuda.pathfinder as p; "
             "assert nvvm.is_available(); p.load_nvidia_dynamic_lib('nvrtc')")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True).returncode == 0


@pytest.mark.skipif(not _compiler_available(), reason="needs numba-cuda with NVVM and NVRTC (no GPU needed)")
def test_ember_elementwise_kernels_compile_for_sm90_without_a_gpu(tmp_path):
    """Record the binary float tests' launches under the simulator (fmod among them), then compile them with the
    real compiler."""
    records = tmp_path / "records.pkl"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    result = subprocess.run(
        [sys.executable, str(TOOL), "--records", str(records), "--tests",
         "tests/cuda/test_device_elementwise.py::test_binary_float_ops_match_cpu"],
        cwd=TOOL.parents[1], env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " 0 failed" in result.stdout and "kernel signatures compiled for sm_90" in result.stdout
