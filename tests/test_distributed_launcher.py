"""``python -m ember.distributed.run`` and ``mpiexec -n N python script.py`` start working groups; a failing
child's exit code comes back and the other children are stopped."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

pytest.importorskip("mpi4py")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")

GROUP_SCRIPT = textwrap.dedent("""
    import datetime, json, os, sys
    import numpy as np
    import ember
    import ember.distributed as dist

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    t = ember.full((3,), float(rank + 1))
    dist.all_reduce(t)
    assert np.array_equal(t.numpy(), np.full(3, world * (world + 1) / 2)), t
    keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]
    record = {"rank": rank, "world": world, "args": sys.argv[1:], "env": {k: os.environ.get(k) for k in keys}}
    with open(os.path.join(os.environ["OUT_DIR"], f"rank{rank}.json"), "w") as f:
        json.dump(record, f)
    dist.destroy_process_group()
""")

FAILING_SCRIPT = textwrap.dedent("""
    import os, sys, time
    pid_file = os.path.join(os.environ["OUT_DIR"], "pid0")
    if os.environ["RANK"] == "1":
        deadline = time.monotonic() + 30
        while not os.path.exists(pid_file) and time.monotonic() < deadline:
            time.sleep(0.05)
        sys.exit(3)
    with open(pid_file + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(pid_file + ".tmp", pid_file)
    time.sleep(120)
""")


def _run(command: list[str], out_dir: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess:
    env = dict(os.environ, OUT_DIR=out_dir, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env = {k: v for k, v in env.items() if not k.startswith("PMI_") and k not in ("RANK", "WORLD_SIZE")}
    return subprocess.run(command, env=env, timeout=timeout_s, capture_output=True, text=True)


def _records(out_dir, world: int) -> list[dict]:
    return [json.load(open(os.path.join(out_dir, f"rank{r}.json"))) for r in range(world)]


def test_launcher_sets_torchrun_environment_and_forms_a_group(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(GROUP_SCRIPT)
    result = _run([sys.executable, "-m", "ember.distributed.run", "--nproc_per_node", "2", "--master-port", "0",
                   "--standalone", str(script), "--lr", "0.1"], str(tmp_path))
    assert result.returncode == 0, result.stderr
    records = _records(tmp_path, 2)
    for r, record in enumerate(records):
        env = record["env"]
        assert (record["rank"], record["world"], record["args"]) == (r, 2, ["--lr", "0.1"])
        assert (env["RANK"], env["LOCAL_RANK"], env["WORLD_SIZE"], env["LOCAL_WORLD_SIZE"]) == (str(r), str(r), "2", "2")
        assert env["MASTER_ADDR"] == "127.0.0.1" and int(env["MASTER_PORT"]) > 0
    assert records[0]["env"]["MASTER_PORT"] == records[1]["env"]["MASTER_PORT"]


def test_mpiexec_start_takes_rank_and_size_from_mpi(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(GROUP_SCRIPT)
    result = _run([MPIEXEC, "-n", "3", sys.executable, str(script)], str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert [(r["rank"], r["world"]) for r in _records(tmp_path, 3)] == [(0, 3), (1, 3), (2, 3)]


def test_launcher_propagates_a_failure_and_stops_the_others(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(FAILING_SCRIPT)
    started = time.monotonic()
    result = _run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2", "--standalone",
                   str(script)], str(tmp_path), timeout_s=60)
    assert result.returncode == 3
    assert time.monotonic() - started < 30
    pid = int((tmp_path / "pid0").read_text())  # rank 0, asleep when rank 1 failed: stopped by the launcher
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
