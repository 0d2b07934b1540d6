"""Start-up cost: import, first op, with an empty and with a warm kernel cache, in fresh processes.

Run: python benchmarks/startup.py
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

SCRIPT = """
import time
t0 = time.perf_counter()
import {lib} as torch
t1 = time.perf_counter()
x = torch.ones(8, 8, requires_grad=True)
y = ((x * 2 + 1).tanh() @ x).sum()
y.backward()
t2 = time.perf_counter()
print(f"{{t1 - t0:.3f}} {{t2 - t1:.3f}}")
"""


def _run(lib: str, env: dict) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(lib=lib)], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("empty cache", "warm cache"):
            imp, first = _run("ember", env)
            print(f"ember  {label:12s} import {imp:6.2f} s   first forward+backward {first:6.2f} s")
    try:
        imp, first = _run("torch", dict(os.environ))
        print(f"torch  {'':12s} import {imp:6.2f} s   first forward+backward {first:6.2f} s")
    except (subprocess.CalledProcessError, ValueError, IndexError):
        print("torch not installed: no comparison")


if __name__ == "__main__":
    main()
