"""ember without CUDA: importable, ``is_available()`` False, clear install instructions when CUDA is asked for.

Each check runs in a fresh interpreter (numba-cuda blocked, or without the simulator) so this process's Numba
set-up is untouched.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


BLOCKED = """
import sys
for name in ("numba.cuda", "numba_cuda"):
    sys.modules[name] = None  # any import of them raises ModuleNotFoundError
"""

REPORT = """
import json
import ember
import ember.cuda
out = {"available": ember.cuda.is_available(), "count": ember.cuda.device_count(),
       "allocated": ember.cuda.memory_allocated(), "stats": ember.cuda.memory_stats()}
ember.cuda.empty_cache()
ember.cuda.reset_peak_memory_stats()
ember.cuda.manual_seed(7)
ember.cuda.manual_seed_all(8)
out["seed"] = ember.cuda.initial_seed()
try:
    ember.cuda._lazy_init()
    out["error"] = None
except Exception as exc:
    out["error"] = str(exc)
    out["assertion"] = isinstance(exc, AssertionError)
    out["runtime"] = isinstance(exc, RuntimeError)
try:
    ember.cuda.Stream()
except RuntimeError as exc:
    out["stream_error"] = str(exc)
try:
    ember.ones(2).pin_memory()
except RuntimeError as exc:
    out["pin_error"] = str(exc)
import warnings
from ember.utils.data import DataLoader
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    batches = list(DataLoader(ember.ones(4, 2), batch_size=2, pin_memory=True))
out["pin_warnings"] = [str(w.message) for w in caught]
out["batches_unpinned"] = len(batches) == 2 and not any(b.is_pinned() for b in batches)
out["kernels_loaded"] = any(m.startswith("ember.kernels.cuda") for m in sys.modules)
print(json.dumps(out))
"""


def test_without_numba_cuda_ember_imports_and_cuda_reports_unavailable():
    out = _run(BLOCKED + REPORT)
    assert out["available"] is False and out["count"] == 0
    assert out["allocated"] == 0 and out["stats"] == {}
    assert out["seed"] == 8
    assert out["assertion"] and out["runtime"]
    assert "Torch not compiled with CUDA enabled" in out["error"]
    assert 'pip install "ember[cuda]"' in out["error"] and "numba-cuda" in out["error"]
    assert "driver" in out["error"]
    assert 'pip install "ember[cuda]"' in out["stream_error"]
    assert 'pip install "ember[cuda]"' in out["pin_error"]
    assert out["pin_warnings"] == ["'pin_memory' argument is set as true but no accelerator is found, then device "
                                   "pinned memory won't be used."]
    assert out["batches_unpinned"]
    assert out["kernels_loaded"] is False


def test_with_numba_cuda_but_no_gpu_the_error_names_the_driver():
    out = _run("import sys\n" + REPORT)
    if out["available"]:
        pytest.skip("this machine has a CUDA GPU")
    assert out["count"] == 0 and out["assertion"] and out["runtime"]
    assert "NVIDIA driver" in out["error"] and 'pip install "ember[cuda]"' in out["error"]
    assert out["kernels_loaded"] is False


@pytest.mark.skipif(__import__("importlib").util.find_spec("numba_cuda") is None, reason="needs numba-cuda")
def test_emm_plugin_satisfies_numbas_interface():
    """The plugin class itself needs the real driver module (not the simulator's), but no GPU to build."""
    out = _run("""
        import json, inspect
        from numba.cuda.cudadrv import driver
        from ember.kernels.cuda.allocator import plugin_class
        cls = plugin_class()
        mgr = cls(context=None)  # what numba.cuda.set_memory_manager does to check the version
        print(json.dumps({"version": mgr.interface_version, "abstract": sorted(cls.__abstractmethods__),
                          "base": issubclass(cls, driver.BaseCUDAMemoryManager),
                          "hostonly": issubclass(cls, driver.HostOnlyCUDAMemoryManager)}))
    """)
    assert out == {"version": 1, "abstract": [], "base": True, "hostonly": True}
