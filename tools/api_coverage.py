"""List the public functions of torch that ember lacks, and the share covered.

Run (needs torch): python tools/api_coverage.py [--missing]
Namespaces compared: torch, torch.Tensor, torch.linalg, torch.nn.functional.
"""
from __future__ import annotations

import argparse
import inspect
from types import ModuleType

import ember


def _public_callables(namespace: object) -> set[str]:
    names = set()
    for name in dir(namespace):
        if name.startswith("_"):
            continue
        try:
            value = getattr(namespace, name)
        except Exception:  # some torch attributes raise on access
            continue
        if callable(value) and not inspect.isclass(value):
            names.add(name)
    return names


def _ember_namespace(path: str) -> object | None:
    target: object = ember
    for part in path.split(".")[1:]:
        target = getattr(target, part, None)
        if target is None:
            return None
    return target


def compare(torch: ModuleType) -> list[tuple[str, set[str], set[str]]]:
    """(namespace, torch's names, the ones ember lacks) for each compared namespace."""
    pairs = [("torch", torch, "ember"), ("torch.Tensor", torch.Tensor, "ember.Tensor"),
             ("torch.linalg", torch.linalg, "ember.linalg"),
             ("torch.nn.functional", torch.nn.functional, "ember.nn.functional")]
    rows = []
    for label, theirs, ours_path in pairs:
        wanted = _public_callables(theirs)
        ours = _ember_namespace(ours_path)
        have = {n for n in wanted if ours is not None and hasattr(ours, n)}
        rows.append((label, wanted, wanted - have))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--missing", action="store_true", help="print every missing name")
    args = parser.parse_args()
    import torch

    total = covered = 0
    for label, wanted, missing in compare(torch):
        total += len(wanted)
        covered += len(wanted) - len(missing)
        print(f"{label:22s} {len(wanted) - len(missing):5d} / {len(wanted):5d} covered "
              f"({100 * (len(wanted) - len(missing)) / max(1, len(wanted)):.1f}%)")
        if args.missing:
            for name in sorted(missing):
                print(f"    missing {label}.{name}")
    print(f"{'all':22s} {covered:5d} / {total:5d} covered ({100 * covered / max(1, total):.1f}%)")


if __name__ == "__main__":
    main()
