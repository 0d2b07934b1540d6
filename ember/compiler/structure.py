"""Nested arguments and results: the containers ``ember.compile`` walks to find tensors, and rebuilds.

Tuples (named tuples and ``return_types`` included), lists and dicts (``OrderedDict`` included) are walked;
anything else is a leaf.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

__all__ = ["leaves", "rebuild"]


def _rebuild_tuple(kind: type, items: list) -> tuple:
    if kind is tuple:
        return tuple(items)
    if hasattr(kind, "_fields"):  # a named tuple takes its fields as arguments
        return kind(*items)
    return kind(items)


def rebuild(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """``value`` with every leaf replaced by ``leaf(leaf_value)``, containers rebuilt as their own types."""
    if isinstance(value, tuple):
        return _rebuild_tuple(type(value), [rebuild(v, leaf) for v in value])
    if isinstance(value, list):
        items = [rebuild(v, leaf) for v in value]
        return items if type(value) is list else type(value)(items)
    if isinstance(value, dict):
        items = [(k, rebuild(v, leaf)) for k, v in value.items()]
        return dict(items) if type(value) is dict else type(value)(items)
    return leaf(value)


def leaves(value: Any) -> Iterator[Any]:
    """Every leaf of ``value``, in the order ``rebuild`` visits them."""
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from leaves(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from leaves(v)
    else:
        yield value
