"""The side-by-side benchmark suite (benchmarks/suite.py) works at tiny sizes, on the CPU and under the simulator.

The full suite runs in fresh processes (its thread counts must be set before numpy loads; the simulator must be on
before numba loads); its pieces (the alternation, error rows, start-up probes, formatting) run in this process
with fake frameworks where the order of calls is what is tested. No timing is asserted, only that the figures are
the work over the measured medians.
"""
from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
HAVE_TORCH = importlib.util.find_spec("torch") is not None
CPU_SMOKE = ("elementwise", "softmax", "matmul", "overhead_grad", "overhead_nograd")
CPU_SCALE = 1e-4
CUDA_SMOKE = ("elementwise", "sum_all", "overhead_nograd")
CUDA_SCALE = 1e-5


@pytest.fixture(scope="module")
def suite():
    """benchmarks/suite.py as a module (imported, not run: it pins no threads); its siblings join sys.path."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCHMARKS))
        spec = importlib.util.spec_from_file_location("benchmark_suite", BENCHMARKS / "suite.py")
        module = importlib.util.module_from_spec(spec)
        patch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up while it executes
        spec.loader.exec_module(module)
        yield module


def _run_suite(*args: str, simulator: bool = False) -> subprocess.CompletedProcess:
    """benchmarks/suite.py in a fresh process (under Numba's CUDA simulator when asked)."""
    python_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=python_path)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return subprocess.run([sys.executable, str(BENCHMARKS / "suite.py"), *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """One tiny CPU run at a non-default thread count: its stdout and its JSON report."""
    path = tmp_path_factory.mktemp("suite") / "suite.json"
    done = _run_suite("--scale", str(CPU_SCALE), "--repeats", "3", "--threads", "1", "--only", ",".join(CPU_SMOKE),
                      "--json", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, json.loads(path.read_text())


def test_cpu_run_pins_every_thread_pool(cpu_run):
    _, report = cpu_run
    threads = report["threads"]
    assert threads["requested"] == 1 and threads["ember"] == 1
    assert set(threads["environment"].values()) == {"1"}
    assert threads["torch"] == (1 if HAVE_TORCH else None)
    assert report["device"] == "cpu" and report["order"] == "alternating" and report["startup"] is None


def test_cpu_run_measures_the_limits_first(cpu_run, suite):
    stdout, report = cpu_run
    limits = report["limits"]
    assert set(limits["copy_GBps"]) == {"1", "2"} and all(bw > 0 for bw in limits["copy_GBps"].values())
    assert limits["gemm_GFLOPps"] > 0 and limits["threads"] == 1
    assert limits["copy_elements"] == suite.shrink(64 * 2**20, CPU_SCALE, least=4096)
    lines = stdout.splitlines()
    assert lines[1].startswith("limits: copy bandwidth") and lines[2].startswith("limits: peak f32 GEMM")
    assert lines[3] == suite.HEADER


def test_cpu_run_figures_are_work_over_medians(cpu_run, suite):
    _, report = cpu_run
    assert [entry["name"] for entry in report["workloads"]] == list(CPU_SMOKE)
    ceilings = {"GB/s": report["limits"]["copy_GBps"]["1"], "GFLOP/s": report["limits"]["gemm_GFLOPps"]}
    known = {w.name: w for w in suite.WORKLOADS}
    for entry in report["workloads"]:
        workload = known[entry["name"]]
        sides = [("ember", entry["ember"])] + ([("torch", entry["torch"])] if HAVE_TORCH else [])
        for name, side in sides:
            lib = ember if name == "ember" else pytest.importorskip("torch")
            work = workload.build(lib, CPU_SCALE, "cpu").work
            assert side["repeats"] == 3 and side["number"] >= 1 and side["median_s"] > 0, entry
            assert side["figure"] == pytest.approx(workload.figure(work, side["median_s"]), rel=1e-12)
            if workload.unit in ceilings:
                assert entry["share_of_ceiling"][name] == pytest.approx(side["figure"] / ceilings[workload.unit])
        if HAVE_TORCH:
            assert entry["ratio"] == pytest.approx(entry["ember"]["median_s"] / entry["torch"]["median_s"])
        else:
            assert entry["torch"] is None and entry["ratio"] is None
    overhead = report["workloads"][-1]["ember"]
    ops = suite.shrink(1000, CPU_SCALE, 1 / 3, least=10)
    assert overhead["sizes"] == f"{ops} adds" and overhead["figure"] == pytest.approx(overhead["median_s"] / ops * 1e6)


def test_cpu_run_prints_a_row_per_workload(cpu_run, suite):
    stdout, _ = cpu_run
    for workload in (w for w in suite.WORKLOADS if w.name in CPU_SMOKE):
        row = next(line for line in stdout.splitlines() if line.startswith(workload.label))
        assert "ERROR" not in row and workload.unit in row
        assert float(row[len(workload.label):].split()[0]) > 0


def test_cuda_smoke_under_the_simulator(tmp_path, suite):
    if importlib.util.find_spec("numba.cuda") is None:
        pytest.skip("numba-cuda is not installed")
    path = tmp_path / "suite.json"
    done = _run_suite("--device", "cuda", "--scale", str(CUDA_SCALE), "--repeats", "1", "--no-torch",
                      "--only", ",".join(CUDA_SMOKE), "--json", str(path), simulator=True)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(path.read_text())
    assert report["simulator"] is True and report["device_name"] == "Numba CUDA simulator"
    assert report["limits"] is None and report["torch"] is None
    assert [entry["name"] for entry in report["workloads"]] == list(CUDA_SMOKE)
    n = suite.shrink(16 * 2**20, CUDA_SCALE)
    elementwise = report["workloads"][0]["ember"]
    assert elementwise["sizes"] == f"n={n}" and elementwise["repeats"] == 1 and elementwise["cold_s"] > 0
    assert elementwise["figure"] * elementwise["median_s"] == pytest.approx(16 * n / 1e9, rel=1e-9)
    assert "ember alone" in done.stdout.splitlines()[0]


class FakeFramework:
    """Just enough of a framework for the suite's plumbing: seeding, and steps that log who ran."""

    def __init__(self, name: str, log: list[str], fail_at: int | None = None) -> None:
        self.name, self.log, self.fail_at = name, log, fail_at
        self.calls = 0

    def manual_seed(self, seed: int) -> None:
        self.log.append(f"seed {self.name}")

    def step(self) -> None:
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError(f"{self.name} broke at call {self.calls}")
        self.log.append(self.name)


def _fake_workload(suite):
    return suite.Workload("fake", "fake workload", "GB/s", lambda lib, scale, device: suite.Case(lib.step, 1.0, "n=1"))


def _batch(name: str, number: int) -> list[str]:
    """The log of one synchronised batch."""
    return ["sync"] + [name] * number + ["sync"]


def test_timed_batches_alternate_between_frameworks(suite):
    log: list[str] = []
    sides = [suite.Contender(name, FakeFramework(name, log), lambda: log.append("sync")) for name in ("ember", "torch")]
    results = suite.measure(sides, _fake_workload(suite), 1.0, "cpu", repeats=4, budget_s=100.0)
    expected = []
    for side in sides:  # each prepared in turn: seed, cold call, warm call, untimed warm-up batch
        expected += [f"seed {side.name}"] + _batch(side.name, 1) * 2 + _batch(side.name, side.number)
    for _ in range(4):
        for side in sides:
            expected += _batch(side.name, side.number)
    assert log == expected
    assert [r["repeats"] for r in results] == [4, 4] and all(r["median_s"] > 0 for r in results)


def test_a_side_failing_mid_run_leaves_the_other_measured(suite):
    log: list[str] = []
    ember_side = suite.Contender("ember", FakeFramework("ember", log), None)
    torch_side = suite.Contender("torch", FakeFramework("torch", log, fail_at=2), None)
    ours, theirs = suite.measure([ember_side, torch_side], _fake_workload(suite), 1.0, "cpu", 3, 100.0)
    assert theirs["error"] == "RuntimeError: torch broke at call 2" and "step" in theirs["traceback"]
    assert ours["repeats"] == 3 and log.count("torch") == 1
    row = suite.format_row(_fake_workload(suite), ours, theirs, ceiling=None)
    assert row.endswith("ERROR torch RuntimeError: torch broke at call 2") and "fake workload" in row


def _broken_build(lib, scale, device):
    raise ValueError(f"no such size at scale {scale} on {device}")


def test_a_failing_build_becomes_an_error_row(suite):
    workload = suite.Workload("broken", "broken workload", "GB/s", _broken_build)
    (ours,) = suite.measure([suite.Contender("ember", ember, None)], workload, 0.5, "cpu", 3, 1.0)
    assert ours["error"] == "ValueError: no such size at scale 0.5 on cpu" and "_broken_build" in ours["traceback"]
    row = suite.format_row(workload, ours, None)
    assert row == f"{'broken workload':40s} ERROR ember ValueError: no such size at scale 0.5 on cpu"


def test_row_shows_ratio_figures_and_share_of_the_ceiling(suite):
    workload = suite.WORKLOADS[0]
    ours = {"cold_s": 1.5, "median_s": 0.002, "figure": 12.5, "number": 1, "repeats": 3, "sizes": "n=8"}
    theirs = {"cold_s": 0.1, "median_s": 0.001, "figure": 25.0, "number": 2, "repeats": 3, "sizes": "n=8"}
    cells = suite.format_row(workload, ours, theirs, ceiling=50.0)[40:].split()
    assert cells == ["2.000", "1.000", "2.00", "12.5", "25", "GB/s", "25%/50%", "1.50"]
    alone = suite.format_row(workload, ours, None)[40:].split()
    assert alone == ["2.000", "-", "-", "12.5", "-", "GB/s", "-", "1.50"]


def test_rounds_stay_within_the_budget_but_never_below_a_few(suite):
    sides = [suite.Contender("a", None, None, warm_s=0.5, number=1), suite.Contender("b", None, None, warm_s=0.1,
                                                                                       number=2)]
    assert suite.rounds_within(sides, repeats=10, budget_s=2.5) == 5
    assert suite.rounds_within(sides, repeats=10, budget_s=0.1) == suite.MIN_ROUNDS
    assert suite.rounds_within(sides, repeats=2, budget_s=0.1) == 2


@pytest.mark.parametrize("argv, threads", [(["--threads", "4"], 4), (["--json", "x", "--threads=3"], 3),
                                           ([], 2), (["--threads", "zero"], 2), (["--threads"], 2)])
def test_threads_are_read_from_raw_argv(suite, argv, threads):
    from _harness import threads_from_argv
    assert threads_from_argv(argv) == threads


def test_timed_batch_synchronizes_around_the_batch(suite):
    from _harness import timed_batch
    events: list[str] = []
    seconds = timed_batch(lambda: events.append("call"), 3, sync=lambda: events.append("sync"))
    assert events == ["sync", "call", "call", "call", "sync"] and seconds > 0


def test_unknown_workload_is_named_in_the_error(suite, capsys):
    with pytest.raises(SystemExit) as exit_info:
        suite.main(["--only", "elementwise,nope"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "unknown workload(s) nope" in err and "lstm" in err and "startup" in err


@pytest.mark.parametrize("framework", ["ember", "torch"])
def test_each_workload_runs_through_both_apis(suite, framework):
    """The workloads are framework-neutral: every one builds and steps on the CPU in both frameworks."""
    lib = ember if framework == "ember" else pytest.importorskip("torch")
    before = set(multiprocessing.active_children())
    try:
        for workload in suite.WORKLOADS:
            lib.manual_seed(0)
            case = workload.build(lib, 1e-3, "cpu")
            first, second = case.step(), case.step()
            assert case.work > 0, workload.name
            if first is not None:
                assert bool(lib.isfinite(first).all()) and bool((first == second).all()), workload.name
    finally:  # a workload's helper process (the queue round trip's echo) lives as long as the suite's worker does
        for child in set(multiprocessing.active_children()) - before:
            child.terminate()
            child.join(timeout=10)


def test_gelu_expression_is_the_tanh_gelu(suite, torch_ref):
    from workloads import gelu_tanh
    values = np.linspace(-4, 4, 33, dtype=np.float32)
    ours = gelu_tanh(ember, ember.tensor(values)).numpy()
    reference = torch_ref.nn.functional.gelu(torch_ref.tensor(values), approximate="tanh").numpy()
    np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-6)
    assert ours[16] == 0 and ours[-1] == pytest.approx(4.0, abs=1e-3)


def test_startup_probe_runs_a_fresh_mlp_step(suite):
    """A warm probe (this session's kernel cache) reports its parts; a missing framework becomes an error."""
    probe = suite.startup_probe("ember", "cpu", 1e-3)
    assert 0 < probe["import_s"] and 0 < probe["first_step_s"] and probe["wall_s"] > probe["import_s"]
    assert "error" in suite.startup_probe("no_such_framework_xyz", "cpu", 1e-3)


def test_startup_rows_compare_with_one_torch_process(suite):
    ours = {"wall_s": 4.0, "import_s": 1.0, "first_step_s": 2.5}
    warm = {"wall_s": 2.0, "import_s": 1.0, "first_step_s": 0.5}
    theirs = {"wall_s": 2.0, "import_s": 1.5, "first_step_s": 0.25}
    lines = suite.format_startup({"ember_empty_cache": ours, "ember_warm_cache": warm, "torch": theirs})
    assert lines[1].split()[3:] == ["4.00", "2.00", "2.00", "1.00", "+", "2.50;", "1.50", "+", "0.25"]
    assert lines[2].split()[3:6] == ["2.00", "2.00", "1.00"]
    alone = suite.format_startup({"ember_empty_cache": ours, "ember_warm_cache": {"error": "exit 1"}, "torch": None})
    assert alone[1].split()[3:] == ["4.00", "-", "-", "1.00", "+", "2.50"]
    assert alone[2] == f"{'warm kernel cache':40s} ERROR ember exit 1"


def test_check_script_parses_and_runs_the_suite_on_cuda():
    script = BENCHMARKS / "gpu_check.sh"
    assert os.access(script, os.X_OK)
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "benchmarks/suite.py --device cuda" in script.read_text()
