"""Contractions: einsum, tensordot, kron, trace, cdist, inner (cross lives in ``ember.linalg``).

einsum is reduced to differentiable ember ops (diagonal for repeated
subscripts, sum for subscripts seen once, permute/reshape and a batched
``matmul`` per pair of operands, left to right), so every operand's gradient
is itself such a contraction and double backward needs no extra code.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Sequence

import numpy as np

from ..autograd.function import Function
from . import autocast_policy, dtypes
from ._dispatch import ascontiguous, broadcast_shapes, sum_to_shape
from .elementwise import binary, mul, where
from .matmul import matmul
from .tensor import Tensor, _wrap_dim
from .out_arg import with_out
from .views import diagonal, permute, reshape, squeeze, unsqueeze
from .arguments import tensor_args


def _same_dtype(tensors: Sequence[Tensor]) -> None:
    """torch's CPU contractions need one dtype: "expected scalar type Float but found Double"."""
    for t in tensors[1:]:
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(f"expected scalar type {tensors[0].dtype.scalar_type_name} but found "
                               f"{t.dtype.scalar_type_name}")


def _sum(x: Tensor, dims: Sequence[int], keep_dtype: bool = True) -> Tensor:
    """Sum over ``dims``; in ``x``'s dtype, or (``keep_dtype=False``) with ``sum``'s int64 rule for integers."""
    if not dims:
        return x
    return x.sum(tuple(dims), dtype=x.dtype) if keep_dtype else x.sum(tuple(dims))


# ----------------------------------------------------------------------------- einsum: parsing
_ELLIPSIS = "..."


def _is_label(c: str) -> bool:
    return c.isascii() and c.isalpha()


def _bad_char(i: int) -> RuntimeError:
    return RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, subscripts must be "
                        "in [a-zA-Z]")


def _parse_terms(equation: str, start: int, stop: int, allow_comma: bool) -> list[list[str]]:
    """Split ``equation[start:stop]`` into terms of labels and ``...``, with torch's errors."""
    terms: list[list[str]] = [[]]
    i = start
    while i < stop:
        c = equation[i]
        if c == " ":
            i += 1
        elif c == "," and allow_comma:
            terms.append([])
            i += 1
        elif c == ".":
            where = f"operand {len(terms) - 1}" if allow_comma else "the output"
            if _ELLIPSIS in terms[-1]:
                raise RuntimeError(f"einsum(): found '.' for {where} for which an ellipsis was already found")
            if equation[i:i + 3] != _ELLIPSIS:
                raise RuntimeError(f"einsum(): found '.' for {where} that is not part of any ellipsis")
            terms[-1].append(_ELLIPSIS)
            i += 3
        elif _is_label(c):
            terms[-1].append(c)
            i += 1
        else:
            raise _bad_char(i)
    return terms


@functools.lru_cache(maxsize=256)
def _parse(equation: str, ndims: tuple[int, ...]) -> tuple[tuple[tuple[Any, ...], ...], tuple[Any, ...]]:
    """Labels per operand and for the output; ellipsis dims become ints 0..E-1 (E = widest ellipsis).

    Depends only on the equation and the operands' ranks, so it is cached.
    """
    arrow = equation.find("->")
    lhs_end = arrow if arrow >= 0 else len(equation)
    terms = _parse_terms(equation, 0, lhs_end, True)
    if len(terms) < len(ndims):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    if len(terms) > len(ndims):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    widths = []
    for k, (term, ndim) in enumerate(zip(terms, ndims)):
        named = len(term) - (_ELLIPSIS in term)
        if _ELLIPSIS not in term and named != ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) does not match the "
                               f"number of dimensions ({ndim}) for operand {k} and no ellipsis was given")
        if named > ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) is more than the "
                               f"number of dimensions ({ndim}) for operand {k}")
        widths.append(ndim - named if _ELLIPSIS in term else 0)
    width = max(widths, default=0)
    labels = []
    for term, w in zip(terms, widths):
        expanded: list[Any] = []
        for s in term:
            expanded.extend(range(width - w, width) if s == _ELLIPSIS else [s])
        labels.append(tuple(expanded))
    labels = tuple(labels)
    if arrow < 0:
        counts: dict[str, int] = {}
        for term in terms:
            for s in term:
                counts[s] = counts.get(s, 0) + 1
        return labels, tuple(range(width)) + tuple(sorted(s for s, n in counts.items() if n == 1 and s != _ELLIPSIS))
    for i in range(arrow + 2, len(equation)):
        if equation[i] in "-,>":
            raise _bad_char(i)
    (out_term,) = _parse_terms(equation, arrow + 2, len(equation), False)
    seen = {s for term in terms for s in term}
    output: list[Any] = []
    for s in out_term:
        if s in output or (s == _ELLIPSIS and 0 in output):
            raise RuntimeError(f"einsum(): output subscript {s} appears more than once in the output")
        if s != _ELLIPSIS and s not in seen:
            raise RuntimeError(f"einsum(): output subscript {s} does not appear in the equation for any input operand")
        output.extend(range(width) if s == _ELLIPSIS else [s])
    return labels, tuple(output)


def _check_sizes(operands: Sequence[Tensor], labels: Sequence[Sequence[Any]]) -> None:
    """Each subscript's sizes must agree (or be 1, which broadcasts) across operands."""
    sizes: dict[Any, int] = {}
    for k, (t, term) in enumerate(zip(operands, labels)):
        mine: dict[Any, int] = {}
        for s, n in zip(term, t.shape):
            if s in mine and mine[s] != n:
                raise RuntimeError(f"einsum(): subscript {s} is repeated for operand {k} but the sizes don't match, "
                                   f"{n} != {mine[s]}")
            mine[s] = n
        for s, n in mine.items():
            seen = sizes.get(s, 1)
            if n != 1 and seen != 1 and n != seen:
                if isinstance(s, int):
                    raise RuntimeError(f"einsum(): dimension {s} covered by ellipsis in operand {k}has size {n} which "
                                       f"does not broadcast with previously seen ellipsis with size {seen} for the "
                                       "respective dimension")
                raise RuntimeError(f"einsum(): subscript {s} has size {n} for operand {k} which does not broadcast "
                                   f"with previously seen size {seen}")
            sizes[s] = max(seen, n) if n != 1 else seen


# ----------------------------------------------------------------------------- einsum: evaluation
def _permuted(x: Tensor, order: list[int]) -> Tensor:
    """``permute``, skipped when the order is already the identity (each view costs a graph node)."""
    return x if order == sorted(order) else permute(x, order)


def _reshaped(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    return x if tuple(x.shape) == tuple(shape) else reshape(x, shape)


def _take_diagonals(x: Tensor, term: list[Any]) -> tuple[Tensor, list[Any]]:
    """Collapse every repeated subscript of one operand onto its diagonal."""
    term = list(term)
    while len(set(term)) < len(term):
        s = next(s for s in term if term.count(s) > 1)
        p = term.index(s)
        q = term.index(s, p + 1)
        x = diagonal(x, 0, p, q)
        term = [u for i, u in enumerate(term) if i not in (p, q)] + [s]
    return x, term


def _drop(x: Tensor, term: list[Any], gone: set, keep_dtype: bool = True) -> tuple[Tensor, list[Any]]:
    """Sum away the subscripts in ``gone``."""
    dims = [i for i, s in enumerate(term) if s in gone]
    return _sum(x, dims, keep_dtype), [s for s in term if s not in gone]


def _contract(a: Tensor, la: list[Any], b: Tensor, lb: list[Any], keep: set) -> tuple[Tensor, list[Any]]:
    """One pairwise step: shared subscripts in ``keep`` are batch dims, the other shared ones are summed."""
    if a.dtype is not b.dtype:  # an integer operand summed up front became int64, as in torch
        dt = dtypes.promote_types(a.dtype, b.dtype)
        a, b = a.to(dt), b.to(dt)
    for s in [s for s in la if s in lb and s not in keep]:
        na, nb = a.shape[la.index(s)], b.shape[lb.index(s)]
        if na != nb:  # a size-1 side broadcasts: it leaves the sum, the other side is summed alone
            if na == 1:
                a, la = squeeze(a, la.index(s)), [u for u in la if u != s]
            else:
                b, lb = squeeze(b, lb.index(s)), [u for u in lb if u != s]
    a, la = _drop(a, la, {s for s in la if s not in lb and s not in keep})
    b, lb = _drop(b, lb, {s for s in lb if s not in la and s not in keep})
    batch = [s for s in la if s in lb and s in keep]
    summed = [s for s in la if s in lb and s not in keep]
    free_a = [s for s in la if s not in lb]
    free_b = [s for s in lb if s not in la]
    a = _permuted(a, [la.index(s) for s in batch + free_a + summed])
    b = _permuted(b, [lb.index(s) for s in batch + summed + free_b])
    nb = len(batch)
    sa, sb = a.shape, b.shape
    fa_sizes, fb_sizes = sa[nb:nb + len(free_a)], sb[nb + len(summed):]
    k = math.prod(sa[nb + len(free_a):])
    a = _reshaped(a, sa[:nb] + (math.prod(fa_sizes), k))
    b = _reshaped(b, sb[:nb] + (k, math.prod(fb_sizes)))
    if a.numel() and b.numel():
        out = matmul(a, b)
    else:  # empty operands: a broadcast product keeps the graph (matmul's batching rejects size-0 batches)
        out = _sum(mul(unsqueeze(a, -1), unsqueeze(b, -3)), [-2])
    batch_shape = broadcast_shapes(sa[:nb], sb[:nb])
    return _reshaped(out, batch_shape + fa_sizes + fb_sizes), batch + free_a + free_b


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation with torch's equation language (implicit/explicit output, ``...``, diagonals)."""
    if autocast_policy.ACTIVE and autocast_policy.covers("einsum", operands):
        return autocast_policy.run("einsum", einsum, equation, *operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str) or not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    for t in operands:
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): operands must be Tensors, got {type(t).__name__}")
    labels, output = _parse(equation, tuple(t.ndim for t in operands))
    _check_sizes(operands, labels)
    _same_dtype(operands)
    if operands[0].dtype is dtypes.bool and len(operands) > 1:
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    out_set = set(output)
    terms = [_take_diagonals(t, term) for t, term in zip(operands, labels)]
    alone = [set(term) - out_set - {s for j, (_, other) in enumerate(terms) if j != i for s in other}
             for i, (_, term) in enumerate(terms)]
    terms = [_drop(x, term, gone, keep_dtype=False) for (x, term), gone in zip(terms, alone)]
    x, term = terms[0]
    for i in range(1, len(terms)):
        later = {s for _, other in terms[i + 1:] for s in other}
        x, term = _contract(x, term, terms[i][0], terms[i][1], out_set | later)
    x, term = _drop(x, term, set(term) - out_set)
    order = [term.index(s) for s in output]
    return permute(x, order) if any(x is t for t in operands) else _permuted(x, order)  # a view, never the input


# ----------------------------------------------------------------------------- tensordot / inner / kron
def _dims_list(value: Any) -> list[int]:
    if isinstance(value, Tensor):
        return [int(v) for v in value._array.reshape(-1)]
    if isinstance(value, (int, np.integer)):
        return [int(value)]
    return [int(v) for v in value]


@tensor_args
@with_out
def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Contract the last ``dims`` dims of ``a`` with the first of ``b`` (or explicit lists of dims)."""
    if autocast_policy.ACTIVE and autocast_policy.covers("tensordot", a):
        return autocast_policy.run("tensordot", tensordot, a, b, dims)
    if isinstance(dims, Tensor) and dims.ndim == 0 or isinstance(dims, (int, np.integer)):
        n = int(dims)
        if n < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={n}")
        if n > a.ndim or n > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={n}")
        dims_a, dims_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        if isinstance(dims, (list, tuple)) and len(dims) == 2 and all(isinstance(d, int) for d in dims):
            raise TypeError("tensordot(): argument 'dims_self' (position 3) must be tuple of ints, not int")
        dims_a, dims_b = (_dims_list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    dims_a = [_wrap_dim(d, a.ndim, "tensordot") for d in dims_a]
    dims_b = [_wrap_dim(d, b.ndim, "tensordot") for d in dims_b]
    for ds in (dims_a, dims_b):
        for d in ds:
            if ds.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim {da} "
                               f"and second has size {b.shape[db]} in dim {db}")
    la = [f"a{i}" for i in range(a.ndim)]
    lb = [f"b{i}" for i in range(b.ndim)]
    for da, db in zip(dims_a, dims_b):
        lb[db] = la[da]
    free = [s for s in la if s not in lb] + [s for s in lb if s not in la]
    x, term = _contract(a, la, b, lb, set(free))
    return _permuted(x, [term.index(s) for s in free])


@tensor_args
@with_out
def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum of products over the last dims (a scalar factor when either is 0-D)."""
    if input.ndim == 0 or other.ndim == 0:
        return mul(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


@tensor_args
@with_out(cast=True)
def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product: every element of ``input`` scales a copy of ``other`` (ranks padded with 1s)."""
    n = max(input.ndim, other.ndim)
    sa = (1,) * (n - input.ndim) + tuple(input.shape)
    sb = (1,) * (n - other.ndim) + tuple(other.shape)
    a = reshape(input, tuple(v for s in sa for v in (s, 1)))
    b = reshape(other, tuple(v for s in sb for v in (1, s)))
    return reshape(mul(a, b), tuple(x * y for x, y in zip(sa, sb)))


# ----------------------------------------------------------------------------- trace
@tensor_args
def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a matrix (integers sum to int64)."""
    if autocast_policy.ACTIVE and autocast_policy.covers("trace", input):
        return autocast_policy.run("trace", trace, input)
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input.dtype is dtypes.bool:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return diagonal(input).sum()


# ----------------------------------------------------------------------------- cdist
def _pairwise_diff(x1: np.ndarray | Tensor, x2: Any) -> Any:
    """x1[..., i, :] - x2[..., j, :] for all pairs, as (..., P, R, M)."""
    if isinstance(x1, Tensor):
        return binary("sub", unsqueeze(x1, -2), unsqueeze(x2, -3))
    return x1[..., :, None, :] - x2[..., None, :, :]


class Cdist(Function):
    """p-norm distances between the rows of two batches of matrices."""

    @staticmethod
    def forward(ctx, x1: Tensor, x2: Tensor, p: float):
        d = np.abs(_pairwise_diff(x1._array, x2._array))
        if p == 0:
            out = np.count_nonzero(d, axis=-1).astype(d.dtype)
        elif p == 1:
            out = d.sum(-1)
        elif p == 2:
            out = np.sqrt((d * d).sum(-1))
        elif math.isinf(p):
            out = d.max(-1, initial=0)
        else:
            out = (d ** p).sum(-1) ** (1.0 / p)
        result = Tensor._make(ascontiguous(out, dtype=x1._array.dtype))
        ctx.p = p
        ctx.save_for_backward(x1, x2, result)
        return result

    @staticmethod
    def backward(ctx, g: Tensor):
        x1, x2, dist = ctx.saved_tensors
        if ctx.p == 0:
            return x1.new_zeros(x1.shape) if ctx.needs_input_grad[0] else None, \
                x2.new_zeros(x2.shape) if ctx.needs_input_grad[1] else None, None
        diff = _pairwise_diff(x1, x2)
        weight = _cdist_weight(diff, unsqueeze(dist, -1), ctx.p)
        gd = mul(unsqueeze(g, -1), weight)
        g1 = sum_to_shape(gd.sum(-2), x1.shape) if ctx.needs_input_grad[0] else None
        g2 = sum_to_shape(-gd.sum(-3), x2.shape) if ctx.needs_input_grad[1] else None
        return g1, g2, None


def _cdist_weight(diff: Tensor, dist: Tensor, p: float) -> Tensor:
    """d dist / d diff, zero where the distance (or, for p < 1, the coordinate difference) is zero."""
    sign = diff.sign()
    if p == 1:
        return sign
    if math.isinf(p):
        return mul(sign, binary("eq", diff.abs(), dist))
    nonzero = binary("ne", dist, 0)
    safe = where(nonzero, dist, 1.0)
    if p == 2:
        return mul(diff / safe, nonzero)
    if p < 1:
        zero = binary("eq", diff, 0)
        magnitude = where(zero, 1.0, diff.abs()) ** (p - 1) * binary("ne", diff, 0)
    else:
        magnitude = diff.abs() ** (p - 1)
    return mul(sign * magnitude / safe ** (p - 1), nonzero)


_COMPUTE_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


@tensor_args
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """Distances ``||x1[..., i, :] - x2[..., j, :]||_p`` for every pair of rows, batch dims broadcast.

    Every ``compute_mode`` computes the differences directly (exact, but it holds a (..., P, R, M) temporary):
    torch's matrix-product shortcut for p=2 trades accuracy for memory.
    """
    if autocast_policy.ACTIVE and autocast_policy.covers("cdist", x1):
        return autocast_policy.run("cdist", cdist, x1, x2, p, compute_mode)
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {x.dtype.scalar_type_name}")
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    _same_dtype((x1, x2))
    if x1.dtype.compute is not x1.dtype:  # float16 and bfloat16
        raise NotImplementedError(f"\"cdist\" not implemented for '{x1.dtype.scalar_type_name}'")
    broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    return Cdist.apply(x1, x2, float(p))


__all__ = ["einsum", "tensordot", "inner", "kron", "trace", "cdist"]

TENSOR_METHODS: dict = {"kron": kron, "inner": inner, "trace": trace}
