"""torch's BLAS-style fused products, ``beta * input + alpha * product``: addmv, addr, baddbmm, addbmm; the in-place
method forms of them and of addmm; and the small names around products: ger, vdot, chain_matmul.

The rules are torch's: ``beta == 0`` ignores ``input`` (NaN in it does not reach the result, though it must still
broadcast); integer tensors truncate a float ``alpha``/``beta`` in the BLAS ops, while ``addr`` (composite in
torch) refuses one and reads them as truths for bool tensors. Gradients come from the tensor ops the result is
written in, so they differentiate again; the nodes carry torch's names (``AddmvBackward0``).
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

from ..autograd.function import name_node
from . import dtypes
from .elementwise import binary, inplace
from . import autocast_policy
from .matmul import addmm, bmm, dot, matmul, rounded_once
from .out_arg import with_out
from .tensor import Tensor
from .arguments import tensor_args
from ..linalg.products import multi_dot


def _check_tensor(name: str, x: Any, arg: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(x).__name__}")


def _blas_scalar(dt: dtypes.dtype, value: Any) -> Any:
    """``alpha``/``beta`` as torch's BLAS kernels read them: truncated to an integer for integer tensors."""
    return value if dt.is_floating_point else int(value)


def scaled_sum(input: Tensor, product: Tensor, beta: Any, alpha: Any, node: str) -> Tensor:
    """``beta * input + alpha * product`` with ``input`` broadcast to ``product``'s shape first (torch's error when it
    can't) and skipped entirely when ``beta`` is 0; the result's node is named ``node``."""
    expanded = input.expand(product.shape)
    if alpha != 1:
        product = product * alpha
    if beta != 0:
        product = product + (expanded if beta == 1 else expanded * beta)
    return name_node(product, node)


def _refuse_bool(dt: dtypes.dtype, kernel: str) -> None:
    if dt is dtypes.bool:
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


@tensor_args
@with_out
@rounded_once
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    if autocast_policy.ACTIVE and autocast_policy.covers("addmv", mat):
        return autocast_policy.run("addmv", addmv, input, mat, vec, beta=beta, alpha=alpha)
    for x, arg in ((input, "input"), (mat, "mat"), (vec, "vec")):
        _check_tensor("addmv", x, arg)
    if mat.ndim != 2 or vec.ndim != 1 or input.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    if mat.shape[1] != vec.shape[0] or input.ndim and input.shape[0] not in (1, mat.shape[0]):
        shapes = ", ".join(f"{arg} ({'x'.join(map(str, x.shape))})" for x, arg in ((input, "input"), (mat, "mat"),
                                                                                 (vec, "vec")))
        raise RuntimeError(f"size mismatch, got {shapes}")
    if not (input.dtype is mat.dtype is vec.dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {input.dtype.scalar_type_name}, "
                           f"{mat.dtype.scalar_type_name}, and {vec.dtype.scalar_type_name}")
    _refuse_bool(mat.dtype, "addmv_impl_cpu")
    return scaled_sum(input, matmul(mat, vec), _blas_scalar(mat.dtype, beta), _blas_scalar(mat.dtype, alpha),
                      "AddmvBackward0")


def _addr_scalar(dt: dtypes.dtype, value: Any, name: str) -> Any:
    """``addr``'s rule: a float ``alpha``/``beta`` only for floating tensors; a truth value for bool ones."""
    if not dt.is_floating_point and isinstance(value, float):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")
    return bool(value) if dt is dtypes.bool else value


@tensor_args
@with_out(cast=True)
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``, in the dtype the three promote to (``and``/``or`` for bool)."""
    if autocast_policy.ACTIVE and autocast_policy.covers("addr", vec1):
        return autocast_policy.run("addr", addr, input, vec1, vec2, beta=beta, alpha=alpha)
    for x, arg in ((input, "input"), (vec1, "vec1"), (vec2, "vec2")):
        _check_tensor("addr", x, arg)
    for x, arg in ((vec1, "vec1"), (vec2, "vec2")):
        if x.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {arg}, but got {x.ndim}-D")
    dt = dtypes.result_type_of((input, vec1, vec2))
    beta, alpha = _addr_scalar(dt, beta, "beta"), _addr_scalar(dt, alpha, "alpha")
    column, row = vec1.to(dt).unsqueeze(1), vec2.to(dt).unsqueeze(0)
    if dt is not dtypes.bool:
        return scaled_sum(input.to(dt), column * row, beta, alpha, "AddrBackward0")
    product = binary("logical_and", column, row) if alpha else column.new_zeros((vec1.shape[0], vec2.shape[0]))
    expanded = input.expand(product.shape)
    return binary("logical_or", product, expanded) if beta else product


def _check_batches(input: Tensor, batch1: Tensor, batch2: Tensor, keep_batch: bool) -> None:
    """torch's order: ``input`` must broadcast to the result's shape (its sizes read from the batches, an
    IndexError when they have too few dims) before the batches are checked to be 3-D."""
    rows = (batch1.size(0), batch1.size(1)) if keep_batch else (batch1.size(1),)
    input.expand(rows + (batch2.size(2),))
    for x, arg in ((batch1, "batch1"), (batch2, "batch2")):
        if x.ndim != 3:
            raise RuntimeError(f"{arg} must be a 3D tensor")


@tensor_args
@with_out
@rounded_once
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)`` (``input`` broadcast to the batch of products)."""
    if autocast_policy.ACTIVE and autocast_policy.covers("baddbmm", batch1):
        return autocast_policy.run("baddbmm", baddbmm, input, batch1, batch2, beta=beta, alpha=alpha)
    for x, arg in ((input, "input"), (batch1, "batch1"), (batch2, "batch2")):
        _check_tensor("baddbmm", x, arg)
    if not (input.dtype is batch1.dtype is batch2.dtype):
        names = [dtypes.CPP_TYPE_NAMES[x.dtype.name] for x in (input, batch1, batch2)]
        raise RuntimeError(f"Input dtypes must be the same, got: input {names[0]}, batch1: {names[1]}, "
                           f"batch2: {names[2]}")
    _check_batches(input, batch1, batch2, True)
    _refuse_bool(input.dtype, "baddbmm")
    dt = input.dtype
    return scaled_sum(input, bmm(batch1, batch2), _blas_scalar(dt, beta), _blas_scalar(dt, alpha),
                      "BaddbmmBackward0")


@tensor_args
@with_out
@rounded_once
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``: the batch of products summed into one matrix."""
    if autocast_policy.ACTIVE and autocast_policy.covers("addbmm", batch1):
        return autocast_policy.run("addbmm", addbmm, input, batch1, batch2, beta=beta, alpha=alpha)
    for x, arg in ((input, "input"), (batch1, "batch1"), (batch2, "batch2")):
        _check_tensor("addbmm", x, arg)
    _check_batches(input, batch1, batch2, False)
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {batch1.shape[0]} and "
                           f"{batch2.shape[0]}")
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x{batch1.shape[2]} and "
                           f"{batch2.shape[1]}x{batch2.shape[2]})")
    for x, arg in ((input, "self"), (batch1, "mat1")):
        if x.dtype is not batch2.dtype:
            raise RuntimeError(f"{arg} and mat2 must have the same dtype, but got {x.dtype.scalar_type_name} and "
                               f"{batch2.dtype.scalar_type_name}")
    _refuse_bool(input.dtype, "addmm_impl_cpu_")
    dt = input.dtype
    product = bmm(batch1, batch2).sum(0, dtype=dt)
    return scaled_sum(input, product, _blas_scalar(dt, beta), _blas_scalar(dt, alpha), "AddbmmBackward0")


def _in_place(name: str, fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The method ``name_``: ``fn(self, ...)`` written into ``self``, which must already have the result's shape
    (torch's "Bad in-place call" otherwise: these ops do not broadcast ``self``)."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        def compute(current: Tensor) -> Tensor:
            result = fn(current, *args, **kwargs)
            if result.shape != self.shape:
                raise RuntimeError(f"Bad in-place call: input tensor size {list(self.shape)} and output tensor "
                                   f"size {list(result.shape)} should match")
            return result
        return inplace(self, name, compute)

    method.__name__ = name + "_"
    method.__doc__ = f"In-place ``{name}``: ``self`` takes ``beta * self + alpha * product``."
    return method


addmv_ = tensor_args(_in_place("addmv", addmv))


@tensor_args
@with_out
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """``sum(conj(input) * other)`` of two 1-D tensors: ``dot`` for ember's real dtypes."""
    if autocast_policy.ACTIVE and autocast_policy.covers("vdot", input):
        return autocast_policy.run("vdot", vdot, input, other)
    _check_tensor("vdot", input, "input")
    _check_tensor("vdot", other, "other")
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {input.dtype.scalar_type_name} "
                           f"and {other.dtype.scalar_type_name}")
    _refuse_bool(input.dtype, "dot")
    return name_node(dot(input, other), "VdotBackward0")


@tensor_args
@with_out
def chain_matmul(*matrices: Tensor) -> Tensor:
    """The product of the given matrices in the cheapest order (deprecated in torch for
    ``torch.linalg.multi_dot``, which it calls, and so warns as torch does)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=2)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        _check_tensor("chain_matmul", m, "matrices")
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(list(matrices))


TENSOR_METHODS: dict[str, Callable] = {
    "addmv": addmv, "addr": addr, "baddbmm": baddbmm, "addbmm": addbmm, "vdot": vdot, "addmv_": addmv_,
    "addr_": _in_place("addr", addr), "baddbmm_": _in_place("baddbmm", baddbmm),
    "addbmm_": _in_place("addbmm", addbmm), "addmm_": _in_place("addmm", addmm),
}

__all__ = ["addmv", "addmv_", "addr", "baddbmm", "addbmm", "vdot", "chain_matmul", "scaled_sum"]
