"""``Embedding`` and ``EmbeddingBag``: lookup tables of learnable vectors."""
from __future__ import annotations

from typing import Any

from ...autograd.grad_mode import no_grad
from ...tensor.creation import empty
from ...tensor.tensor import Tensor
from .. import init
from ..functional.sparse import embedding, embedding_bag
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding", "EmbeddingBag"]


def _padding_index(padding_idx: int | None, num_embeddings: int, name: str) -> int | None:
    """``padding_idx`` checked against the table and made non-negative."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise AssertionError(f"{name} must be within num_embeddings")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def _table(module: Module, weight: Tensor | None, requires_grad: bool, device: Any, dtype: Any) -> None:
    """Set ``module.weight``: the given table (checked against the sizes) or a fresh N(0, 1) one."""
    shape = (module.num_embeddings, module.embedding_dim)
    if weight is None:
        module.weight = Parameter(empty(shape, device=device, dtype=dtype), requires_grad=requires_grad)
        module.reset_parameters()
        return
    if tuple(weight.shape) != shape:
        raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
    module.weight = Parameter(weight, requires_grad=requires_grad)


def _pretrained(cls: type, embeddings: Tensor, freeze: bool, **kwargs: Any) -> Module:
    if embeddings.ndim != 2:
        raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
    rows, cols = embeddings.shape
    module = cls(rows, cols, _weight=embeddings, **kwargs)
    module.weight.requires_grad = not freeze
    return module


# Options the reprs leave out at these values ("mode" has none: it is always shown).
_REPR_DEFAULTS = {"padding_idx": None, "max_norm": None, "norm_type": 2, "scale_grad_by_freq": False, "sparse": False}


class _LookupTable(Module):
    """What both lookup layers share: N(0, 1) initialisation with the padding row zeroed."""

    padding_idx: int | None

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _repr(self, *options: str) -> str:
        """The sizes, then ``name=value`` for each of ``options`` that is not at its default (torch omits those)."""
        parts = [f"{self.num_embeddings}, {self.embedding_dim}"]
        for name in options:
            value, default = getattr(self, name), _REPR_DEFAULTS.get(name, object())
            if value is not default and value != default:
                parts.append(f"{name}={value!r}")
        return ", ".join(parts)

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)


class Embedding(_LookupTable):
    """A table of ``num_embeddings`` vectors of size ``embedding_dim``, looked up by index."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Tensor | None = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = _padding_index(padding_idx, num_embeddings, "Padding_idx")
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        _table(self, _weight, not _freeze, device, dtype)
        self.sparse = sparse

    def forward(self, input: Tensor) -> Tensor:
        return embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                         self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        return self._repr("padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse")

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> "Embedding":
        """An Embedding holding ``embeddings`` (2-D) as its weight; ``freeze`` turns off its gradient."""
        return _pretrained(cls, embeddings, freeze, padding_idx=padding_idx, max_norm=max_norm,
                           norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


class EmbeddingBag(_LookupTable):
    """Sums, means or maxima of bags of embeddings, without materialising the looked-up vectors per bag."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                 _weight: Tensor | None = None, include_last_offset: bool = False, padding_idx: int | None = None,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.padding_idx = _padding_index(padding_idx, num_embeddings, "padding_idx")
        _table(self, _weight, True, device, dtype)
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                             self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                             self.padding_idx)

    def extra_repr(self) -> str:
        return self._repr("max_norm", "norm_type", "scale_grad_by_freq", "mode", "padding_idx")

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> "EmbeddingBag":
        """An EmbeddingBag holding ``embeddings`` (2-D) as its weight; ``freeze`` turns off its gradient."""
        return _pretrained(cls, embeddings, freeze, max_norm=max_norm, norm_type=norm_type,
                           scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                           include_last_offset=include_last_offset, padding_idx=padding_idx)
