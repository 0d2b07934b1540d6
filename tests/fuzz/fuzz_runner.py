"""Run a fuzz pass in a child process, so a call that kills the interpreter fails a test with that call named.

A child script takes ``--progress FILE --report FILE`` and writes each case to the progress file before it runs it,
then a JSON report at the end. A report is kept in ``$EMBER_FUZZ_REPORT_DIR`` (default: pytest's tmp dir).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
CHILD_TIMEOUT_S = 900


def run_child(tmp_path: Path, name: str, child: str, extra_args: list[str], extra_env: dict[str, str]) -> dict:
    """Run the pass script ``child``; fail with the last case it started if it died, else return its report."""
    progress, report = tmp_path / f"{name}.progress", tmp_path / f"{name}.json"
    env = dict(os.environ, **extra_env)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, str(HERE / child), "--progress", str(progress),
                           "--report", str(report), *extra_args], env=env, capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT_S)
    if proc.returncode != 0 or not report.exists():
        lines = progress.read_text().splitlines() if progress.exists() else []
        last = lines[-1] if lines else "(no case started)"
        pytest.fail(f"fuzz child died (exit {proc.returncode}) during\n{last}\n--- stderr ---\n{proc.stderr[-4000:]}")
    result = json.loads(report.read_text())
    keep = Path(os.environ.get("EMBER_FUZZ_REPORT_DIR", tmp_path))
    keep.mkdir(parents=True, exist_ok=True)
    (keep / f"fuzz_{name}.json").write_text(json.dumps(result, indent=1))
    return result
