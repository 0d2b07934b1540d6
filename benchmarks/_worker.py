"""One framework in a process of its own, serving suite.py: it builds one workload and times its batches on request.

``python _worker.py LIB DEVICE THREADS`` pins the thread pools (before numpy, numba or LIB is imported), loads LIB
(ember or torch) at THREADS threads and writes one JSON line: ``{"ready": {...}}`` (its file, version, threads and,
on CUDA, device) or ``{"absent": why}``, after which it exits. Then every JSON request line on stdin gets one JSON
line back, the steps of a ``suite.Contender`` run here:

    {"op": "prepare", "workload": NAME, "scale": F}   build, cold and warm call, untimed warm-up batch
    {"op": "batch"}                                   one timed batch
        both answer {"warm_s": S, "number": N} (the batch shape), or the side's error once it has failed
    {"op": "result"}                                  the side's result (``Contender.result``)

Replies go to the process's original stdout; whatever the framework prints is sent to stderr, so it cannot garble
them. The end of stdin ends the worker.
"""
from __future__ import annotations

import sys

from _harness import pin_threads

if __name__ == "__main__":
    pin_threads(int(sys.argv[3]))  # before numpy, numba or the framework is imported

import importlib  # noqa: E402 - the thread pools must be sized first
import json  # noqa: E402
import os  # noqa: E402
from typing import Any, Iterable, TextIO  # noqa: E402

from suite import Contender  # noqa: E402
from workloads import WORKLOADS, Workload  # noqa: E402


def load(name: str, device: str, threads: int) -> Any:
    """Framework ``name`` at ``threads`` threads, usable on ``device`` (TF32 off in torch: a float32 comparison)."""
    lib = importlib.import_module(name)
    lib.set_num_threads(threads)
    if device == "cuda":
        if not lib.cuda.is_available():
            raise LookupError("no CUDA device")
        if name == "torch":
            lib.backends.cuda.matmul.allow_tf32 = False
            lib.backends.cudnn.allow_tf32 = False
    return lib


def describe(lib: Any, device: str) -> dict:
    """What the suite's header reports about this side."""
    info = {"file": lib.__file__, "version": lib.__version__, "threads": lib.get_num_threads()}
    if device == "cuda":
        info["device_name"] = lib.cuda.get_device_name()
        info["simulator"] = lib.__name__ == "ember" and lib.cuda.is_simulator()
    return info


def serve(contender: Contender, device: str, requests: Iterable[str], replies: TextIO) -> None:
    """Answer each request line with one reply line (the module docstring lists them)."""
    known = {w.name: w for w in WORKLOADS}
    workload: Workload | None = None
    for line in requests:
        request = json.loads(line)
        if request["op"] == "prepare":
            workload = known[request["workload"]]
            contender.attempt(contender.prepare, workload, request["scale"], device)
        elif request["op"] == "batch":
            contender.attempt(contender.time_batch)
        if request["op"] == "result":
            reply = contender.result(workload)
        else:
            reply = contender.error or {"warm_s": contender.warm_s, "number": contender.number}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main(name: str, device: str, threads: int) -> int:
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # from here on, file descriptor 1 (sys.stdout, C libraries' prints) is stderr
    try:
        lib = load(name, device, threads)
    except Exception as exc:  # noqa: BLE001 - an unusable framework is reported, not raised
        replies.write(json.dumps({"absent": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 0
    replies.write(json.dumps({"ready": describe(lib, device)}) + "\n")
    replies.flush()
    serve(Contender(name, lib, lib.cuda.synchronize if device == "cuda" else None), device, sys.stdin, replies)
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    except KeyboardInterrupt:  # the suite was interrupted (its whole process group gets the SIGINT)
        raise SystemExit(130) from None
