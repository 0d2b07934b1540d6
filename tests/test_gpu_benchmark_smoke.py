"""The GPU benchmark and the prepared GPU check script work before a GPU is ever lent.

benchmarks/gpu.py runs at a tiny scale under Numba's CUDA simulator (its own process: the simulator must be on
before numba is imported); its workload code runs through both ember's and PyTorch's API on the CPU; the check
script at least parses.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ember

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
SMOKE = ("elementwise", "sum_all", "softmax")
SMOKE_SCALE = 1e-5


@pytest.fixture(scope="module")
def gpu_bench():
    """benchmarks/gpu.py as a module (it imports its sibling ``_harness``, so benchmarks/ joins sys.path)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCHMARKS))
        spec = importlib.util.spec_from_file_location("gpu_benchmark", BENCHMARKS / "gpu.py")
        module = importlib.util.module_from_spec(spec)
        patch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up while it executes
        spec.loader.exec_module(module)
        yield module


def _run_bench(*args: str) -> subprocess.CompletedProcess:
    """benchmarks/gpu.py in a fresh process under the simulator."""
    python_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=python_path)
    return subprocess.run([sys.executable, str(BENCHMARKS / "gpu.py"), *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """One tiny simulator run of the cheap workloads: its stdout and its JSON report."""
    if importlib.util.find_spec("numba.cuda") is None:
        pytest.skip("numba-cuda is not installed")
    path = tmp_path_factory.mktemp("bench") / "bench.json"
    done = _run_bench("--scale", str(SMOKE_SCALE), "--repeats", "1", "--only", ",".join(SMOKE), "--json", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, json.loads(path.read_text())


def test_smoke_table_has_a_timed_row_per_workload(smoke_run, gpu_bench):
    stdout, _ = smoke_run
    labels = {w.name: w.label for w in gpu_bench.WORKLOADS}
    assert "Numba CUDA simulator" in stdout.splitlines()[0]
    for name in SMOKE:
        row = next(line for line in stdout.splitlines() if line.startswith(labels[name]))
        assert "ERROR" not in row
        median_ms = float(row.split("ember")[1].split("ms")[0])
        assert median_ms > 0
        assert "torch        -" in row and "GB/s" in row


def test_smoke_json_rates_are_work_over_median(smoke_run, gpu_bench):
    _, report = smoke_run
    assert report["simulator"] is True and report["scale"] == SMOKE_SCALE and report["torch"] is None
    assert [w["name"] for w in report["workloads"]] == list(SMOKE)
    n = gpu_bench.shrink(16 * 2**20, SMOKE_SCALE)
    side = gpu_bench.shrink(4096, SMOKE_SCALE, 0.5)
    rows, cols = gpu_bench.shrink(4096, SMOKE_SCALE, 0.5), gpu_bench.shrink(1024, SMOKE_SCALE, 0.5)
    gigabytes = {"elementwise": 16 * n / 1e9, "sum_all": 4 * side * side / 1e9, "softmax": 8 * rows * cols / 1e9}
    for entry in report["workloads"]:
        ours = entry["ember"]
        assert entry["torch"] is None and entry["ratio"] is None
        assert ours["repeats"] == 1 and ours["number"] >= 1 and ours["cold_s"] > 0
        assert ours["rate"] * ours["median_s"] == pytest.approx(gigabytes[entry["name"]], rel=1e-9)
    assert report["workloads"][0]["ember"]["sizes"] == f"n={n}"


def test_unknown_workload_is_named_in_the_error():
    done = _run_bench("--only", "elementwise,nope")
    assert done.returncode == 2
    assert "unknown workload(s) nope" in done.stderr and "lstm" in done.stderr


@pytest.mark.parametrize("framework", ["ember", "torch"])
def test_each_workload_runs_through_both_apis(gpu_bench, framework, monkeypatch):
    """The benchmark code is framework-neutral: every workload builds and steps on the CPU in both frameworks."""
    lib = ember if framework == "ember" else pytest.importorskip("torch")
    monkeypatch.setattr(gpu_bench, "DEVICE", "cpu")
    for workload in gpu_bench.WORKLOADS:
        lib.manual_seed(0)
        case = workload.build(lib, 1e-3)
        first, second = case.step(), case.step()
        assert case.work > 0, workload.name
        if first is not None:
            assert bool(lib.isfinite(first).all()) and bool((first == second).all()), workload.name


def _broken_build(lib, scale):
    raise ValueError(f"no such size at scale {scale}")


def test_a_failing_workload_becomes_an_error_row(gpu_bench):
    workload = gpu_bench.Workload("broken", "broken workload", "GB/s", _broken_build)
    ours = gpu_bench.run_side(ember, workload, 0.5, 1, 1.0)
    assert ours["error"] == "ValueError: no such size at scale 0.5" and "_broken_build" in ours["traceback"]
    row = gpu_bench.format_row(workload, ours, None)
    assert row == f"{'broken workload':42s} ERROR ember ValueError: no such size at scale 0.5"


def test_a_torch_failure_keeps_embers_figures_in_the_row(gpu_bench):
    workload = gpu_bench.WORKLOADS[0]
    ours = {"cold_s": 1.5, "median_s": 0.002, "rate": 12.5, "number": 1, "repeats": 3, "sizes": "n=8"}
    row = gpu_bench.format_row(workload, ours, {"error": "RuntimeError: out of memory"})
    assert "ember      2.00 ms" in row and "cold    1.50 s" in row and "12.5" in row
    assert row.endswith("ERROR torch RuntimeError: out of memory")
    assert gpu_bench._ratio(ours, {"median_s": 0.001}) == pytest.approx(2.0)


def test_shrink_keeps_dims_at_their_floor(gpu_bench):
    assert gpu_bench.shrink(1024, 1e-3, 1 / 3) == 102
    assert gpu_bench.shrink(28, 1e-9, 1 / 6, least=6) == 6


def test_median_time_synchronizes_around_every_batch(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from _harness import median_time
    events = []
    median_time(lambda: events.append("call"), number=2, repeats=3, sync=lambda: events.append("sync"))
    assert events == ["call"] * 2 + ["sync", "call", "call", "sync"] * 3


def test_check_script_parses_and_is_executable():
    script = BENCHMARKS / "gpu_check.sh"
    assert os.access(script, os.X_OK)
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
