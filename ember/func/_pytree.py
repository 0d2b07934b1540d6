"""Nested containers of tensors (tuples, lists, dicts, namedtuples) flattened to a list of leaves and rebuilt:
how the transforms take a model's parameter dict or a tuple of inputs as one argument, as torch.func does."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple


class TreeSpec(NamedTuple):
    """The shape of a tree: its container type (None for a leaf), its dict keys, and its children's specs."""

    kind: Any
    keys: tuple
    children: tuple

    @property
    def num_leaves(self) -> int:
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)


LEAF = TreeSpec(None, (), ())


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """(the leaves in order, the spec that ``tree_unflatten`` rebuilds the tree from)."""
    if isinstance(tree, dict):
        keys = tuple(tree)
        children = [tree_flatten(tree[k]) for k in keys]
    elif isinstance(tree, (list, tuple)):
        keys = ()
        children = [tree_flatten(v) for v in tree]
    else:
        return [tree], LEAF
    leaves = [leaf for child_leaves, _ in children for leaf in child_leaves]
    return leaves, TreeSpec(type(tree), keys, tuple(spec for _, spec in children))


def tree_unflatten(leaves: list, spec: TreeSpec) -> Any:
    """The tree of ``spec`` with ``leaves`` in its leaf positions."""
    it = iter(leaves)
    return _build(it, spec)


def _build(it: Any, spec: TreeSpec) -> Any:
    if spec.kind is None:
        return next(it)
    values = [_build(it, child) for child in spec.children]
    if spec.keys or issubclass(spec.kind, dict):
        return spec.kind(zip(spec.keys, values))
    if _is_namedtuple_type(spec.kind):
        return spec.kind(*values)
    return spec.kind(values)


def _is_namedtuple_type(kind: type) -> bool:
    return issubclass(kind, tuple) and hasattr(kind, "_fields")


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)


def broadcast_prefix(prefix: Any, tree: Any, what: str) -> list:
    """One entry of ``prefix`` per leaf of ``tree``: a non-container entry of ``prefix`` covers its whole subtree
    (how ``in_dims=0`` covers every tensor of an argument)."""
    if isinstance(prefix, (list, tuple, dict)) and not _is_namedtuple_type(type(prefix)):
        if isinstance(prefix, dict) != isinstance(tree, dict) or not isinstance(tree, (list, tuple, dict)) or \
                len(prefix) != len(tree):
            raise ValueError(f"{what} is not compatible with the structure of the inputs: got {prefix!r} for an "
                             f"input of type {type(tree).__name__}")
        items = [(prefix[k], tree[k]) for k in tree] if isinstance(tree, dict) else list(zip(prefix, tree))
        return [entry for p, t in items for entry in broadcast_prefix(p, t, what)]
    return [prefix] * len(tree_flatten(tree)[0])
