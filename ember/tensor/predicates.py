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
from .arguments import tensor_args

__all__ = ["is_nonzero", "is_same_size", "is_signed", "is_complex", "is_conj", "is_neg", "conj", "conj_physical",
           "conj_physical_", "resolve_conj", "resolve_neg", "adjoint", "get_device", "is_floating_point",
           "is_inference", "numel"]


@tensor_args
def is_nonzero(input: Tensor) -> bool:
    """Whether a one-element tensor is nonzero (NaN counts as nonzero); torch's RuntimeError for any other size."""
    return bool(_check_tensor("is_nonzero", input))


@tensor_args
def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape."""
    return input.shape == other.shape


@tensor_args
def is_signed(input: Tensor) -> bool:
    """Whether ``input``'s dtype holds negative numbers (floats and signed integers; not uint8 nor bool)."""
    return input.dtype.is_signed


@tensor_args
def is_complex(input: Tensor) -> bool:
    """Whether ``input`` has a complex dtype: never, in ember."""
    return input.is_complex()


@tensor_args
def is_conj(input: Tensor) -> bool:
    """Whether ``input`` is a lazily conjugated view: never for a real tensor."""
    return input.dtype.is_complex


@tensor_args
def is_neg(input: Tensor) -> bool:
    """Whether ``input`` is a lazily negated view: never for a real tensor."""
    return input.dtype.is_complex


@tensor_args
def conj(input: Tensor) -> Tensor:
    """The complex conjugate as a view: a real tensor is its own conjugate, so ``input`` itself."""
    return _check_tensor("conj", input)


@tensor_args
def resolve_conj(input: Tensor) -> Tensor:
    """``input`` with a lazy conjugation made real: a real tensor has none, so ``input`` itself."""
    return _check_tensor("resolve_conj", input)


@tensor_args
def resolve_neg(input: Tensor) -> Tensor:
    """``input`` with a lazy negation made real: a real tensor has none, so ``input`` itself."""
    return _check_tensor("resolve_neg", input)


@tensor_args
@with_out
def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate computed into memory: a real tensor's is itself (returned as is, as torch does)."""
    return _check_tensor("conj_physical", input)


@tensor_args
def conj_physical_(input: Tensor) -> Tensor:
    """In-place ``conj_physical``: nothing changes in a real tensor, but it counts as an in-place op (torch's
    leaf check and a version bump)."""
    _check_inplace(input, "conj_physical_")
    input._version.value += 1
    return input


@tensor_args
def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims, a view (the transpose, for real tensors)."""
    if input.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return transpose(input, -2, -1)


@tensor_args
def get_device(input: Tensor) -> int:
    """-1 for a CPU tensor, else the index of its CUDA device."""
    return input.get_device()


@tensor_args
def is_floating_point(input: Tensor) -> bool:
    """Whether ``input`` has a floating dtype."""
    return input.dtype.is_floating_point


@tensor_args
def is_inference(input: Tensor) -> bool:
    """Whether ``input`` is an inference tensor (made under ``inference_mode``)."""
    return input.is_inference()


@tensor_args
def numel(input: Tensor) -> int:
    """Number of elements of ``input``."""
    return input.numel()


_CLASS_METHODS = ("get_device", "is_complex", "is_floating_point", "is_inference", "numel")  # Tensor's own
TENSOR_METHODS: dict[str, Callable] = {name: globals()[name] for name in __all__ if name not in _CLASS_METHODS}
