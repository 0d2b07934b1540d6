#!/usr/bin/env bash
# The prepared check for a machine with a real NVIDIA GPU: ember's CUDA tests on hardware, then the GPU benchmarks.
#
# Run from anywhere:   OUT=/some/empty/dir benchmarks/gpu_check.sh      (OUT defaults to ./gpu_check_out)
# Needs: python with numpy, numba, numba-cuda, pytest, hypothesis (torch with CUDA optional); no network. Where
# pytest or hypothesis is missing, make them beside the checkout first (`pip install --target .gpu_deps pytest
# hypothesis`, ignored by git) and bring that folder along: the script puts it on PYTHONPATH.
#
# Stages, each under its own `timeout` budget so the whole run fits in about 9 minutes, and each run whatever
# became of the stage before it:
#   1. env    (30 s)   nvidia-smi, Python and package versions, what ember and torch see  -> $OUT/env.txt
#   2. tests  (300 s)  pytest tests/cuda on the GPU (EMBER_TEST_CUDA=1, the simulator off, tests marked `gpu`
#                      included), stopping after $MAXFAIL failures; a test running past 120 s dumps every
#                      thread's stack (pytest's faulthandler_timeout); with pytest-xdist installed, $XDIST_WORKERS
#                      processes share the GPU, a test file each (Numba's compiling is the slow part)
#                                                                       -> $OUT/tests.txt, $OUT/junit.xml
#   3. bench  (200 s)  benchmarks/suite.py --device cuda, ember against torch CUDA, start-up probes last
#                                                                       -> $OUT/bench.txt, $OUT/bench.json
# A timeout sends SIGINT first (pytest then still writes its summary and junit file; suite.py has already written
# the rows measured so far to bench.json), then SIGKILL 15 s later. Each stage's exit status and seconds go to
# $OUT/status.txt (124: it ran out of time); all output is shown as well. The script exits 0 only when every
# stage did.
set -uo pipefail

OUT="${OUT:-./gpu_check_out}"
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"
PYTHON="${PYTHON:-python}"
MAXFAIL="${MAXFAIL:-20}"
XDIST_WORKERS="${XDIST_WORKERS:-8}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1

unset NUMBA_ENABLE_CUDASIM
export EMBER_TEST_CUDA=1
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
if [ -d "$ROOT/.gpu_deps" ]; then export PYTHONPATH="$PYTHONPATH:$ROOT/.gpu_deps"; fi
: > "$OUT/status.txt"
failed=0

# stage NAME SECONDS LOG COMMAND...: run COMMAND under a time budget, its output shown and kept in LOG, and
# record its exit status and duration.
stage() {
    local name="$1" budget="$2" log="$3" start rc
    shift 3
    start=$SECONDS
    timeout -s INT -k 15 "$budget" "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    echo "$name rc=$rc seconds=$((SECONDS - start)) budget=$budget" | tee -a "$OUT/status.txt"
    [ "$rc" -eq 0 ] || failed=1
}

describe_environment() {
    date -u
    git -C "$ROOT" log -1 --oneline 2>/dev/null
    git -C "$ROOT" status --short 2>/dev/null
    nvidia-smi || echo "nvidia-smi: not available"
    "$PYTHON" - <<'EOF'
import importlib.metadata as meta
import platform

print("python", platform.python_version(), platform.platform())
for package in ("numpy", "numba", "numba-cuda", "torch", "pytest", "hypothesis"):
    try:
        print(package, meta.version(package))
    except meta.PackageNotFoundError:
        print(package, "not installed")
try:
    from numba import cuda
    print("numba.cuda available", cuda.is_available(), "driver", cuda.cudadrv.driver.driver.get_version(),
          "runtime", cuda.runtime.get_version())
except Exception as exc:
    print("numba.cuda:", type(exc).__name__, exc)
try:
    import torch
    print("torch cuda", torch.version.cuda, "available", torch.cuda.is_available())
except Exception as exc:
    print("torch:", type(exc).__name__, exc)
import ember
print("ember", ember.__version__, "cuda available", ember.cuda.is_available())
if ember.cuda.is_available():
    print("ember device", ember.cuda.get_device_name(), "capability", ember.cuda.get_device_capability())
EOF
}
export -f describe_environment
export ROOT PYTHON

stage env 30 "$OUT/env.txt" bash -c describe_environment
parallel=()
if "$PYTHON" -c "import xdist" 2>/dev/null; then
    parallel=(-n "$XDIST_WORKERS" --dist loadfile)
fi
stage tests 300 "$OUT/tests.txt" "$PYTHON" -m pytest -q -p no:cacheprovider tests/cuda "${parallel[@]}" \
    --maxfail="$MAXFAIL" -rfE --durations=15 -o faulthandler_timeout=120 --junitxml="$OUT/junit.xml"
stage bench 200 "$OUT/bench.txt" "$PYTHON" benchmarks/suite.py --device cuda --budget 2 --json "$OUT/bench.json"
exit "$failed"
