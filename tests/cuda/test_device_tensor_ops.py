"""Every tensor op on CUDA tensors against the same op on the CPU: values, result device, and gradients.

One table, Chainer-style: each row names an op, its inputs (shapes, dtype, which need grad) and a function of
ember tensors. The harness runs it on CPU tensors and on their CUDA copies, compares the results, and for
differentiable rows compares the gradients of ``sum(out * w)`` for a random ``w``.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F

R = np.random.default_rng(0)


def f64(*shape, lo=-2.0, hi=2.0):
    return ("f", shape, lo, hi)


def i64(*shape, hi=3):
    return ("i", shape, 0, hi)


def b8(*shape):
    return ("b", shape, 0, 2)


def _make(spec, rng):
    kind, shape, lo, hi = spec
    if kind == "f":
        return ember.tensor(rng.uniform(lo, hi, shape).astype(np.float64))
    if kind == "i":
        return ember.tensor(rng.integers(lo, hi, shape).astype(np.int64))
    return ember.tensor(rng.integers(0, 2, shape).astype(bool))


# name, input specs, function, differentiable
OPS = [
    # elementwise
    ("neg", [f64(3, 4)], lambda a: -a, True),
    ("exp", [f64(3, 4)], lambda a: a.exp(), True),
    ("log", [f64(3, 4, lo=0.1)], lambda a: a.log(), True),
    ("tanh_sigmoid", [f64(3, 4)], lambda a: a.tanh() + a.sigmoid(), True),
    ("sqrt_rsqrt", [f64(5, lo=0.2)], lambda a: a.sqrt() * a.rsqrt(), True),
    ("pow_scalar", [f64(3, 4, lo=0.1)], lambda a: a ** 2.5, True),
    ("add_broadcast", [f64(3, 1), f64(1, 4)], lambda a, b: a + b, True),
    ("sub_mul_div", [f64(2, 3), f64(3, lo=0.5)], lambda a, b: (a - b) * a / b, True),
    ("scalar_ops", [f64(4)], lambda a: 2 * a + 1 - a / 3, True),
    ("maximum", [f64(3, 4), f64(4)], lambda a, b: ember.maximum(a, b), True),
    ("compare", [f64(3, 4), f64(3, 4)], lambda a, b: (a < b) | (a == b), False),
    ("where", [b8(3, 4), f64(3, 4), f64(4)], lambda c, a, b: ember.where(c, a, b), True),
    ("clamp", [f64(3, 4)], lambda a: a.clamp(-0.5, 0.7), True),
    ("int_arith", [i64(3, 4, hi=9), i64(4, hi=9)], lambda a, b: a * b + a // (b + 1) - a % (b + 1), False),
    ("cast", [f64(3, 4)], lambda a: a.to(ember.float32).to(ember.int64), False),
    ("isnan", [f64(3)], lambda a: (a / 0 * 0).isnan(), False),
    # reductions and scans
    ("sum_all", [f64(3, 4)], lambda a: a.sum(), True),
    ("sum_dims", [f64(2, 3, 4)], lambda a: a.sum((0, 2), keepdim=True), True),
    ("mean_var_std", [f64(4, 5)], lambda a: a.mean(1) + a.var(0).sum() + a.std(), True),
    ("max_dim", [f64(3, 4)], lambda a: a.max(1).values + a.min(0).values.sum(), True),
    ("argmax", [f64(3, 4)], lambda a: a.argmax(1), False),
    ("logsumexp", [f64(3, 4)], lambda a: a.logsumexp(1), True),
    ("prod", [f64(3, 4, lo=0.5)], lambda a: a.prod(1), True),
    ("all_any", [b8(3, 4)], lambda a: ember.stack([a.all(1), a.any(1)]), False),
    ("norm", [f64(3, 4)], lambda a: a.norm() + ember.linalg.vector_norm(a, 1, dim=1).sum(), True),
    ("cumsum", [f64(3, 4)], lambda a: a.cumsum(1) + a.cumprod(0), True),
    # products
    ("matmul", [f64(3, 4), f64(4, 5)], lambda a, b: a @ b, True),
    ("bmm_broadcast", [f64(2, 3, 4), f64(4, 2)], lambda a, b: ember.matmul(a, b), True),
    ("matvec", [f64(3, 4), f64(4)], lambda a, b: a @ b, True),
    ("linear", [f64(2, 4), f64(3, 4), f64(3)], lambda x, w, b: F.linear(x, w, b), True),
    ("einsum", [f64(2, 3), f64(3, 4)], lambda a, b: ember.einsum("ij,jk->ik", a, b), True),
    # views and layout
    ("reshape_permute", [f64(2, 3, 4)], lambda a: a.permute(2, 0, 1).reshape(4, 6) * 1, True),
    ("transpose_contig", [f64(3, 4)], lambda a: a.t().contiguous(), True),
    ("slice_step", [f64(4, 6)], lambda a: a[1:, ::2] * 2, True),
    ("select_negative", [f64(4, 6)], lambda a: a[-1, :4] + a[:, -2], True),
    ("expand", [f64(3, 1)], lambda a: a.expand(3, 4) * 1, True),
    ("unsqueeze_squeeze", [f64(3, 1, 4)], lambda a: a.squeeze(1).unsqueeze(0) * 1, True),
    ("flatten_view", [f64(2, 3, 4)], lambda a: a.flatten(1).view(-1) * 1, True),
    ("flip", [f64(3, 4)], lambda a: a.flip(0, 1), True),
    ("narrow_chunk", [f64(6, 4)], lambda a: a.narrow(0, 1, 3) + a.chunk(2, 0)[1], True),
    ("unfold", [f64(8)], lambda a: a.unfold(0, 3, 2) * 1, True),
    ("diagonal", [f64(4, 4)], lambda a: a.diagonal() * 1, True),
    ("as_strided", [f64(12)], lambda a: a.as_strided((3, 3), (3, 1), 1) * 1, True),
    # joins
    ("cat", [f64(2, 3), f64(1, 3)], lambda a, b: ember.cat([a, b], 0), True),
    ("stack", [f64(2, 3), f64(2, 3)], lambda a, b: ember.stack([a, b], 1), True),
    ("split", [f64(5, 3)], lambda a: a.split(2)[2] * 1, True),
    # indexing
    ("index_select", [f64(4, 3), i64(5, hi=4)], lambda a, i: a.index_select(0, i), True),
    ("gather", [f64(3, 4), i64(3, 2, hi=4)], lambda a, i: a.gather(1, i), True),
    ("advanced_index", [f64(4, 3), i64(5, hi=4)], lambda a, i: a[i], True),
    ("bool_mask", [f64(4, 3), b8(4, 3)], lambda a, m: a[m], True),
    ("masked_fill", [f64(4, 3), b8(4, 3)], lambda a, m: a.masked_fill(m, 0.5), True),
    ("scatter_add", [f64(3, 4), i64(3, 4, hi=4)],
     lambda a, i: ember.zeros(3, 4, dtype=ember.float64, device=a.device).scatter_add(1, i, a), True),
    ("setitem", [f64(4, 3), f64(3)], lambda a, b: _setitem(a, b), True),
    # nn functional
    ("relu_gelu_silu", [f64(3, 4)], lambda a: F.relu(a) + F.gelu(a) + F.silu(a), True),
    ("softmax", [f64(3, 5)], lambda a: F.softmax(a, 1) + F.log_softmax(a, 0), True),
    ("cross_entropy", [f64(4, 5), i64(4, hi=5)], lambda a, t: F.cross_entropy(a, t), True),
    ("mse_l1", [f64(4, 3), f64(4, 3)], lambda a, b: F.mse_loss(a, b) + F.l1_loss(a, b), True),
    ("bce_logits", [f64(4, 3), f64(4, 3, lo=0.0, hi=1.0)], lambda a, b: F.binary_cross_entropy_with_logits(a, b),
     True),
    ("conv2d", [f64(2, 2, 5, 5), f64(3, 2, 3, 3), f64(3)], lambda x, w, b: F.conv2d(x, w, b, padding=1), True),
    ("conv1d_stride", [f64(2, 2, 7), f64(3, 2, 3)], lambda x, w: F.conv1d(x, w, stride=2), True),
    ("unfold_fold", [f64(1, 2, 4, 4)], lambda x: F.fold(F.unfold(x, 2), (4, 4), 2), True),
    ("max_pool2d", [f64(2, 2, 4, 4)], lambda x: F.max_pool2d(x, 2), True),
    ("avg_pool2d", [f64(2, 2, 4, 4)], lambda x: F.avg_pool2d(x, 2), True),
    ("layer_norm", [f64(3, 4), f64(4), f64(4)], lambda x, w, b: F.layer_norm(x, (4,), w, b), True),
    ("batch_norm", [f64(4, 3, 2), f64(3), f64(3)],
     lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), True),
    ("group_norm", [f64(2, 4, 3), f64(4), f64(4)], lambda x, w, b: F.group_norm(x, 2, w, b), True),
    ("embedding", [i64(5, hi=6), f64(6, 3)], lambda i, w: F.embedding(i, w), True),
    ("embedding_bag_sum_max", [i64(6, hi=5), f64(5, 3)],
     lambda i, w: F.embedding_bag(i, w, ember.tensor([0, 2, 2], device=w.device))
     + F.embedding_bag(i, w, ember.tensor([0, 2, 2], device=w.device), mode="max"), True),
    ("lstm", [f64(4, 2, 3)], lambda x: _recurrent(ember.nn.LSTM, x)[0], True),
    ("gru_bidirectional", [f64(4, 2, 3)], lambda x: _recurrent(ember.nn.GRU, x, bidirectional=True)[0], True),
]


def _recurrent(layer, x, **options):
    """A recurrent layer with the same seeded float64 weights on either device, applied to ``x``."""
    ember.manual_seed(0)
    return layer(3, 5, **options).double().to(x.device)(x)


def _setitem(a, b):
    c = a * 1
    c[1] = b
    c[2:, 1] = 0.25
    return c


def _on(x, *values, **options):
    """A tensor of ``values`` on ``x``'s device."""
    return ember.tensor(*values, device=x.device, **options)


def _scatter_mean(a, index, src, include_self):
    return ember.scatter_reduce(a, 1, index, src, "mean", include_self=include_self)


def _ctc(x):
    targets, lengths = _on(x, [[1, 2], [3, 3]]), _on(x, [5, 4])
    return F.ctc_loss(F.log_softmax(x, 2), targets, lengths, _on(x, [2, 1]))


def _renormed_embedding(index, weight):
    table = weight.detach() * 1  # max_norm rescales the table in place
    return F.embedding(index, table, max_norm=1.0) + table.sum()


POSITIVE = {"lo": 0.3, "hi": 1.7}

def _with_nans(a):
    return ember.where(a > 0.5, a, float("nan"))


# name, input specs, function, differentiable
OPS += [  # rows from a survey of every public op: each once reached a host-only NumPy function
    # ops that reached a NumPy function with no device version (the survey's failures)
    ("logical_not", [b8(3, 4)], lambda a: ember.logical_not(a), False),
    ("repeat", [f64(2, 3)], lambda a: a.repeat(2, 1, 2), True),
    ("tile", [f64(2, 3)], lambda a: ember.tile(a.t(), (2, 1, 3)), True),
    ("repeat_interleave_scalar", [f64(3, 2)], lambda a: ember.repeat_interleave(a, 2, dim=1), True),
    ("repeat_interleave_tensor", [f64(3, 2), i64(3, hi=3)], lambda a, r: ember.repeat_interleave(a, r, dim=0), True),
    ("repeat_interleave_flat", [f64(3, 2)], lambda a: a.repeat_interleave(3), True),
    ("repeat_interleave_counts", [i64(4, hi=3)], lambda r: ember.repeat_interleave(r), False),
    ("roll", [f64(2, 3, 4)], lambda a: ember.roll(a, (-1, 5), (2, 0)) * a.roll(2, 1), True),
    ("roll_flat", [f64(3, 4)], lambda a: ember.roll(a.t(), 5), True),
    ("tril_triu", [f64(2, 3, 4)], lambda a: ember.tril(a, -1) + ember.triu(a.transpose(1, 2).transpose(1, 2), 1), True),
    ("tril_triu_inplace", [f64(3, 4)], lambda a: (a * 1).tril_(1) + (a * 2).triu_(), True),
    ("tril_bool", [b8(3, 4)], lambda a: ember.tril(a), False),
    ("tril_triu_indices", [f64(1)], lambda a: ember.cat([ember.tril_indices(3, 4, device=a.device),
                                                         ember.triu_indices(4, 3, 1, device=a.device)], 1), False),
    ("nonzero", [f64(2, 3, 4)], lambda a: ember.nonzero(a > 0.5), False),
    ("nonzero_tuple", [f64(3, 4)], lambda a: ember.nonzero(a.t() > 0, as_tuple=True)[1], False),
    ("nonzero_empty", [f64(2, 3)], lambda a: ember.argwhere(a > 10), False),
    ("nonzero_0d", [f64(1)], lambda a: ember.nonzero(a[0] > -5, as_tuple=True)[0], False),
    ("where_condition_only", [f64(4, 3)], lambda a: ember.where(a > 0)[0], False),
    ("masked_select", [f64(4, 3), b8(3)], lambda a, m: ember.masked_select(a, m), True),
    ("masked_scatter", [f64(4, 3), b8(4, 3), f64(12)], lambda a, m, s: a.masked_scatter(m, s.reshape(4, 3)), True),
    ("scatter_reduce_mean", [f64(3, 4), i64(3, 5, hi=4), f64(3, 5)],
     lambda a, i, s: _scatter_mean(a, i, s, False) + _scatter_mean(a, i, s, True), True),
    ("scatter_reduce_mean_int", [i64(3, 4, hi=9), i64(3, 5, hi=4), i64(3, 5, hi=9)],
     lambda a, i, s: _scatter_mean(a, i, s, True), False),
    ("diag", [f64(3)], lambda a: ember.diag(a, 1) + ember.diagflat(a, -1), True),
    ("diag_embed", [f64(2, 3)], lambda a: ember.diag_embed(a, -1, 0, 2), True),
    ("block_diag", [f64(2, 2), f64(3), f64(1, 1)], lambda a, b, c: ember.block_diag(a, b, c), True),
    ("pad_constant", [f64(1, 2, 3)], lambda x: F.pad(x, (1, 2, -1, 1), value=-1.5), True),
    ("instance_norm", [f64(2, 3, 4), f64(3), f64(3)], lambda x, w, b: F.instance_norm(x, weight=w, bias=b), True),
    ("one_hot", [i64(2, 3, hi=4)], lambda i: F.one_hot(i) + F.one_hot(i, 5)[..., :4], False),
    ("sdpa_causal", [f64(2, 3, 4), f64(2, 3, 4), f64(2, 3, 4)],
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), True),
    ("sdpa_masked_row", [f64(1, 2, 4), f64(1, 3, 4), f64(1, 3, 4)], lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=_on(q, [[False, False, False], [True, False, True]])), True),
    ("multi_margin_loss", [f64(4, 5), i64(4, hi=5), f64(5, **POSITIVE)],
     lambda x, t, w: F.multi_margin_loss(x, t, p=2, weight=w), True),
    ("multilabel_margin_loss", [f64(2, 4)], lambda x: F.multilabel_margin_loss(x, _on(x, [[3, 0, -1, 1],
                                                                                           [1, 2, 3, -1]])), True),
    ("ctc_loss", [f64(5, 2, 4)], _ctc, True),
    ("embedding_max_norm", [i64(4, hi=5), f64(5, 3)], _renormed_embedding, False),
    ("interpolate_linear", [f64(1, 2, 3)], lambda x: F.interpolate(x, size=5, mode="linear"), True),
    ("interpolate_bilinear", [f64(1, 2, 2, 3)],
     lambda x: F.interpolate(x, size=(3, 5), mode="bilinear", align_corners=True), True),
    ("interpolate_bicubic", [f64(1, 1, 3, 3)], lambda x: F.interpolate(x, scale_factor=2, mode="bicubic"), True),
    ("interpolate_trilinear", [f64(1, 1, 2, 2, 3)], lambda x: F.interpolate(x, size=(3, 3, 4), mode="trilinear"),
     True),
    ("interpolate_area", [f64(1, 2, 4, 5)], lambda x: F.interpolate(x, size=(2, 3), mode="area"), True),
    ("affine_grid", [f64(2, 2, 3)], lambda t: F.affine_grid(t, (2, 1, 3, 4), align_corners=False), True),
    ("affine_grid_3d", [f64(1, 3, 4)], lambda t: F.affine_grid(t, (1, 1, 2, 3, 2), align_corners=True), True),
    # a sample of the ops that already worked, beyond test_device_tensor_ops.py
    ("addcdiv_lerp", [f64(3, 4), f64(3, 4), f64(4, **POSITIVE)],
     lambda a, b, c: ember.addcdiv(a, b, c, value=0.5) + ember.lerp(a, b, c / 2), True),
    ("atan2_xlogy", [f64(3, 4), f64(4, **POSITIVE)], lambda a, b: ember.atan2(a, b) + ember.xlogy(b, b + a * a), True),
    ("logaddexp", [f64(3, 4, lo=-30, hi=30), f64(4, lo=-30, hi=30)],
     lambda a, b: ember.logaddexp(a, b) + ember.logaddexp2(b, a), True),
    ("float_power_ldexp", [f64(3, 4, **POSITIVE), f64(4)], lambda a, b: ember.float_power(a, b) + ember.ldexp(a, b),
     True),
    ("logcumsumexp", [f64(3, 4, lo=-30, hi=30)], lambda a: a.logcumsumexp(1) + ember.logcumsumexp(a, 0), True),
    ("logit_sinc_heaviside", [f64(3, 4, lo=0.05, hi=0.95)],
     lambda a: ember.logit(a, eps=0.1) + ember.sinc(a * 3) + ember.heaviside(a.detach() - 0.5, a.detach()), True),
    ("nansum_nanmean", [f64(3, 4)], lambda a: ember.nansum(_with_nans(a), 1) + ember.nanmean(_with_nans(a), 1), True),
    ("remainder_fmod", [f64(3, 4), f64(4, **POSITIVE)], lambda a, b: ember.remainder(a, b) * ember.fmod(a, b), True),
    ("bitwise", [i64(3, 4, hi=8), i64(4, hi=3)],
     lambda a, b: (a & b) | (a ^ b) | ember.bitwise_left_shift(a, b) | ~a, False),
    ("nan_to_num", [f64(3, 4)], lambda a: ember.nan_to_num(ember.stack([a / 0, a.detach()]), neginf=-3.0), False),
    ("amax_dims_var_mean", [f64(2, 3, 4)],
     lambda a: ember.amax(a, (0, 2)) + ember.var_mean(a, (0, 2), correction=0)[0] + ember.std_mean(a, 2)[1].sum(0),
     True),
    ("count_nonzero", [f64(2, 3, 4)], lambda a: ember.count_nonzero(a > 0, (0, 2)), False),
    ("movedim_unflatten", [f64(2, 6)], lambda a: ember.movedim(a.unflatten(1, (2, 3)), 0, 2) * 1, True),
    ("rot90_diff", [f64(3, 4)], lambda a: ember.diff(ember.rot90(a, 1, (0, 1)), n=2, dim=0), True),
    ("stacks", [f64(2, 3), f64(2, 3)], lambda a, b: ember.hstack([a, b]) + ember.vstack([b, a]).reshape(2, 6), True),
    ("meshgrid_cartesian", [f64(3), f64(2)], lambda a, b: ember.cartesian_prod(a, b).sum(1)
     + ember.meshgrid(a, b, indexing="xy")[0].reshape(-1), True),
    ("index_add_copy_fill", [f64(4, 3), i64(5, hi=4), f64(5, 3)],
     lambda a, i, s: ember.index_add(a, 0, i, s, alpha=2).index_fill(1, _on(a, [0, 2]), -1.0)
     .index_copy(0, _on(a, [3, 1]), s[:2]), True),
    ("put_accumulate_take", [f64(4, 3), f64(3), i64(5, hi=12)],
     lambda a, s, i: ember.put(a, _on(a, [0, 0, 11]), s, accumulate=True).take(i), True),
    ("take_along_dim", [f64(4, 3), i64(4, 2, hi=3)], lambda a, i: ember.take_along_dim(a, i, 1), True),
    ("scatter_reduce_amax", [f64(3, 4), i64(3, 5, hi=4), f64(3, 5)],
     lambda a, i, s: ember.scatter_reduce(a, 1, i, s, "amax", include_self=False), True),
    ("cdist_kron", [f64(3, 2), f64(4, 2)], lambda a, b: ember.cdist(a, b) + ember.kron(a, b.t())[:3, :4], True),
    ("tensordot_trace", [f64(2, 3, 4), f64(4, 3, 2)],
     lambda a, b: ember.tensordot(a, b, dims=([1, 2], [1, 0])) + ember.trace(a[0] @ b[:, :, 0]), True),
    ("addmm_outer_mv", [f64(3, 4), f64(3, 2), f64(2, 4), f64(4)],
     lambda c, a, b, v: ember.addmm(c, a, b, beta=0.5, alpha=2) + ember.outer(ember.mv(c, v), v), True),
    ("conv_transpose2d", [f64(1, 2, 3, 3), f64(2, 3, 2, 2)], lambda x, w: F.conv_transpose2d(x, w, stride=2), True),
    ("pixel_shuffle", [f64(1, 8, 2, 3)], lambda x: F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2) * x, True),
    ("grid_sample", [f64(1, 2, 3, 4), f64(1, 2, 3, 2, lo=-1.2, hi=1.2)],
     lambda x, g: F.grid_sample(x, g, padding_mode="border", align_corners=False), True),
    ("adaptive_pools", [f64(1, 2, 5, 5)], lambda x: F.adaptive_avg_pool2d(x, 3) + F.adaptive_max_pool2d(x, 3), True),
    ("max_unpool2d", [f64(1, 2, 4, 4)], lambda x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2), True),
    ("interpolate_nearest", [f64(1, 2, 3, 3)], lambda x: F.interpolate(x, scale_factor=2), True),
    ("pad_modes", [f64(1, 2, 3, 4)], lambda x: F.pad(x, (1, 2, 1, 0), mode="reflect")
     + F.pad(x, (1, 2, 1, 0), mode="replicate") + F.pad(x, (1, 2, 1, 0), mode="circular"), True),
    ("distances", [f64(3, 4), f64(3, 4)],
     lambda a, b: F.cosine_similarity(a, b) + F.pairwise_distance(a, b) + F.pdist(a), True),
    ("losses", [f64(3, 4, lo=0.1, hi=0.9), f64(3, 4, lo=0.1, hi=0.9)],
     lambda a, b: F.smooth_l1_loss(a, b) + F.kl_div(a.log(), b, reduction="batchmean") + F.binary_cross_entropy(a, b),
     True),
    ("nll_loss_weighted", [f64(4, 5), f64(5, **POSITIVE)],
     lambda a, w: F.nll_loss(a, _on(a, [1, 0, 4, 2]), weight=w, ignore_index=0), True),
    ("norms", [f64(2, 4, 3), f64(3)],
     lambda x, w: F.rms_norm(x, (3,), w) + F.local_response_norm(x, 3) + F.normalize(x, dim=1), True),
    ("activations", [f64(3, 4)], lambda a: F.elu(a) + F.hardswish(a) + F.softplus(a) + F.mish(a) + F.glu(
        ember.cat([a, a], 1), 1), True),
]


def _run(fn, specs, device, seed):
    rng = np.random.default_rng(seed)
    host = [_make(s, rng) for s in specs]
    inputs = []
    for t, s in zip(host, specs):
        x = t.to(device)
        if s[0] == "f":
            x = x.detach().requires_grad_()
        inputs.append(x)
    return inputs, fn(*inputs)


def _values(t):
    assert isinstance(t, ember.Tensor)
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("name, specs, fn, differentiable", OPS, ids=[row[0] for row in OPS])
def test_op_matches_cpu(name, specs, fn, differentiable):
    cpu_inputs, cpu_out = _run(fn, specs, "cpu", seed=1)
    cuda_inputs, cuda_out = _run(fn, specs, "cuda", seed=1)
    assert cuda_out.device == ember.device("cuda", 0), name
    assert cuda_out.dtype == cpu_out.dtype and cuda_out.shape == cpu_out.shape
    np.testing.assert_allclose(_values(cuda_out), _values(cpu_out), rtol=1e-10, atol=1e-12)
    if not differentiable:
        return
    w = np.random.default_rng(2).uniform(-1, 1, cpu_out.shape)
    (cpu_out * ember.tensor(w)).sum().backward()
    (cuda_out * ember.tensor(w, device="cuda")).sum().backward()
    checked = 0
    for c, g in zip(cpu_inputs, cuda_inputs):
        if not c.requires_grad:
            continue
        assert (c.grad is None) == (g.grad is None), name
        if c.grad is not None:
            assert g.grad.device == g.device
            np.testing.assert_allclose(_values(g.grad), _values(c.grad), rtol=1e-10, atol=1e-12)
            checked += 1
    assert checked, f"{name}: no input received a gradient"


def _run_half(fn, specs, device, seed):
    """``_run`` with the floating inputs in float16 (what a model moved with ``.half()`` computes on)."""
    rng = np.random.default_rng(seed)
    inputs = []
    for s in specs:
        x = _make(s, rng).to(device)
        if s[0] == "f":
            x = x.half().requires_grad_()
        inputs.append(x)
    return inputs, fn(*inputs)


@pytest.mark.parametrize("name, specs, fn, differentiable", OPS, ids=[row[0] for row in OPS])
def test_op_matches_cpu_in_float16(name, specs, fn, differentiable):
    """float16 CUDA tensors compute what float16 CPU tensors do (both widen to float32 inside, as torch), or
    refuse with the same error type; gradients too."""
    try:
        cpu_inputs, cpu_out = _run_half(fn, specs, "cpu", seed=1)
    except Exception as error:
        with pytest.raises(type(error)):
            _run_half(fn, specs, "cuda", seed=1)
        return
    cuda_inputs, cuda_out = _run_half(fn, specs, "cuda", seed=1)
    assert cuda_out.device == ember.device("cuda", 0), name
    assert cuda_out.dtype == cpu_out.dtype and cuda_out.shape == cpu_out.shape
    # one float16 rounding apart at most (sums may round in another order)
    np.testing.assert_allclose(_values(cuda_out).astype(np.float64), _values(cpu_out).astype(np.float64),
                               rtol=4e-3, atol=4e-3)
    if not (differentiable and cpu_out.dtype.is_floating_point):
        return
    w = np.random.default_rng(2).uniform(-1, 1, cpu_out.shape).astype(np.float16)
    (cpu_out * ember.tensor(w)).sum().backward()
    (cuda_out * ember.tensor(w, device="cuda")).sum().backward()
    for c, g in zip(cpu_inputs, cuda_inputs):
        if c.requires_grad and c.grad is not None:
            assert g.grad is not None and g.grad.dtype == c.grad.dtype == ember.float16, name
            np.testing.assert_allclose(_values(g.grad).astype(np.float64), _values(c.grad).astype(np.float64),
                                       rtol=1e-2, atol=1e-2)
