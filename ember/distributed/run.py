"""torchrun's launcher: ``python -m ember.distributed.run --nproc-per-node N script.py args``.

Starts N copies of the script on this node with torch's environment (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...), waits for them, and when one fails stops the others (by pid:
SIGTERM, then SIGKILL after a grace period) and exits with the failing child's exit code.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

_GRACE_S = 5.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ember.distributed.run", description=__doc__.splitlines()[0])
    for name, kind, default in (("nproc-per-node", str, "1"), ("nnodes", int, 1), ("node-rank", int, 0),
                                ("master-addr", str, "127.0.0.1"), ("master-port", int, 29500),
                                ("run-id", str, None)):
        parser.add_argument(f"--{name}", f"--{name.replace('-', '_')}", type=kind, default=default,
                            dest=name.replace("-", "_"))
    parser.add_argument("--standalone", action="store_true", help="one node, a free port of its own")
    parser.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    parser.add_argument("script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    return parser


def free_loopback_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 now (for a rendezvous on one machine; tests use it too)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _nproc(value: str) -> int:
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    return int(value)


def _stop(children: list[subprocess.Popen]) -> None:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + _GRACE_S
    for child in children:
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def launch(argv: list[str]) -> int:
    """Run the launcher on ``argv``; the exit code (0, or the first failing child's)."""
    args = _parser().parse_args(argv)
    nproc = _nproc(args.nproc_per_node)
    port = free_loopback_port() if args.standalone else args.master_port
    world = nproc * args.nnodes
    command = [sys.executable, "-u"] + (["-m"] if args.module else []) + [args.script] + args.script_args
    children = []
    for local_rank in range(nproc):
        env = dict(os.environ, RANK=str(args.node_rank * nproc + local_rank), LOCAL_RANK=str(local_rank),
                   WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK=str(args.node_rank),
                   MASTER_ADDR=args.master_addr, MASTER_PORT=str(port),
                   TORCHELASTIC_RUN_ID=args.run_id or uuid.uuid4().hex)
        children.append(subprocess.Popen(command, env=env))
    try:
        while True:
            codes = [child.poll() for child in children]
            failed = [code for code in codes if code not in (None, 0)]
            if failed:
                _stop(children)
                code = failed[0]
                return code if code > 0 else 128 - code  # a signal -s as the shell reports it
            if all(code == 0 for code in codes):
                return 0
            time.sleep(0.05)
    except KeyboardInterrupt:
        _stop(children)
        return 130


def main() -> None:
    """The console entry point."""
    sys.exit(launch(sys.argv[1:]))


if __name__ == "__main__":
    main()
