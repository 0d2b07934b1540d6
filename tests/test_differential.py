"""Differential suite: every row runs one callable against ember and against PyTorch and compares the results.

Each row's callable is written against torch's API, so ``f(ember, *xs)`` and ``f(torch, *xs)`` run the same code.
Shapes, dtypes and values must agree; for differentiable rows the input gradients of ``(out * weight).sum()``
must agree as well (float64 throughout).
"""
from __future__ import annotations

import zlib
from typing import Any, Callable, NamedTuple

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

# torch's own advisories about the reference calls (deprecated legacy names, non-contiguous boundaries)
pytestmark = [pytest.mark.filterwarnings("ignore:torch.cholesky is deprecated"),
              pytest.mark.filterwarnings("ignore:torch.searchsorted.*is non-contiguous")]


class Case(NamedTuple):
    name: str
    fn: Callable[..., Any]
    inputs: tuple  # (shape, kind) pairs; kinds are the keys of _KINDS
    grad: bool = False
    rtol: float = 1e-7


def _spd(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    a = rng.standard_normal(shape)
    n = shape[-1]
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _tri(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return np.tril(rng.standard_normal(shape)) + 3.0 * np.eye(shape[-1])


_KINDS: dict[str, Callable[[np.random.Generator, tuple], np.ndarray]] = {
    "f": lambda r, s: r.standard_normal(s),
    "pos": lambda r, s: r.uniform(0.5, 3.0, s),
    "gt1": lambda r, s: r.uniform(1.2, 4.0, s),
    "unit": lambda r, s: r.uniform(-0.9, 0.9, s),
    "away": lambda r, s: r.uniform(0.5, 3.0, s) * r.choice([-1.0, 1.0], s),  # bounded away from 0
    "spd": _spd,
    "tri": _tri,
    "i": lambda r, s: r.integers(-20, 20, s).astype(np.int64),
    "i32": lambda r, s: r.integers(-20, 20, s).astype(np.int32),
    "nat": lambda r, s: r.integers(0, 6, s).astype(np.int64),
    "sh": lambda r, s: r.integers(0, 4, s).astype(np.int64),
    "b": lambda r, s: r.random(s) < 0.5,
    "f32": lambda r, s: r.standard_normal(s).astype(np.float32),
    "sorted": lambda r, s: np.sort(r.standard_normal(s), axis=-1),
    "spec": lambda r, s: np.array([1.0, -np.inf, np.nan, np.inf, -0.0, 2.5])[np.arange(int(np.prod(s))) % 6]
    .reshape(s),
}


def _idx(n: int) -> Callable[[np.random.Generator, tuple], np.ndarray]:
    return lambda r, s: r.integers(0, n, s).astype(np.int64)


def _perm(n: int) -> Callable[[np.random.Generator, tuple], np.ndarray]:
    return lambda r, s: r.permutation(n)[: int(np.prod(s))].reshape(s).astype(np.int64)


for _n in range(1, 9):
    _KINDS[f"idx{_n}"] = _idx(_n)
    _KINDS[f"perm{_n}"] = _perm(_n)


def F(*shapes: tuple, kind: str = "f") -> tuple:
    return tuple((s, kind) for s in shapes)


def _u(name: str, kind: str = "f", shape: tuple = (3, 4)) -> Case:
    return Case(name, lambda m, a: getattr(m, name)(a), F(shape, kind=kind), True)


def _b(name: str, k1: str = "f", k2: str = "f", s1: tuple = (3, 4), s2: tuple = (4,), grad: bool = True) -> Case:
    return Case(name, lambda m, a, b: getattr(m, name)(a, b), ((s1, k1), (s2, k2)), grad)


CASES: list[Case] = [
    # ---- elementwise unary --------------------------------------------------------------------------------------
    *[_u(n) for n in ("abs", "neg", "exp", "exp2", "expm1", "sin", "cos", "atan", "sinh", "cosh", "tanh", "asinh",
                      "sigmoid", "relu", "erf", "erfc", "square", "sign", "floor", "ceil", "round", "trunc", "frac")],
    *[_u(n, "pos") for n in ("log", "log2", "log10", "log1p", "sqrt", "rsqrt", "lgamma", "digamma", "reciprocal")],
    *[_u(n, "unit") for n in ("tan", "asin", "acos", "atanh", "erfinv")],
    _u("acosh", "gt1"),
    Case("nan_to_num", lambda m, a: m.nan_to_num(a, nan=0.5, posinf=9.0, neginf=-9.0), F((2, 6), kind="spec")),
    Case("isfinite", lambda m, a: m.isfinite(a), F((2, 6), kind="spec")),
    Case("isnan", lambda m, a: m.isnan(a), F((2, 6), kind="spec")),
    Case("isinf", lambda m, a: m.isinf(a), F((2, 6), kind="spec")),
    Case("isposinf", lambda m, a: m.isposinf(a), F((2, 6), kind="spec")),
    Case("signbit", lambda m, a: m.signbit(a), F((2, 6), kind="spec")),
    Case("abs_int", lambda m, a: m.abs(a), F((3, 4), kind="i")),
    Case("neg_int32", lambda m, a: -a, F((3, 4), kind="i32")),
    Case("sqrt_int_promotes", lambda m, a: m.sqrt(a), F((3, 4), kind="nat")),
    Case("exp_float32", lambda m, a: m.exp(a), F((3, 4), kind="f32"), rtol=1e-6),
    Case("bitwise_not", lambda m, a: m.bitwise_not(a), F((3, 4), kind="i")),
    Case("logical_not", lambda m, a: m.logical_not(a), F((3, 4), kind="b")),
    Case("round_decimals", lambda m, a: m.round(a * 100, decimals=1), F((3, 4)), True),
    # ---- elementwise binary ---------------------------------------------------------------------------------------
    *[_b(n) for n in ("add", "sub", "mul", "atan2", "maximum", "minimum", "fmax", "fmin")],
    _b("div", k2="away"),
    _b("hypot", "away", "away"),
    _b("copysign", k2="away"),
    _b("xlogy", "pos", "pos"),
    _b("logaddexp"),
    _b("logaddexp2"),
    Case("logaddexp_far_apart", lambda m, a, b: m.logaddexp(a * 1e4, b * 1e4), F((3, 4), (4,)), True),
    Case("logaddexp2_f32_f64", lambda m, a, b: m.logaddexp2(a, b), (((3, 4), "f32"), ((4,), "f")), rtol=1e-6),
    Case("logaddexp_spec", lambda m, a, b: m.logaddexp(a, b), (((2, 6), "spec"), ((2, 1), "spec"))),
    _b("float_power", "pos", "f"),
    Case("float_power_int_scalar", lambda m, a: m.float_power(a, 3), F((3, 4), kind="i")),
    Case("float_power_f32_base", lambda m, a, b: m.float_power(a, b), (((3, 4), "f32"), ((4,), "i"))),
    Case("float_power_scalar_base", lambda m, a: m.float_power(2.5, a), F((3, 4)), True),
    Case("logit", lambda m, a: m.logit(a.sigmoid()), F((3, 4)), True),
    Case("logit_eps", lambda m, a: m.logit(a.sigmoid(), eps=0.3), F((3, 4)), True),
    Case("logit_int", lambda m, a: m.logit(a), F((3, 4), kind="i")),
    Case("sinc", lambda m, a: m.sinc(a.round()) + m.sinc(a), F((3, 4)), True),
    Case("heaviside", lambda m, a, b: m.heaviside(a.round(), b), F((3, 4), (4,))),
    Case("ldexp", lambda m, a, b: m.ldexp(a, b), (((3, 4), "f"), ((4,), "i"))),
    Case("ldexp_float_exponent", lambda m, a, b: m.ldexp(a, b), F((3, 4), (4,)), True),
    Case("logcumsumexp", lambda m, a: m.logcumsumexp(a * 30, 1), F((3, 4)), True),
    Case("logcumsumexp_dim0_f32", lambda m, a: a.logcumsumexp(0), F((3, 4), kind="f32"), rtol=1e-6),
    Case("nansum", lambda m, a: m.nansum(a, 1), F((2, 6), kind="spec")),
    Case("nanmean", lambda m, a: m.nanmean(a.log(), 0, keepdim=True), F((3, 4)), True),
    Case("nansum_int", lambda m, a: a.nansum(), F((3, 4), kind="i")),
    _b("pow", "pos", "f"),
    _b("remainder", "f", "away", grad=False),
    _b("fmod", "f", "away", grad=False),
    Case("add_alpha", lambda m, a, b: m.add(a, b, alpha=2.5), F((3, 4), (3, 1)), True),
    Case("sub_scalar", lambda m, a: 2.0 - a, F((3, 4)), True),
    Case("rdiv_scalar", lambda m, a: 3.0 / a, F((3, 4), kind="away"), True),
    Case("pow_scalar_exp", lambda m, a: a ** 3, F((3, 4)), True),
    Case("rpow", lambda m, a: 2.0 ** a, F((3, 4)), True),
    Case("div_floor", lambda m, a, b: m.div(a, b, rounding_mode="floor"), F((3, 4), (4,), kind="away")),
    Case("div_trunc", lambda m, a, b: m.div(a, b, rounding_mode="trunc"), F((3, 4), (4,), kind="away")),
    Case("floor_divide_int", lambda m, a, b: m.floor_divide(a, b), ((((3, 4)), "i"), ((4,), "gt1"))),
    Case("remainder_int", lambda m, a, b: m.remainder(a, b + 1), ((((3, 4)), "i"), ((4,), "nat"))),
    Case("div_int_true", lambda m, a, b: a / (b + 1), ((((3, 4)), "i"), ((4,), "nat"))),
    Case("add_int32_int64", lambda m, a, b: a + b, ((((3, 4)), "i32"), ((4,), "i"))),
    Case("mul_int_float_scalar", lambda m, a: a * 1.5, F((3, 4), kind="i")),
    Case("add_float32_float64_0d", lambda m, a, b: a + b, (((3, 4), "f32"), ((), "f")), rtol=1e-6),
    Case("add_bool_int", lambda m, a, b: a + b, (((3, 4), "b"), ((4,), "i"))),
    Case("mul_f32_f64", lambda m, a, b: a * b, (((3, 4), "f32"), ((4,), "f"))),
    Case("lerp", lambda m, a, b, w: m.lerp(a, b, w), F((3, 4), (4,), (3, 1)), True),
    Case("lerp_scalar", lambda m, a, b: m.lerp(a, b, 0.3), F((3, 4), (3, 4)), True),
    Case("addcmul", lambda m, a, b, c: m.addcmul(a, b, c, value=0.5), F((3, 4), (4,), (3, 1)), True),
    Case("addcdiv", lambda m, a, b, c: m.addcdiv(a, b, c, value=2.0), ((((3, 4)), "f"), ((4,), "f"),
                                                                           ((3, 1), "away")), True),
    Case("clamp", lambda m, a: m.clamp(a, min=-0.5, max=0.7), F((3, 4)), True),
    Case("clamp_tensor", lambda m, a, lo: m.clamp(a, min=lo), F((3, 4), (4,)), True),
    Case("clamp_int", lambda m, a: m.clamp(a, min=-3, max=5), F((3, 4), kind="i")),
    Case("where", lambda m, c, a, b: m.where(c, a, b), (((3, 4), "b"), ((3, 4), "f"), ((4,), "f")), True),
    Case("where_scalar", lambda m, c, a: m.where(c, a, 0.0), (((3, 4), "b"), ((3, 4), "f")), True),
    *[Case(n, (lambda n: lambda m, a, b: getattr(m, n)(a, b))(n), F((3, 4), (4,), kind="i"))
      for n in ("eq", "ne", "lt", "le", "gt", "ge")],
    Case("lt_float_int", lambda m, a, b: m.lt(a, b), (((3, 4), "f"), ((4,), "i"))),
    *[Case(n, (lambda n: lambda m, a, b: getattr(m, n)(a, b))(n), F((3, 4), (4,), kind="b"))
      for n in ("logical_and", "logical_or", "logical_xor")],
    *[Case(n, (lambda n: lambda m, a, b: getattr(m, n)(a, b))(n), F((3, 4), (4,), kind="i"))
      for n in ("bitwise_and", "bitwise_or", "bitwise_xor")],
    Case("bitwise_left_shift", lambda m, a, b: m.bitwise_left_shift(a, b), (((3, 4), "i"), ((4,), "sh"))),
    Case("bitwise_right_shift", lambda m, a, b: m.bitwise_right_shift(a, b), (((3, 4), "i"), ((4,), "sh"))),
    Case("inplace_chain", lambda m, a: a.clone().mul_(2.0).add_(1.0).sin_(), F((3, 4)), True),
    Case("inplace_view", lambda m, a: (lambda c: (c[:, 1].mul_(3.0), c)[1])(a.clone()), F((3, 4)), True),
    # ---- reductions -----------------------------------------------------------------------------------------------
    Case("sum", lambda m, a: m.sum(a), F((3, 4)), True),
    Case("sum_dim_keepdim", lambda m, a: a.sum(dim=(0, 2), keepdim=True), F((2, 3, 4)), True),
    Case("sum_int32", lambda m, a: m.sum(a, 1), F((3, 4), kind="i32")),
    Case("sum_bool", lambda m, a: a.sum(), F((3, 4), kind="b")),
    Case("mean", lambda m, a: m.mean(a, dim=-1), F((3, 4)), True),
    Case("prod", lambda m, a: m.prod(a, 1), F((3, 4)), True),
    Case("prod_int", lambda m, a: m.prod(a), F((3,), kind="i")),
    Case("amax", lambda m, a: m.amax(a, dim=1), F((3, 4)), True),
    Case("amin", lambda m, a: m.amin(a, dim=(0, 1)), F((3, 4)), True),
    Case("max_full", lambda m, a: m.max(a), F((3, 4)), True),
    Case("max_dim", lambda m, a: m.max(a, dim=1, keepdim=True), F((3, 4)), True),
    Case("min_dim", lambda m, a: a.min(0), F((3, 4)), True),
    Case("max_binary", lambda m, a, b: m.max(a, b), F((3, 4), (4,)), True),
    Case("argmax", lambda m, a: m.argmax(a, dim=1), F((3, 4))),
    Case("argmin", lambda m, a: m.argmin(a), F((3, 4))),
    Case("std", lambda m, a: m.std(a, dim=1), F((3, 5)), True),
    Case("var_correction0", lambda m, a: m.var(a, dim=0, correction=0), F((3, 5)), True),
    Case("std_mean", lambda m, a: m.std_mean(a, dim=1), F((3, 5)), True),
    Case("var_mean", lambda m, a: m.var_mean(a, dim=(0, 1), keepdim=True), F((3, 5)), True),
    Case("logsumexp", lambda m, a: m.logsumexp(a, dim=1), F((3, 5)), True),
    Case("norm", lambda m, a: m.norm(a), F((3, 5)), True),
    Case("norm_p1_dim", lambda m, a: m.norm(a, p=1, dim=1), F((3, 5), kind="away"), True),
    Case("median", lambda m, a: m.median(a), F((3, 5)), True),
    Case("median_dim", lambda m, a: m.median(a, dim=1), F((3, 5)), True),
    Case("cumsum", lambda m, a: m.cumsum(a, dim=1), F((3, 5)), True),
    Case("cumsum_int32", lambda m, a: m.cumsum(a, 0), F((3, 5), kind="i32")),
    Case("cumprod", lambda m, a: m.cumprod(a, dim=1), F((3, 5), kind="away"), True),
    Case("all", lambda m, a: m.all(a, dim=1), F((3, 5), kind="b")),
    Case("any", lambda m, a: m.any(a), F((3, 5), kind="b")),
    Case("all_float", lambda m, a: a.all(), F((3, 5))),
    Case("count_nonzero", lambda m, a: m.count_nonzero(a, dim=0), F((3, 5), kind="nat")),
    Case("argmax_ties_first", lambda m, a: m.argmax(a, dim=1), F((4, 9), kind="sh")),
    Case("argmin_ties_first", lambda m, a: a.argmin(), F((4, 9), kind="sh")),
    Case("median_even_lower", lambda m, a: m.median(a, dim=1)[0], F((3, 4))),
    Case("cumsum_bool", lambda m, a: m.cumsum(a, 1), F((3, 4), kind="b")),
    Case("prod_bool", lambda m, a: m.prod(a, 0), F((3, 4), kind="b")),
    Case("sum_empty", lambda m, a: a.sum(0), F((0, 3))),
    Case("amax_0d", lambda m, a: m.amax(a), F(()), True),
    Case("mean_0d_grad", lambda m, a: a.mean(), F(()), True),
    Case("sort_desc_stable_ties", lambda m, a: m.sort(a, dim=-1, descending=True, stable=True), F((3, 9), kind="sh")),
    Case("exp_empty", lambda m, a: m.exp(a), F((2, 0)), True),
    Case("matmul_empty_k", lambda m, a, b: a @ b, F((2, 0), (0, 3)), True),
    Case("cat_with_empty", lambda m, a, b: m.cat([a, b]), F((0, 3), (2, 3)), True),
    # ---- views ----------------------------------------------------------------------------------------------------
    Case("reshape", lambda m, a: m.reshape(a, (4, -1)), F((2, 6)), True),
    Case("view", lambda m, a: a.view(3, 2, 2), F((2, 6)), True),
    Case("permute", lambda m, a: m.permute(a, (2, 0, 1)), F((2, 3, 4)), True),
    Case("transpose", lambda m, a: m.transpose(a, 0, 2), F((2, 3, 4)), True),
    Case("t", lambda m, a: m.t(a), F((2, 3)), True),
    Case("T_mT", lambda m, a: a.mT + a.transpose(-1, -2), F((2, 3, 3)), True),
    Case("squeeze", lambda m, a: m.squeeze(a, 1), F((2, 1, 3)), True),
    Case("squeeze_all", lambda m, a: a.squeeze(), F((2, 1, 3, 1)), True),
    Case("unsqueeze", lambda m, a: m.unsqueeze(a, -1), F((2, 3)), True),
    Case("flatten", lambda m, a: m.flatten(a, 1), F((2, 3, 4)), True),
    Case("unflatten", lambda m, a: m.unflatten(a, 1, (2, 3)), F((2, 6)), True),
    Case("expand", lambda m, a: a.expand(2, 3, 4), F((3, 1)), True),
    Case("broadcast_to", lambda m, a: m.broadcast_to(a, (2, 3, 4)), F((4,)), True),
    Case("narrow", lambda m, a: m.narrow(a, 1, 1, 2), F((3, 4)), True),
    Case("select", lambda m, a: m.select(a, 0, -1), F((3, 4)), True),
    Case("split", lambda m, a: m.split(a, [1, 3], dim=1), F((3, 4)), True),
    Case("split_size", lambda m, a: a.split(2), F((5, 3)), True),
    Case("chunk", lambda m, a: m.chunk(a, 3, dim=0), F((7, 2)), True),
    Case("unbind", lambda m, a: m.unbind(a, 1), F((3, 4)), True),
    Case("diagonal", lambda m, a: m.diagonal(a, offset=1, dim1=0, dim2=2), F((3, 2, 4)), True),
    Case("movedim", lambda m, a: m.movedim(a, 0, -1), F((2, 3, 4)), True),
    Case("as_strided", lambda m, a: m.as_strided(a, (3, 3), (1, 2)), F((12,)), True),
    Case("unfold", lambda m, a: a.unfold(1, 2, 1), F((2, 5)), True),
    Case("getitem_basic", lambda m, a: a[1:, ::2, None, -1], F((3, 4, 2)), True),
    Case("getitem_adv", lambda m, a, i: a[i, 1:], (((4, 3), "f"), ((5,), "idx4")), True),
    Case("getitem_bool", lambda m, a, b: a[b], (((3, 4), "f"), ((3, 4), "b")), True),
    Case("getitem_adv_pair", lambda m, a, i, j: a[i, :, j], (((3, 2, 4), "f"), ((2, 5), "idx3"),
                                                               ((5,), "idx4")), True),
    Case("repeat", lambda m, a: a.repeat(2, 1, 3), F((2, 3)), True),
    Case("contiguous_after_t", lambda m, a: a.t().contiguous().view(-1), F((3, 4)), True),
    # ---- joins ----------------------------------------------------------------------------------------------------
    Case("cat", lambda m, a, b: m.cat([a, b], dim=1), F((3, 2), (3, 4)), True),
    Case("cat_promote", lambda m, a, b: m.cat([a, b]), (((2, 3), "i"), ((1, 3), "f"))),
    Case("stack", lambda m, a, b: m.stack([a, b], dim=-1), F((3, 2), (3, 2)), True),
    Case("hstack", lambda m, a, b: m.hstack([a, b]), F((3, 2), (3, 1)), True),
    Case("vstack", lambda m, a, b: m.vstack([a, b]), F((3,), (2, 3)), True),
    Case("dstack", lambda m, a, b: m.dstack([a, b]), F((3, 2), (3, 2)), True),
    Case("column_stack", lambda m, a, b: m.column_stack([a, b]), F((3,), (3, 2)), True),
    Case("atleast_3d", lambda m, a: m.atleast_3d(a), F((3,)), True),
    Case("atleast_2d", lambda m, a: m.atleast_2d(a), F(()), True),
    Case("block_diag", lambda m, a, b: m.block_diag(a, b), F((2, 3), (1, 2)), True),
    Case("broadcast_tensors", lambda m, a, b: m.broadcast_tensors(a, b), F((3, 1), (4,)), True),
    Case("cartesian_prod", lambda m, a, b: m.cartesian_prod(a, b), F((3,), (2,)), True),
    Case("diag_vec", lambda m, a: m.diag(a, 1), F((3,)), True),
    Case("diag_mat", lambda m, a: m.diag(a, -1), F((3, 4)), True),
    Case("diag_embed", lambda m, a: m.diag_embed(a, offset=1), F((2, 3)), True),
    Case("diagflat", lambda m, a: m.diagflat(a), F((2, 2)), True),
    Case("diff", lambda m, a: m.diff(a, n=2, dim=1), F((3, 5)), True),
    Case("diff_prepend", lambda m, a, p: m.diff(a, dim=0, prepend=p), F((3, 2), (1, 2)), True),
    Case("flip", lambda m, a: m.flip(a, (0, 2)), F((2, 3, 2)), True),
    Case("fliplr", lambda m, a: m.fliplr(a), F((2, 3)), True),
    Case("flipud", lambda m, a: m.flipud(a), F((2, 3)), True),
    Case("meshgrid", lambda m, a, b: m.meshgrid(a, b, indexing="xy"), F((3,), (2,)), True),
    Case("repeat_interleave", lambda m, a: m.repeat_interleave(a, 2, dim=0), F((3, 2)), True),
    Case("repeat_interleave_t", lambda m, a, r: m.repeat_interleave(a, r, dim=1), (((2, 3), "f"), ((3,), "nat")),
         True),
    Case("roll", lambda m, a: m.roll(a, (1, -2), (0, 1)), F((3, 4)), True),
    Case("roll_flat", lambda m, a: m.roll(a, 5), F((3, 4)), True),
    Case("rot90", lambda m, a: m.rot90(a, 3, (0, 1)), F((2, 3)), True),
    Case("tile", lambda m, a: m.tile(a, (2, 1, 2)), F((2, 3)), True),
    Case("tril", lambda m, a: m.tril(a, -1), F((3, 4)), True),
    Case("triu", lambda m, a: m.triu(a, 1), F((2, 3, 4)), True),
    Case("tril_indices", lambda m: m.tril_indices(4, 3, 1), ()),
    Case("triu_indices", lambda m: m.triu_indices(3, 5, -1), ()),
    # ---- contractions / matmul ------------------------------------------------------------------------------------
    Case("einsum", lambda m, a, b: m.einsum("bij,bjk->bik", a, b), F((2, 3, 4), (2, 4, 2)), True),
    Case("einsum_trace_outer", lambda m, a, b: m.einsum("ii,j->j", a, b), F((3, 3), (2,)), True),
    Case("inner", lambda m, a, b: m.inner(a, b), F((2, 3), (4, 3)), True),
    Case("kron", lambda m, a, b: m.kron(a, b), F((2, 3), (2, 2)), True),
    Case("tensordot", lambda m, a, b: m.tensordot(a, b, dims=([1, 2], [0, 1])), F((2, 3, 4), (3, 4, 2)), True),
    Case("tensordot_int", lambda m, a, b: m.tensordot(a, b, dims=1), F((2, 3), (3, 2)), True),
    Case("trace", lambda m, a: m.trace(a), F((3, 4)), True),
    Case("cdist", lambda m, a, b: m.cdist(a, b), F((4, 3), (5, 3)), True),
    Case("cdist_p1", lambda m, a, b: m.cdist(a, b, p=1.0), F((2, 4, 3), (2, 5, 3)), True),
    Case("matmul_batched_bcast", lambda m, a, b: m.matmul(a, b), F((2, 1, 3, 4), (3, 4, 2)), True),
    Case("matmul_vec", lambda m, a, b: a @ b, F((3, 4), (4,)), True),
    Case("matmul_int", lambda m, a, b: a @ b, F((3, 4), (4, 2), kind="i")),
    Case("mm", lambda m, a, b: m.mm(a, b), F((3, 4), (4, 2)), True),
    Case("bmm", lambda m, a, b: m.bmm(a, b), F((2, 3, 4), (2, 4, 2)), True),
    Case("mv", lambda m, a, b: m.mv(a, b), F((3, 4), (4,)), True),
    Case("dot", lambda m, a, b: m.dot(a, b), F((4,), (4,)), True),
    Case("outer", lambda m, a, b: m.outer(a, b), F((4,), (3,)), True),
    Case("addmm", lambda m, c, a, b: m.addmm(c, a, b, beta=0.5, alpha=2.0), F((2,), (3, 4), (4, 2)), True),
    # ---- indexing -------------------------------------------------------------------------------------------------
    Case("gather", lambda m, a, i: m.gather(a, 1, i), (((3, 4), "f"), ((3, 5), "idx4")), True),
    Case("index_add", lambda m, a, i, s: m.index_add(a, 0, i, s, alpha=2.0),
         (((4, 3), "f"), ((5,), "idx4"), ((5, 3), "f")), True),
    Case("index_copy", lambda m, a, i, s: m.index_copy(a, 1, i, s), (((3, 4), "f"), ((2,), "perm4"),
                                                                      ((3, 2), "f")), True),
    Case("index_fill", lambda m, a, i: m.index_fill(a, 1, i, -1.5), (((3, 4), "f"), ((2,), "idx4")), True),
    Case("index_put", lambda m, a, i, v: m.index_put(a, (i,), v, accumulate=True),
         (((4, 3), "f"), ((5,), "idx4"), ((5, 3), "f")), True),
    Case("index_select", lambda m, a, i: m.index_select(a, 0, i), (((4, 3), "f"), ((6,), "idx4")), True),
    Case("masked_fill", lambda m, a, b: m.masked_fill(a, b, 2.0), (((3, 4), "f"), ((4,), "b")), True),
    Case("masked_scatter", lambda m, a, b, s: m.masked_scatter(a, b, s), (((3, 4), "f"), ((3, 4), "b"),
                                                                          ((12,), "f")), True),
    Case("masked_select", lambda m, a, b: m.masked_select(a, b), (((3, 4), "f"), ((4,), "b")), True),
    Case("nonzero", lambda m, a: m.nonzero(a), F((3, 4), kind="b")),
    Case("nonzero_tuple", lambda m, a: m.nonzero(a, as_tuple=True), F((3, 4), kind="b")),
    Case("argwhere", lambda m, a: m.argwhere(a), F((3, 4), kind="nat")),
    Case("put", lambda m, a, i, s: m.put(a, i, s), (((3, 4), "f"), ((5,), "perm8"), ((5,), "f")), True),
    Case("put_accumulate", lambda m, a, i, s: a.put(i, s, accumulate=True), (((3, 4), "f"), ((6,), "idx8"),
                                                                             ((6,), "f")), True),
    Case("scatter", lambda m, a, i, s: m.scatter(a, 0, i, s), (((4, 3), "f"), ((1, 3), "idx4"), ((1, 3), "f")),
         True),
    Case("scatter_value", lambda m, a, i: m.scatter(a, 1, i, 7.0), (((3, 4), "f"), ((3, 2), "idx4")), True),
    Case("scatter_add", lambda m, a, i, s: m.scatter_add(a, 1, i, s), (((3, 4), "f"), ((3, 5), "idx4"),
                                                                       ((3, 5), "f")), True),
    Case("scatter_reduce_sum", lambda m, a, i, s: m.scatter_reduce(a, 0, i, s, "sum"),
         (((4, 3), "f"), ((5, 3), "idx4"), ((5, 3), "f")), True),
    Case("scatter_reduce_amax", lambda m, a, i, s: m.scatter_reduce(a, 0, i, s, "amax", include_self=False),
         (((4, 3), "f"), ((5, 3), "idx4"), ((5, 3), "f")), True),
    Case("scatter_reduce_mean", lambda m, a, i, s: m.scatter_reduce(a, 0, i, s, "mean"),
         (((4, 3), "f"), ((5, 3), "idx4"), ((5, 3), "f")), True),
    Case("scatter_reduce_prod", lambda m, a, i, s: m.scatter_reduce(a, 0, i, s, "prod"),
         (((4, 3), "away"), ((5, 3), "idx4"), ((5, 3), "away")), True),
    Case("take", lambda m, a, i: m.take(a, i), (((3, 4), "f"), ((2, 3), "idx8")), True),
    Case("take_along_dim", lambda m, a, i: m.take_along_dim(a, i, dim=0), (((3, 4), "f"), ((2, 4), "idx3")), True),
    Case("setitem_tensor", lambda m, a, i, v: (lambda c: (c.__setitem__(i, v), c)[1])(a.clone()),
         (((4, 3), "f"), ((2,), "perm4"), ((3,), "f")), True),
    # ---- sorting --------------------------------------------------------------------------------------------------
    Case("sort", lambda m, a: m.sort(a, dim=1, descending=True), F((3, 5)), True),
    Case("sort_stable_int", lambda m, a: m.sort(a, stable=True), F((3, 8), kind="nat")),
    Case("argsort", lambda m, a: m.argsort(a, dim=0), F((4, 3))),
    Case("topk", lambda m, a: m.topk(a, 2, dim=1), F((3, 5)), True),
    Case("topk_smallest", lambda m, a: m.topk(a, 3, largest=False), F((2, 5)), True),
    Case("kthvalue", lambda m, a: m.kthvalue(a, 2, dim=1), F((3, 5)), True),
    Case("msort", lambda m, a: m.msort(a), F((4, 3)), True),
    Case("cummax", lambda m, a: m.cummax(a, dim=1), F((3, 5)), True),
    Case("cummin", lambda m, a: m.cummin(a, dim=0), F((3, 5)), True),
    Case("mode", lambda m, a: m.mode(a, dim=1)[0], F((3, 9), kind="nat")),
    Case("unique", lambda m, a: m.unique(a, return_inverse=True, return_counts=True), F((3, 6), kind="nat")),
    Case("unique_dim", lambda m, a: m.unique(a, dim=0), F((6, 2), kind="sh")),
    Case("unique_consecutive", lambda m, a: m.unique_consecutive(a, return_counts=True), F((12,), kind="sh")),
    Case("bincount", lambda m, a: m.bincount(a, minlength=8), F((10,), kind="nat")),
    Case("bincount_weights", lambda m, a, w: m.bincount(a, weights=w), (((10,), "nat"), ((10,), "f"))),
    Case("bucketize", lambda m, a, b: m.bucketize(a, b, right=True), (((3, 4), "f"), ((5,), "sorted"))),
    Case("searchsorted", lambda m, s, v: m.searchsorted(s, v), (((3, 6), "sorted"), ((3, 4), "f"))),
    Case("histc", lambda m, a: m.histc(a, bins=5, min=-2, max=2), F((40,))),
    Case("isin", lambda m, a, b: m.isin(a, b), (((3, 4), "nat"), ((3,), "nat"))),
    # ---- linalg ---------------------------------------------------------------------------------------------------
    Case("det", lambda m, a: m.det(a), F((2, 3, 3), kind="spd"), True),
    Case("linalg_det_general", lambda m, a: m.linalg.det(a), F((4, 4), kind="tri"), True),
    Case("inverse", lambda m, a: m.inverse(a), F((3, 3), kind="spd"), True),
    Case("linalg_inv", lambda m, a: m.linalg.inv(a), F((2, 3, 3), kind="tri"), True),
    Case("slogdet", lambda m, a: m.linalg.slogdet(a), F((3, 3), kind="spd"), True),
    Case("logdet", lambda m, a: m.logdet(a), F((3, 3), kind="spd"), True),
    Case("cholesky", lambda m, a: m.linalg.cholesky(a), F((2, 3, 3), kind="spd"), True),
    Case("cholesky_legacy_upper", lambda m, a: m.cholesky(a, upper=True), F((3, 3), kind="spd"), True),
    Case("solve", lambda m, a, b: m.linalg.solve(a, b), ((((3, 3)), "spd"), ((3, 2), "f")), True),
    Case("solve_triangular", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False),
         (((3, 3), "tri"), ((3, 2), "f")), True),
    Case("lstsq", lambda m, a, b: m.linalg.lstsq(a, b).solution, (((5, 3), "f"), ((5, 2), "f")), True),
    Case("qr", lambda m, a: m.linalg.qr(a), F((4, 3)), True),
    Case("qr_reconstruct", lambda m, a: (lambda q, r: q @ r)(*m.linalg.qr(a)), F((4, 3)), True),
    Case("svdvals", lambda m, a: m.linalg.svdvals(a), F((4, 3)), True),
    Case("svd_reconstruct", lambda m, a: (lambda u, s, vh: (u * s.unsqueeze(-2)) @ vh)(
        *m.linalg.svd(a, full_matrices=False)), F((4, 3)), True),
    Case("eigvalsh", lambda m, a: m.linalg.eigvalsh(a), F((3, 3), kind="spd"), True),
    Case("eigh_sign_free", lambda m, a: (lambda w, v: (w, v * v))(*m.linalg.eigh(a)), F((3, 3), kind="spd"), True),
    Case("pinv", lambda m, a: m.linalg.pinv(a), F((4, 3)), True),
    Case("pinverse", lambda m, a: m.pinverse(a), F((3, 4)), True),
    Case("matrix_norm_fro", lambda m, a: m.linalg.matrix_norm(a), F((2, 3, 4)), True),
    Case("matrix_norm_nuc", lambda m, a: m.linalg.matrix_norm(a, ord="nuc"), F((3, 4)), True),
    Case("matrix_norm_1", lambda m, a: m.linalg.matrix_norm(a, ord=1), F((3, 4), kind="away"), True),
    Case("vector_norm", lambda m, a: m.linalg.vector_norm(a, ord=3, dim=1), F((3, 4), kind="away"), True),
    Case("vector_norm_inf", lambda m, a: m.linalg.vector_norm(a, ord=float("inf")), F((3, 4)), True),
    Case("linalg_norm", lambda m, a: m.linalg.norm(a, ord=2), F((3, 4)), True),
    Case("matrix_rank", lambda m, a: m.linalg.matrix_rank(a), F((4, 3))),
    Case("multi_dot", lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), F((2, 3), (3, 4), (4, 2)), True),
    Case("vecdot", lambda m, a, b: m.linalg.vecdot(a, b), F((3, 4), (4,)), True),
    Case("cross", lambda m, a, b: m.linalg.cross(a, b), F((2, 3), (2, 3)), True),
    Case("cross_legacy", lambda m, a, b: m.cross(a, b, dim=0), F((3, 2), (3, 2)), True),
    Case("matrix_power", lambda m, a: m.matrix_power(a, 3), F((3, 3)), True),
    Case("matrix_power_neg", lambda m, a: m.linalg.matrix_power(a, -2), F((3, 3), kind="spd"), True),
    # ---- creation -------------------------------------------------------------------------------------------------
    Case("zeros", lambda m: m.zeros(2, 3), ()),
    Case("ones_int", lambda m: m.ones((2, 3), dtype=m.int32), ()),
    Case("full_int", lambda m: m.full((2, 2), 7), ()),
    Case("full_bool", lambda m: m.full((2,), True), ()),
    Case("arange_int", lambda m: m.arange(2, 11, 3), ()),
    Case("arange_float", lambda m: m.arange(0.0, 1.0, 0.1), ()),
    Case("arange_neg_step", lambda m: m.arange(5, -3, -2), ()),
    Case("linspace", lambda m: m.linspace(-1, 2, 7), ()),
    Case("logspace", lambda m: m.logspace(0, 2, 5, base=2.0), ()),
    Case("eye", lambda m: m.eye(3, 4), ()),
    Case("tensor_infer", lambda m: m.tensor([[1, 2], [3, 4]]), ()),
    Case("tensor_infer_float", lambda m: m.tensor([1, 2.5]), ()),
    Case("tensor_bool", lambda m: m.tensor([True, False]), ()),
    Case("zeros_like", lambda m, a: m.zeros_like(a), F((2, 3), kind="i32")),
    Case("ones_like_dtype", lambda m, a: m.ones_like(a, dtype=m.float64), F((2, 3), kind="i32")),
    Case("full_like", lambda m, a: m.full_like(a, 2.5), F((2, 3))),
    Case("new_full", lambda m, a: a.new_full((2,), 3), F((2, 3), kind="f32")),
    Case("to_dtype", lambda m, a: a.to(m.int32), F((2, 3))),
    Case("type_as", lambda m, a, b: a.type_as(b), (((2, 3), "i"), ((1,), "f32"))),
    # ---- aliases and Tensor-method spellings ----------------------------------------------------------------------
    Case("clamp_max_method", lambda m, a: a.clamp_max(0.2), F((3, 4)), True),
    Case("clamp_min_method", lambda m, a: a.clamp_min(-0.2), F((3, 4)), True),
    Case("view_as", lambda m, a, b: a.view_as(b), F((2, 6), (3, 4)), True),
    Case("expand_as", lambda m, a, b: a.expand_as(b), F((1, 4), (3, 4)), True),
    Case("reshape_as", lambda m, a, b: a.reshape_as(b), F((2, 6), (4, 3)), True),
    Case("new_zeros", lambda m, a: a.new_zeros(2, 3), F((2,), kind="i32")),
    Case("index_put_fn_", lambda m, a, i, v: m.index_put_(a.clone(), (i,), v), (((4, 3), "f"), ((2,), "perm4"),
                                                                               ((3,), "f")), True),
    Case("concat_alias", lambda m, a, b: m.concat([a, b], dim=-1), F((2, 1), (2, 3)), True),
    Case("concatenate_alias", lambda m, a, b: m.concatenate([a, b]), F((1, 3), (2, 3)), True),
    Case("row_stack", lambda m, a, b: m.row_stack((a, b)), F((3,), (3,)), True),
    Case("swapaxes", lambda m, a: m.swapaxes(a, 0, 1), F((2, 3)), True),
    Case("true_divide", lambda m, a, b: m.true_divide(a, b), F((3,), (3,), kind="away"), True),
    Case("std_unbiased_false", lambda m, a: a.std(1, unbiased=False), F((3, 4)), True),
    Case("mean_dtype", lambda m, a: a.mean(dtype=m.float64), F((3, 4), kind="f32")),
    Case("sum_dtype_int", lambda m, a: a.sum(dtype=m.float64), F((3, 4), kind="i32")),
    Case("item_scalar", lambda m, a: a.sum().item(), F((3, 4), kind="i")),
    Case("tolist", lambda m, a: a.tolist(), F((2, 3), kind="i")),
    Case("size_stride", lambda m, a: (a.size(), a.t().stride(), a.dim(), a.numel()), F((2, 3))),
    Case("double_method", lambda m, a: a.double() * 2, F((2, 3), kind="f32"), rtol=1e-6),
]

XFAIL: dict[str, str] = {}  # known differences from torch, each with the reason (none open now)


def _seed(name: str) -> int:
    return zlib.crc32(name.encode())


def _make_inputs(case: Case) -> list[np.ndarray]:
    rng = np.random.default_rng(_seed(case.name))
    return [np.asarray(_KINDS[kind](rng, tuple(shape))) for shape, kind in case.inputs]


def _leaves(out: Any) -> list:
    if isinstance(out, (tuple, list)) and not isinstance(out, (torch.Size, ember.Size)):
        return [leaf for item in out for leaf in _leaves(item)]
    return [out]


def _leaf_and_input(lib, a: np.ndarray, grad: bool, strided: bool):
    """The leaf tensor gradients land on, and the tensor the row sees (a dim-0 step-2 view when ``strided``)."""
    rg = grad and a.dtype == np.float64
    if not strided or a.ndim == 0:
        leaf = lib.tensor(a.copy(), requires_grad=rg)
        return leaf, leaf
    big = np.zeros((2 * a.shape[0],) + a.shape[1:], dtype=a.dtype)
    big[::2] = a
    leaf = lib.tensor(big, requires_grad=rg)
    return leaf, leaf[::2]


def _run(lib, case: Case, arrays: list[np.ndarray], strided: bool):
    pairs = [_leaf_and_input(lib, a, case.grad, strided) for a in arrays]
    return [p[0] for p in pairs], _leaves(case.fn(lib, *[p[1] for p in pairs]))


def _dt(t) -> str:
    return str(t.dtype).split(".")[-1]


def _compare(e, t, what: str, rtol: float) -> None:
    if not isinstance(t, torch.Tensor):
        assert not isinstance(e, ember.Tensor), f"{what}: ember gave a tensor, torch gave {type(t)}"
        assert tuple(e) == tuple(t) if isinstance(t, torch.Size) else e == t, f"{what}: {e!r} != {t!r}"
        return
    assert isinstance(e, ember.Tensor), f"{what}: ember gave {type(e)}"
    assert tuple(e.shape) == tuple(t.shape), f"{what}: shape {tuple(e.shape)} != {tuple(t.shape)}"
    assert _dt(e) == _dt(t), f"{what}: dtype {_dt(e)} != {_dt(t)}"
    ea, ta = e.detach().numpy(), t.detach().numpy()
    if ta.dtype.kind == "f":
        np.testing.assert_allclose(ea, ta, rtol=rtol, atol=rtol * 1e-3, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(ea, ta, err_msg=what)


LAYOUTS = ("contiguous", "strided")


def _param(case: Case, layout: str):
    key = case.name if case.name in XFAIL else f"{case.name}/{layout}"
    marks = [pytest.mark.xfail(strict=True, reason=XFAIL[key])] if key in XFAIL else []
    return pytest.param(case, layout, id=f"{case.name}-{layout}", marks=marks)


def test_names_are_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("case,layout", [_param(c, lay) for c in CASES for lay in LAYOUTS if c.inputs or
                                         lay == "contiguous"])
def test_differential(case: Case, layout: str):
    """Same values, shapes, dtypes and input gradients as torch; where torch raises, ember raises the same type."""
    arrays = _make_inputs(case)
    strided = layout == "strided"
    try:
        t_ins, t_out = _run(torch, case, arrays, strided)
    except Exception as exc:  # torch rejects the call (e.g. view of a non-viewable layout): ember must too
        with pytest.raises(type(exc)):
            _run(ember, case, arrays, strided)
        return
    e_ins, e_out = _run(ember, case, arrays, strided)
    assert len(e_out) == len(t_out), f"{len(e_out)} outputs != {len(t_out)}"
    for k, (e, t) in enumerate(zip(e_out, t_out)):
        _compare(e, t, f"output {k}", case.rtol)
    if not case.grad:
        return
    rng = np.random.default_rng(_seed(case.name) + 1)
    e_loss, t_loss = 0, 0
    for e, t in zip(e_out, t_out):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            w = rng.standard_normal(tuple(t.shape))
            e_loss = e_loss + (e * ember.tensor(w)).sum()
            t_loss = t_loss + (t * torch.tensor(w)).sum()
    assert isinstance(t_loss, torch.Tensor), "row marked differentiable but torch output has no grad"
    t_loss.backward()
    e_loss.backward()
    for k, (ei, ti) in enumerate(zip(e_ins, t_ins)):
        if ti.grad is None:
            assert ei.grad is None or not np.any(ei.grad.numpy()), f"input {k}: ember has a grad, torch none"
            continue
        assert ei.grad is not None, f"input {k}: ember produced no gradient"
        _compare(ei.grad, ti.grad, f"grad of input {k}", max(case.rtol, 1e-7))
