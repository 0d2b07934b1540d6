"""The affine map ``x @ W.T + b`` as one op: one BLAS call forward, the backward in tensor ops.

Behind ``nn.functional.linear`` and the fused ``linear_activation``.
"""
from __future__ import annotations

from ...autograd.function import Function
from ...autograd.tangents import total_tangent
from ...kernels.common.dtypes import NARROW_FLOATS, computable
from ..tensor import Tensor

__all__ = ["linear", "product_grads"]


class _Linear(Function):
    """``x @ W.T + b`` in one node: one BLAS call forward; backward in tensor ops (so it is differentiable).
    float16 and bfloat16 are computed in float32 and rounded once, bias included, as torch's addmm."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        x2, w = x._array.reshape(-1, x.shape[-1]), weight._array
        narrow = w.dtype in NARROW_FLOATS
        if narrow:
            x2, w = computable(x2), computable(w)
        out = x2 @ w.T
        if bias is not None:
            out += bias._array
        if narrow:
            out = out.astype(weight._array.dtype)
        return Tensor._make(out.reshape(*x.shape[:-1], weight.shape[0]))

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple:
        x, weight = ctx.saved_tensors
        g2 = g.reshape(-1, weight.shape[0])
        grad_b = g2.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return (*product_grads(x, weight, g2, ctx.needs_input_grad), grad_b)

    @classmethod
    def jvp_rule(cls, args: tuple, outputs: tuple, tangents: tuple) -> Tensor:
        """Forward mode: ``tx @ W.T + x @ tW.T + tb``."""
        (x, w, _), (tx, tw, tb) = args, tangents
        return total_tangent([cls.apply(tx, w, None) if tx is not None else None,
                              cls.apply(x, tw, None) if tw is not None else None, tb], outputs[0])


def product_grads(x: Tensor, weight: Tensor, g2: Tensor, needs: tuple) -> tuple[Tensor | None, Tensor | None]:
    """The gradients of ``x @ weight.T`` for ``x`` and ``weight`` (None where ``needs`` says no), in tensor ops,
    from the output gradient ``g2`` flattened to 2-D."""
    grad_x = g2.mm(weight).reshape(x.shape) if needs[0] else None
    grad_w = g2.t().mm(x.reshape(-1, x.shape[-1])) if needs[1] else None
    return grad_x, grad_w


def linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``x @ weight.T + bias`` over the last dim of ``x`` (at least 2-D) with a 2-D ``weight`` and a ``bias`` of
    one entry per output feature (or None)."""
    return _Linear.apply(x, weight, bias)
