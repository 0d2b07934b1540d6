"""Questions about a tensor (``is_nonzero``, ``is_same_size``, ``is_signed``, ``is_conj``, ...) and the complex
conjugation family on ember's real dtypes, where torch's answers are fixed: a real tensor is never conjugated
nor negated lazily, so ``conj``, ``resolve_conj`` and ``resolve_neg`` return the tensor itself (as torch does),
and ``adjoint`` is the transpose of the last two dims."""
from __future__ import annotations

from typing import Callable

from .elementwise import _check_tensor
from .out_arg import with_out
from .tensor import Tensor, _check_inplace
from .views import transpose

__all__ = ["is_nonzero", "is_same_size", "is_signed", "is_complex", "is_conj", "is_neg", "conj", "conj_physical",
           "conj_physical_", "resolve_conj", "resolve_neg", "adjoint", "get_device"]


def is_nonzero(input: Tensor) -> bool:
    """Whether a one-element tensor is nonzero (NaN counts as nonzero); torch's RuntimeError for any other size."""
    return bool(_check_tensor("is_nonzero", input))


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape."""
    return input.shape == other.shape


def is_signed(input: Tensor) -> bool:
    """Whether ``input``'s dtype holds negative numbers (floats and signed integers; not uint8 nor bool)."""
    return input.dtype.is_signed


def is_complex(input: Tensor) -> bool:
    """Whether ``input`` has a complex dtype: never, in ember."""
    return input.is_complex()


def is_conj(input: Tensor) -> bool:
    """Whether ``input`` is a lazily conjugated view: never for a real tensor."""
    return input.dtype.is_complex


def is_neg(input: Tensor) -> bool:
    """Whether ``input`` is a lazily negated view: never for a real tensor."""
    return input.dtype.is_complex


def conj(input: Tensor) -> Tensor:
    """The complex conjugate as a view: a real tensor is its own conjugate, so ``input`` itself."""
    return _check_tensor("conj", input)


def resolve_conj(input: Tensor) -> Tensor:
    """``input`` with a lazy conjugation made real: a real tensor has none, so ``input`` itself."""
    return _check_tensor("resolve_conj", input)


def resolve_neg(input: Tensor) -> Tensor:
    """``input`` with a lazy negation made real: a real tensor has none, so ``input`` itself."""
    return _check_tensor("resolve_neg", input)


@with_out
def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate computed into memory: a real tensor's is itself (returned as is, as torch does)."""
    return _check_tensor("conj_physical", input)


def conj_physical_(input: Tensor) -> Tensor:
    """In-place ``conj_physical``: nothing changes in a real tensor, but it counts as an in-place op (torch's
    leaf check and a version bump)."""
    _check_inplace(input, "conj_physical_")
    input._version.value += 1
    return input


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims, a view (the transpose, for real tensors)."""
    if input.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return transpose(input, -2, -1)


def get_device(input: Tensor) -> int:
    """-1 for a CPU tensor, else the index of its CUDA device."""
    return input.get_device()


TENSOR_METHODS: dict[str, Callable] = {name: globals()[name] for name in __all__ if name not in ("get_device",
                                                                                                  "is_complex")}
