"""Per-op Python overhead: ``a + b`` on 1-element tensors, and a 1000-add chain with backward.

Run: python benchmarks/overhead.py [--threads N]
"""
from __future__ import annotations

import argparse

import ember
from _harness import load_torch, median_time, ratio_row


def _workloads(lib):
    a, b = lib.ones(1), lib.ones(1)
    ag, bg = lib.ones(1, requires_grad=True), lib.ones(1, requires_grad=True)

    def chain():
        x = ag
        for _ in range(1000):
            x = x + bg
        x.backward()

    return {
        "a + b, 1 element, no grad": (lambda: a + b, 2000),
        "a + b, 1 element, requires_grad": (lambda: ag + bg, 2000),
        "1000 chained adds + backward (per op)": (chain, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    ember.set_num_threads(args.threads)
    torch = load_torch(args.threads)
    ours = _workloads(ember)
    theirs = _workloads(torch) if torch is not None else {}
    for name, (fn, number) in ours.items():
        per_op = 1000 if "chained" in name else 1
        e = median_time(fn, number) / per_op
        t = median_time(theirs[name][0], number) / per_op if name in theirs else None
        print(ratio_row(name, e, t))


if __name__ == "__main__":
    main()
