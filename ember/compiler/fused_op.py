"""A fused chain at run time: its generated kernels, and the differentiable op that runs them.

``FusedChain.run(*inputs)`` computes the chain's outputs in one pass over memory; when a gradient is needed it runs
as ``FusedChainOp``, one graph node whose backward is the chain's fused backward kernel (the forward recomputed
per element, then the declared gradients in reverse: one more pass). Under ``create_graph`` the backward runs the
member ops again as eager ops and differentiates them, so gradients of gradients work as they do eagerly.

Kernels are generated per operand layout (``codegen``: full, scalar, strided) on first use and loaded through
``kernel_cache``; the chain keeps each by layout, so a replay looks its kernel up by one tuple.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .._grad_state import state as _grad_modes
from ..autograd import function as _function
from ..autograd.function import Function
from ..autograd.gradients import grad
from ..autograd.grad_mode import enable_grad
from ..tensor import dtypes
from ..tensor._dispatch import empty_like_layout, sum_to_shape
from ..tensor.tensor import Tensor
from . import kernel_cache
from .codegen import COLUMN, FULL, ROW, SCALAR, STRIDED, module_source
from .graph import Value

if TYPE_CHECKING:
    from .fusion import ChainSpec

__all__ = ["FusedChain", "FusedChainOp"]


def _grid_view(a: Any, shape: tuple[int, ...], grid: tuple[int, int]) -> tuple[Any, str]:
    """Operand ``a`` broadcast to ``shape`` as the kernel reads it by rows (``grid``): its kind and array."""
    wide = np.broadcast_to(a, shape)
    try:
        view = np.reshape(wide, grid, copy=False)
    except ValueError:  # strides no 2-D view expresses: a copy
        return STRIDED, np.ascontiguousarray(wide).reshape(grid)
    rows, cols = view.strides
    if rows == 0 and (cols == view.itemsize or grid[1] == 1):
        return ROW, view[0]
    if cols == 0:
        return COLUMN, view[:, 0]
    return STRIDED, view


def _operands(arrays: list[Any], shape: tuple[int, ...]) -> tuple[list[Any], tuple[str, ...], tuple[int, int]]:
    """The arrays as a kernel takes them, their kinds (``codegen``), and the (rows, cols) the kernel loops over
    (rows 0 for the flat kernels, which loop over ``cols`` elements)."""
    kinds = [SCALAR if a.size == 1 else FULL if a.shape == shape and a.flags.c_contiguous else STRIDED
             for a in arrays]
    if STRIDED not in kinds:
        operands = [a.reshape(1) if k == SCALAR else a.reshape(-1) for a, k in zip(arrays, kinds)]
        return operands, tuple(kinds), (0, math.prod(shape))
    cols = shape[-1] if shape else 1
    grid = (math.prod(shape) // cols, cols)
    operands = []
    for i, (a, k) in enumerate(zip(arrays, kinds)):
        if k == SCALAR:
            operands.append(a.reshape(1))
        elif k == FULL:
            operands.append(a.reshape(grid))
        else:
            kinds[i], view = _grid_view(a, shape, grid)
            operands.append(view)
    return operands, tuple(kinds), grid


def _laid_out(out: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """An output array as the kernel writes it: flat (rows 0), or by (rows, cols)."""
    return out.reshape(-1) if grid[0] == 0 else out.reshape(grid)


class FusedChain:
    """The kernels of one ``ChainSpec`` (see the module docstring)."""

    def __init__(self, spec: "ChainSpec") -> None:
        self.spec = spec
        self.name = spec.name
        self.op_names = spec.op_names
        self._shape = spec.shape
        self._size = math.prod(spec.shape)
        self._out_dtypes = [v.info.dtype for v in spec.outputs]
        self._forward: dict[tuple, Any] = {}
        self._backward: dict[tuple, Any] = {}
        self._bodies: dict[tuple, tuple] = {}

    def run(self, *inputs: Tensor) -> tuple[Tensor, ...]:
        """The chain's outputs for ``inputs``, recorded as one op when a gradient is needed."""
        if _function._APPLY_WRAPPERS or (_grad_modes.enabled and any(t._requires_grad for t in inputs)):
            return FusedChainOp.apply(self, *inputs)
        return tuple([Tensor._make(a) for a in self.forward([t._array for t in inputs])])

    def forward(self, arrays: list[Any]) -> list[np.ndarray]:
        """The output arrays of the chain's forward kernel over ``arrays``."""
        outs = [empty_like_layout(None, self._shape, dt) for dt in self._out_dtypes]
        if self._size:
            operands, kinds, grid = _operands(arrays, self._shape)
            kernel = self._forward.get(kinds)
            if kernel is None:
                title = " -> ".join(self.op_names) + " (forward)"
                source = module_source(title, self.spec.forward_lines, self.spec.forward_results, list(kinds))
                kernel = self._forward[kinds] = kernel_cache.load(source).run
            kernel(*grid, *operands, *[_laid_out(o, grid) for o in outs])
        return outs

    def backward(self, arrays: list[Any], grads: list[Any], needs: tuple[bool, ...]) -> list[np.ndarray | None]:
        """The input gradients (at the output's shape; None where ``needs`` says no or no op differentiates the
        input) for output gradients ``grads`` (None: zero) by the chain's backward kernel."""
        body = self._bodies.get(needs)
        if body is None:
            body = self._bodies[needs] = self.spec.backward_body(needs)
        lines, results, graded, wanted = body
        read = [grads[i] if grads[i] is not None else np.zeros(1, self._out_dtypes[i].np) for i in graded]
        found: list[np.ndarray | None] = [None] * len(needs)
        if not (self._size and wanted):
            for k in wanted:
                found[k] = np.zeros(self._shape, arrays[k].dtype)
            return found
        operands, kinds, grid = _operands(list(arrays) + read, self._shape)
        summed = tuple(kinds[k] == ROW for k in wanted)  # a row operand's gradient: summed in the kernel
        outs = [np.zeros(grid[1], np.float64) if add else
                _laid_out(empty_like_layout(None, self._shape, dtypes.to_dtype(arrays[k].dtype)), grid)
                for k, add in zip(wanted, summed)]
        kernel = self._backward.get((needs, kinds))
        if kernel is None:
            title = " -> ".join(self.op_names) + " (backward)"
            kernel = self._backward[(needs, kinds)] = kernel_cache.load(
                module_source(title, lines, results, list(kinds), summed)).run
        kernel(*grid, *operands, *outs)
        for k, out, add in zip(wanted, outs, summed):
            a = arrays[k]
            found[k] = out.astype(a.dtype).reshape(a.shape) if add else out.reshape(self._shape)
        return found

    def eager_backward(self, inputs: tuple[Tensor, ...], grads: tuple, needs: tuple[bool, ...]) -> list:
        """The input gradients as a differentiable computation: the member ops run again eagerly from
        ``inputs`` and are differentiated (for ``create_graph``)."""
        with enable_grad():
            values: dict[int, Tensor] = {id(v): t for v, t in zip(self.spec.inputs, inputs)}
            for node in self.spec.members:
                args = tuple(values[id(a)] if isinstance(a, Value) else a for a in node.args)
                values[id(node.outputs)] = node.target.apply(*args)
            pairs = [(values[id(v)], g) for v, g in zip(self.spec.outputs, grads)
                     if g is not None and values[id(v)].requires_grad]
            wanted = [t for t, need in zip(inputs, needs) if need]
            found = iter(grad([o for o, _ in pairs], wanted, [g for _, g in pairs], create_graph=True,
                              allow_unused=True) if pairs and wanted else [None] * len(wanted))
        return [next(found) if need else None for need in needs]


class FusedChainOp(Function):
    """A fused chain as one graph node: the forward kernel forward, the fused backward kernel backward."""

    @staticmethod
    def forward(ctx, chain: FusedChain, *inputs: Tensor) -> tuple:
        outs = tuple([Tensor._make(a) for a in chain.forward([t._array for t in inputs])])
        if ctx.needs_input_grad:
            ctx.chain = chain
            ctx.save_for_backward(*inputs)
        return outs

    @staticmethod
    def backward(ctx, *grads: Tensor) -> tuple:
        inputs = ctx.saved_tensors
        needs = tuple(ctx.needs_input_grad[1:])
        if _grad_modes.enabled:
            return (None, *ctx.chain.eager_backward(inputs, grads, needs))
        arrays = ctx.chain.backward([t._array for t in inputs], [g._array if g is not None else None for g in grads],
                                    needs)
        return (None, *[None if a is None else sum_to_shape(Tensor._make(a), t._array.shape)
                        for a, t in zip(arrays, inputs)])
