"""Transformer layers and stacks, as torch's: encoder/decoder layers, their stacks and ``Transformer``.

Submodule names, order and defaults follow torch so that state dicts and ``print(model)`` agree.
The layers are plain compositions (attention, Linear, Dropout, LayerNorm); there is no fused fast path.
"""
from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from ...tensor import dtypes
from ...tensor.device import factory_device, place
from ...tensor.tensor import Tensor
from .. import functional as F
from .. import init
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]


def _activation(activation: str | Callable) -> Callable:
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


def _clones(layer: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(layer) for _ in range(n)])


def _float_mask(mask: Tensor | None, dtype: dtypes.dtype) -> Tensor | None:
    """A bool key-padding mask as 0 / -inf floats (how torch's layers canonicalise it); float masks unchanged."""
    if mask is None or mask.dtype is not dtypes.bool:
        return mask
    return Tensor._make(np.where(mask._array, -np.inf, 0.0).astype(dtype.np))


def _square_subsequent_mask(size: int, dtype: dtypes.dtype) -> np.ndarray:
    return np.triu(np.full((size, size), -np.inf, dtype.np), 1)


def _detect_is_causal(mask: Tensor | None, is_causal: bool | None, size: int | None) -> bool:
    """torch's rule: an explicit flag wins; otherwise a mask equal to the causal mask counts as causal."""
    if is_causal is not None:
        return is_causal
    if mask is None or tuple(mask.shape) != (size, size):
        return False
    if mask.dtype is dtypes.bool:
        return bool(np.array_equal(mask._array, np.triu(np.ones((size, size), bool), 1)))
    return bool(np.array_equal(mask._array, _square_subsequent_mask(size, mask.dtype)))


class _TransformerLayer(Module):
    """The sublayers both layer kinds share: self-attention, the feed-forward pair, ``norm1..k``, ``dropout1..k``.

    ``_blocks`` (k) counts the residual blocks; the decoder's extra block is its attention over ``memory``.
    """

    __constants__ = ["norm_first"]
    _blocks = 2

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        attention = dict(dropout=dropout, bias=bias, batch_first=batch_first, **factory)
        self.self_attn = MultiheadAttention(d_model, nhead, **attention)
        if self._blocks == 3:
            self.multihead_attn = MultiheadAttention(d_model, nhead, **attention)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        for k in range(1, self._blocks + 1):
            setattr(self, f"norm{k}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        for k in range(1, self._blocks + 1):
            setattr(self, f"dropout{k}", Dropout(dropout))
        self.activation = _activation(activation)

    def _sa_block(self, x: Tensor, mask: Tensor | None, padding: Tensor | None, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        last_dropout = getattr(self, f"dropout{self._blocks}")
        return last_dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention, then feed-forward, each with a residual and LayerNorm (after it unless ``norm_first``)."""

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        padding = _float_mask(src_key_padding_mask, src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, padding, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, padding, is_causal))
        return self.norm2(x + self._ff_block(x))


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention, attention over the encoder's ``memory``, then feed-forward; residuals and LayerNorms."""

    _blocks = 3

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
        return self.norm3(x + self._ff_block(x))

    def _mha_block(self, x: Tensor, memory: Tensor, mask: Tensor | None, padding: Tensor | None,
                   is_causal: bool) -> Tensor:
        x = self.multihead_attn(x, memory, memory, attn_mask=mask, key_padding_mask=padding, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)


class _LayerStack(Module):
    """``num_layers`` deep copies of one layer applied in turn, then the optional ``norm``."""

    def __init__(self, layer: Module, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def _is_causal(self, x: Tensor, mask: Tensor | None, is_causal: bool | None) -> bool:
        """torch's causal-mask detection, with the sequence dim taken from the first layer's ``batch_first``."""
        batch_first = len(self.layers) > 0 and self.layers[0].self_attn.batch_first
        seq_dim = 1 if batch_first and x.dim() == 3 else 0
        return _detect_is_causal(mask, is_causal, x.shape[seq_dim])

    def _finish(self, out: Tensor) -> Tensor:
        return self.norm(out) if self.norm is not None else out


class TransformerEncoder(_LayerStack):
    """``num_layers`` deep copies of ``encoder_layer`` applied in turn, then the optional ``norm``."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__(encoder_layer, num_layers, norm)
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        is_causal = self._is_causal(src, mask, is_causal)
        padding = _float_mask(src_key_padding_mask, src.dtype)
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, is_causal=is_causal, src_key_padding_mask=padding)
        return self._finish(out)


class TransformerDecoder(_LayerStack):
    """``num_layers`` deep copies of ``decoder_layer`` applied in turn, then the optional ``norm``."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__(decoder_layer, num_layers, norm)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        tgt_is_causal = self._is_causal(tgt, tgt_mask, tgt_is_causal)
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        return self._finish(out)


class Transformer(Module):
    """The encoder-decoder model of "Attention Is All You Need", with torch's defaults and initialisation."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation: str | Callable = F.relu,
                 custom_encoder: Module | None = None, custom_decoder: Module | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first,
                      bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batched = src.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if batched and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        """A (sz, sz) float mask: 0 on and below the diagonal, -inf above (each position sees only its past); on
        ``device`` (default: the default device) in ``dtype`` (default: the default dtype), as torch."""
        array = _square_subsequent_mask(sz, dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype))
        return Tensor._make(place(array, factory_device(device)))

    def _reset_parameters(self) -> None:
        """xavier_uniform_ for every parameter with more than one dim, as torch."""
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
