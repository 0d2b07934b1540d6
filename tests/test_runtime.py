"""ember's process set-up (ember/_runtime.py): the threading layer it picks also works in child processes."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import ember

ROOT = Path(__file__).resolve().parents[1]

PARALLEL_SUM = "import ember; x = ember.ones(1 << 20); print(int((x * x).sum().item()))"


def test_a_child_inheriting_the_chosen_threading_layer_runs_parallel_kernels():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("NUMBA_THREADING_LAYER", None)
    chosen = subprocess.run([sys.executable, "-c", "import ember, os; print(os.environ.get('NUMBA_THREADING_LAYER'))"],
                            env=env, capture_output=True, text=True, check=True).stdout.strip()
    if chosen != "None":
        env["NUMBA_THREADING_LAYER"] = chosen  # what a child of an ember process sees
    result = subprocess.run([sys.executable, "-c", PARALLEL_SUM], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == str(1 << 20)


def test_importing_ember_freezes_the_imported_objects_unless_told_not_to():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    probe = "import gc, ember; print(gc.get_freeze_count())"
    frozen = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert int(frozen.stdout) > 1000  # the modules' objects: full collections no longer walk them
    env["EMBER_GC_FREEZE"] = "0"
    kept = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert int(kept.stdout) == 0


def test_the_default_kernel_cache_is_named_by_the_shared_definitions(tmp_path, monkeypatch):
    """A change to ember/kernels/common (which CPU kernels inline) must not reuse kernels cached before it."""
    from ember import _runtime

    for name in ("EMBER_CACHE_DIR", "NUMBA_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = Path(_runtime.kernel_cache_dir())
    assert folder.parent == tmp_path / "ember" / "kernels"
    assert folder.name == _runtime._shared_definitions_digest() and len(folder.name) == 16
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "mine"))
    assert _runtime.kernel_cache_dir() == str(tmp_path / "mine")


_CACHE_PROBE = """
import sys
import ember
from numba.core.registry import CPUDispatcher

ember.arange(12.0).reshape(3, 4).sort(1)  # ember/kernels/cpu/sorting.py's row sort, called directly
stats = [f.stats for name, module in list(sys.modules.items()) if name.startswith("ember.kernels")
         for f in vars(module).values() if isinstance(f, CPUDispatcher) and f.signatures]
print(sum(s.cache_hits.get(sig, 0) for s in stats for sig in s.cache_hits),
      sum(s.cache_misses.get(sig, 0) for s in stats for sig in s.cache_misses))
"""


def test_the_kernel_cache_survives_installing_ember_elsewhere(tmp_path):
    """The same sources installed in another folder load the kernels the first install compiled."""
    env = {**os.environ, "EMBER_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("NUMBA_CACHE_DIR", None)
    counts = []
    for place in ("first", "second"):
        shutil.copytree(Path(ember.__file__).parent, tmp_path / place / "ember",
                        ignore=shutil.ignore_patterns("__pycache__"))
        env["PYTHONPATH"] = str(tmp_path / place)
        done = subprocess.run([sys.executable, "-c", _CACHE_PROBE], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        counts.append(tuple(map(int, done.stdout.split())))
    (first_hits, first_misses), (second_hits, second_misses) = counts
    assert first_misses > 0 and first_hits == 0  # compiled by the first install
    assert second_misses == 0 and second_hits == first_misses  # all loaded by the second
    named = {p.name for p in (tmp_path / "cache").iterdir()}
    assert "ember_kernels_cpu" in named and not any(name.startswith("cpu_") for name in named)  # not by location
