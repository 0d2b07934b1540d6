"""Attention: ``scaled_dot_product_attention`` and the multi-head attention forward behind ``nn.MultiheadAttention``.

Both are compositions of differentiable tensor ops (batched matmul, softmax, masking, dropout), so
gradients of any order come for free. Mask conventions follow torch: for
``scaled_dot_product_attention`` a bool mask says where attention is *allowed*; for multi-head
attention a bool ``attn_mask`` / ``key_padding_mask`` says where it is *forbidden*. Float masks are
added to the scores in both.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...tensor import autocast_policy, dtypes
from ...tensor.creation import zeros
from ...tensor.joins import cat
from ...tensor.tensor import Tensor
from .activation import softmax
from .dropout import dropout
from .linear import linear
from .vision import pad

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _as_additive(mask: Tensor, forbidden_when_true: bool, dtype: dtypes.dtype, name: str) -> Tensor:
    """A float mask to add to attention scores: bool masks become 0 / -inf, float masks pass through."""
    if mask.dtype is dtypes.bool:
        blocked = mask._array if forbidden_when_true else ~mask._array
        return Tensor._make(np.where(blocked, -np.inf, 0.0).astype(dtype.np))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _causal_mask(like: Tensor, length: int, source: int) -> Tensor:
    """-inf above the diagonal (keys after each query), on ``like``'s device and in its dtype."""
    return Tensor._make(np.triu(np.full((length, source), -np.inf, like.dtype.np, like=like._array), 1))


def _softmax_over_keys(scores: Tensor, mask: Tensor | None) -> Tensor:
    """softmax over the last dim; a row with every key masked gives zeros (torch's CPU kernels do the same)."""
    if mask is None:
        return softmax(scores, -1)
    scores = scores + mask
    dead = np.isneginf(np.broadcast_to(mask._array, scores.shape)).all(-1, keepdims=True)
    if not dead.any():
        return softmax(scores, -1)
    dead_t = Tensor._make(dead)
    return softmax(scores.masked_fill(dead_t, 0.0), -1).masked_fill(dead_t, 0.0)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(Q K^T * scale + mask) V`` over the last two dims (batch dims broadcast), as torch's.

    ``attn_mask``: bool (True = may attend) or float (added to the scores); ``is_causal`` masks keys
    after each query (top-left aligned); ``enable_gqa`` repeats key/value heads (dim -3) to match the
    query's heads.
    """
    if autocast_policy.ACTIVE and autocast_policy.covers("scaled_dot_product_attention", query):
        return autocast_policy.run("scaled_dot_product_attention", scaled_dot_product_attention, query, key, value,
                                   attn_mask, dropout_p, is_causal, scale, enable_gqa)
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("scaled_dot_product_attention: query, key and value must be at least 2-D, got "
                           f"{query.dim()}-D, {key.dim()}-D and {value.dim()}-D")
    if query.dtype is not key.dtype or query.dtype is not value.dtype:
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead."
        )
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise RuntimeError(
            f"scaled_dot_product_attention: shapes do not fit: query {list(query.shape)}, key {list(key.shape)}, "
            f"value {list(value.shape)}"
        )
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        heads, kv_heads = query.shape[-3], key.shape[-3]
        if heads % kv_heads:
            raise RuntimeError(f"number of heads in key/value ({kv_heads}) must divide the query's ({heads})")
        key = key.repeat_interleave(heads // kv_heads, dim=-3)
        value = value.repeat_interleave(heads // kv_heads, dim=-3)
    length, source = query.shape[-2], key.shape[-2]
    mask = _causal_mask(query, length, source) if is_causal else None
    if attn_mask is not None:
        mask = _as_additive(attn_mask, False, query.dtype, "attn_mask")
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    weights = _softmax_over_keys(query.matmul(key.transpose(-2, -1)) * factor, mask)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights.matmul(value)


# ---- multi-head attention --------------------------------------------------------------------------------------------

def _check_shapes(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None,
                  attn_mask: Tensor | None, num_heads: int) -> bool:
    """torch's shape rules for multi-head attention; returns whether the input is batched."""
    nd = query.dim()
    if nd not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {nd}-D query tensor")
    which = "batched (3-D)" if nd == 3 else "unbatched (2-D)"
    if key.dim() != nd or value.dim() != nd:
        raise AssertionError(f"For {which} `query`, expected `key` and `value` to be {nd}-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != nd - 1:
        raise AssertionError(f"For {which} `query`, expected `key_padding_mask` to be `None` or {nd - 1}-D but "
                             f"found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For {which} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                                 f"{attn_mask.dim()}-D tensor instead")
        expected = (num_heads, query.shape[0], key.shape[0])
        if nd == 2 and attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
            raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
    return nd == 3


def _in_projection(query: Tensor, key: Tensor, value: Tensor, weight: Tensor | None, bias: Tensor | None,
                   separate: tuple[Tensor | None, ...]) -> tuple[Tensor, Tensor, Tensor]:
    """q, k, v projections: one matmul for self-attention, two when key is value, else three."""
    biases = (None, None, None) if bias is None else bias.chunk(3)
    if separate[0] is not None:
        return tuple(linear(x, w, b) for x, w, b in zip((query, key, value), separate, biases))
    if query is key and key is value:
        return linear(query, weight, bias).chunk(3, -1)
    embed = query.shape[-1]
    w_q, w_kv = weight[:embed], weight[embed:]
    if key is value:
        b_kv = None if bias is None else bias[embed:]
        return (linear(query, w_q, biases[0]), *linear(key, w_kv, b_kv).chunk(2, -1))
    w_k, w_v = w_kv.chunk(2)
    return linear(query, w_q, biases[0]), linear(key, w_k, biases[1]), linear(value, w_v, biases[2])


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
                                 in_proj_weight: Tensor | None, in_proj_bias: Tensor | None,
                                 bias_k: Tensor | None, bias_v: Tensor | None, add_zero_attn: bool,
                                 dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Tensor | None,
                                 training: bool = True, key_padding_mask: Tensor | None = None,
                                 need_weights: bool = True, attn_mask: Tensor | None = None,
                                 use_separate_proj_weight: bool = False, q_proj_weight: Tensor | None = None,
                                 k_proj_weight: Tensor | None = None, v_proj_weight: Tensor | None = None,
                                 static_k: Tensor | None = None, static_v: Tensor | None = None,
                                 average_attn_weights: bool = True, is_causal: bool = False) -> tuple[Tensor, Any]:
    """Multi-head attention on sequence-first (L, N, E) or unbatched (L, E) inputs, as torch's.

    Returns ``(output, weights)``; weights (N, L, S) averaged over heads, (N, heads, L, S) when
    ``average_attn_weights=False``, or None when ``need_weights=False``.
    """
    batched = _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                             f"{tuple(value.shape[:2])}")
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
            "`generate_square_subsequent_mask` to create this mask."
        )
    dtype = query.dtype
    if key_padding_mask is not None:
        key_padding_mask = _as_additive(key_padding_mask, True, dtype, "key_padding_mask")
    if attn_mask is not None:
        attn_mask = _as_additive(attn_mask, True, dtype, "attn_mask")

    separate = (q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight else (None, None, None)
    if use_separate_proj_weight and any(w is None for w in separate):
        raise AssertionError("use_separate_proj_weight is True but q_proj_weight, k_proj_weight or v_proj_weight "
                             "is None")
    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate)

    if attn_mask is not None:
        expected = (tgt_len, key.shape[0]) if attn_mask.dim() == 2 else (bsz * num_heads, tgt_len, key.shape[0])
        if tuple(attn_mask.shape) != expected:
            raise RuntimeError(f"The shape of the {attn_mask.dim()}D attn_mask is {attn_mask.shape}, but should be "
                               f"{expected}.")
        if attn_mask.dim() == 2:
            attn_mask = attn_mask.unsqueeze(0)
    if bias_k is not None or bias_v is not None:
        if bias_k is None or bias_v is None:
            raise AssertionError("bias_k is set but bias_v is None" if bias_v is None
                                 else "bias_v is set but bias_k is None")
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key." if static_k is not None
                                 else "bias cannot be added to static value.")
        k = cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))

    heads = bsz * num_heads
    q = q.reshape(tgt_len, heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], heads, head_dim).transpose(0, 1) if static_k is None else static_k
    v = v.reshape(v.shape[0], heads, head_dim).transpose(0, 1) if static_v is None else static_v
    if add_zero_attn:
        k = cat([k, zeros((heads, 1, head_dim), dtype=k.dtype)], 1)
        v = cat([v, zeros((heads, 1, head_dim), dtype=v.dtype)], 1)
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{key_padding_mask.shape}")
        padding = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        padding = padding.reshape(heads, 1, src_len)
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = (q * math.sqrt(1.0 / head_dim)).matmul(k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        out = weights.matmul(v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else attn_mask.reshape(bsz, num_heads, -1,
                                                                                                   src_len)
    shape4 = (bsz, num_heads, -1, head_dim)
    out = scaled_dot_product_attention(q.reshape(shape4), k.reshape(shape4), v.reshape(shape4), attn_mask,
                                       dropout_p)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    return (out if batched else out.squeeze(1)), None
