"""Loss functions of ``ember.nn.functional``, with torch's signatures, reductions, dtypes and errors.

Cross-entropy and NLL over class indices and CTC are fused ops
(``ember.tensor.fused.losses``: log-softmax, gather and weighting in one pass,
differentiable twice); this module checks their arguments. The other losses are
short compositions of differentiable tensor ops.
"""
from __future__ import annotations

import math
import warnings
from typing import Callable

import numpy as np

from ...autograd.function import Function, name_node
from ...autograd.grad_mode import no_grad
from ...tensor import autocast_policy, dtypes
from ...tensor.device import CPU, place
from ...tensor.fused import losses as fused
from ...tensor.tensor import Tensor
from .distance import pairwise_distance
from ...tensor.joins import broadcast_tensors
from ...tensor.elementwise import where
from ...tensor.creation import full_like

__all__ = [
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "margin_ranking_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "hinge_embedding_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "ctc_loss", "gaussian_nll_loss",
    "poisson_nll_loss",
]


# ---- shared helpers ----------------------------------------------------------------------------------------------

def _legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    """torch's mapping of the deprecated ``size_average``/``reduce`` pair to a reduction name."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    name = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{name}' instead.",
                  stacklevel=3)
    return name


def _reduction(reduction: str, size_average: bool | None = None, reduce: bool | None = None) -> str:
    """The reduction in force: the legacy pair wins when given; unknown names raise ValueError."""
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      stacklevel=3)
        return "mean"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _require_float(t: Tensor, op: str) -> None:
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f'"{op}" not implemented for \'{t.dtype.scalar_type_name}\'')


def _warn_size(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


def _elementwise_weight(loss: Tensor, weight: Tensor | None, input: Tensor, reduction: str,
                        mean_over_weight: bool) -> Tensor:
    """Apply torch's optional per-element ``weight`` of mse/l1/huber (mean over the weights or over elements)."""
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean" and mean_over_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


class _LogSigmoid(Function):
    """log(sigmoid(x)) without overflow: min(x, 0) - log1p(exp(-|x|)); gradient sigmoid(-x)."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        return x.clamp(max=0) - (-x.abs()).exp().log1p()

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        return grad * (-x).sigmoid()


def _log_sigmoid(x: Tensor) -> Tensor:
    return _LogSigmoid.apply(x)


# ---- regression losses -------------------------------------------------------------------------------------------

def _pointwise_pair(input: Tensor, target: Tensor, op: str) -> tuple[Tensor, Tensor]:
    """Input and target broadcast together (torch warns when their sizes differ)."""
    _warn_size(input, target)
    _require_float(input, op)

    if input.shape == target.shape:
        return input, target
    return tuple(broadcast_tensors(input, target))


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean squared error ``(input - target) ** 2``, optionally weighted per element."""
    if autocast_policy.ACTIVE and autocast_policy.covers("mse_loss", input):
        return autocast_policy.run("mse_loss", mse_loss, input, target, size_average, reduce, reduction, weight)
    reduction = _reduction(reduction, size_average, reduce)
    input, target = _pointwise_pair(input, target, "mse_cpu")
    loss = _elementwise_weight((input - target).square(), weight, input, reduction, mean_over_weight=True)
    return loss if weight is not None else name_node(loss, "MseLossBackward0")


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean absolute error ``|input - target|``, optionally weighted per element."""
    if autocast_policy.ACTIVE and autocast_policy.covers("l1_loss", input):
        return autocast_policy.run("l1_loss", l1_loss, input, target, size_average, reduce, reduction, weight)
    reduction = _reduction(reduction, size_average, reduce)
    input, target = _pointwise_pair(input, target, "l1_cpu")
    return _elementwise_weight((input - target).abs(), weight, input, reduction, mean_over_weight=True)


def _huber(diff: Tensor, threshold: float, scale_quadratic: float, scale_linear: float) -> Tensor:
    """``0.5 * d**2 * scale_quadratic`` below ``threshold``, ``scale_linear * (|d| - threshold / 2)`` above it."""
    a = diff.abs()

    return where(a < threshold, a.square() * (0.5 * scale_quadratic), (a - 0.5 * threshold) * scale_linear)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """Quadratic (``0.5 d**2 / beta``) below ``beta``, L1 (``|d| - beta / 2``) above; ``beta=0`` is L1."""
    if autocast_policy.ACTIVE and autocast_policy.covers("smooth_l1_loss", input):
        return autocast_policy.run("smooth_l1_loss", smooth_l1_loss, input, target, size_average, reduce, reduction,
                                   beta)
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    input, target = _pointwise_pair(input, target, "smooth_l1_cpu")
    if beta == 0:
        return _reduce((input - target).abs(), reduction)
    return _reduce(_huber(input - target, beta, 1.0 / beta, 1.0), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """Quadratic (``0.5 d**2``) below ``delta``, linear (``delta * (|d| - delta / 2)``) above."""
    if autocast_policy.ACTIVE and autocast_policy.covers("huber_loss", input):
        return autocast_policy.run("huber_loss", huber_loss, input, target, reduction, delta, weight)
    reduction = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    input, target = _pointwise_pair(input, target, "huber_cpu")
    return _elementwise_weight(_huber(input - target, delta, 1.0, delta), weight, input, reduction,
                               mean_over_weight=False)


# ---- classification over class indices: the fused op -------------------------------------------------------------

def _class_layout(input: Tensor, target: Tensor) -> tuple[int, int, int, tuple]:
    """(N, C, S, shape of the unreduced loss) for class-index targets, with torch's shape checks."""
    if input.ndim == 0:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if input.ndim == 1:
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if target.ndim == 1 and target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
        return 1, input.shape[0], 1, ()
    batch = target.shape[0] if target.ndim else 0
    if input.shape[0] != batch:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({batch}).")
    if input.ndim == 2 and target.ndim != 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    expected = (input.shape[0], *input.shape[2:])
    if tuple(target.shape) != expected:
        raise RuntimeError(f"Expected target size {list(expected)}, got {list(target.shape)}")
    return input.shape[0], input.shape[1], math.prod(input.shape[2:]), tuple(target.shape)


def _check_class_weight(weight: Tensor | None, input: Tensor, n_classes: int, op: str) -> None:
    if weight is None:
        return
    if weight.ndim != 1 or weight.shape[0] != n_classes:
        raise RuntimeError(f"{op}weight tensor should be defined either for all {n_classes} classes or no classes "
                           f"but got weight tensor of shape: {list(weight.shape)}")
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.scalar_type_name} but found "
                           f"{weight.dtype.scalar_type_name}")


def _class_nll(input: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str,
               smoothing: float, from_logits: bool, op: str) -> Tensor:
    """Class-index cross-entropy (``from_logits``) or NLL through the fused op."""
    n, c, s, out_shape = _class_layout(input, target)
    if target.dtype not in (dtypes.int64, dtypes.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype.scalar_type_name}")
    _require_float(input, op)
    _check_class_weight(weight, input, c, "")
    return fused.class_nll(input.reshape(n, c, s), target, weight, int(ignore_index), float(smoothing), from_logits,
                           reduction, out_shape)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
             ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` (N, C, d1, ...) at class indices ``target``.

    ``reduction='mean'`` divides by the summed weights of the non-ignored targets, as torch does.
    """
    if autocast_policy.ACTIVE and autocast_policy.covers("nll_loss", input):
        return autocast_policy.run("nll_loss", nll_loss, input, target, weight, size_average, ignore_index, reduce,
                                   reduction)
    reduction = _reduction(reduction, size_average, reduce)
    return _class_nll(input, target, weight, ignore_index, reduction, 0.0, False, "nll_loss_out_frame")


def _cross_entropy_probs(input: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str,
                         smoothing: float) -> Tensor:
    """Cross-entropy against class probabilities (target shaped like input); mean divides by N * d1 * ...."""
    if not target.dtype.is_floating_point:
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{target.dtype.scalar_type_name}")
    if input.numel():  # torch's log_softmax passes an empty tensor of any dtype through
        _require_float(input, "log_softmax_lastdim_kernel_impl")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    if smoothing > 0:
        target = target * (1 - smoothing) + smoothing / n_classes
    terms = fused.log_softmax_by_logsumexp(input, class_dim) * target
    if weight is not None:
        _check_class_weight(weight, input, n_classes, "cross_entropy: ")
        terms = terms * weight.reshape((n_classes,) + (1,) * (input.ndim - class_dim - 1))
    return _reduce(-terms.sum(class_dim), reduction)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
                  ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy of logits ``input`` (C), (N, C) or (N, C, d1, ...) against class indices or probabilities.

    Class indices (int64/uint8 ``target`` without the class dim) run one fused
    kernel; a floating ``target`` shaped like ``input`` holds probabilities.
    ``weight`` rescales classes, ``ignore_index`` drops targets,
    ``label_smoothing`` mixes the target with the uniform distribution; mean
    reduction over indices divides by the summed weights of kept targets.
    """
    if autocast_policy.ACTIVE and autocast_policy.covers("cross_entropy", input):
        return autocast_policy.run("cross_entropy", cross_entropy, input, target, weight, size_average, ignore_index,
                                   reduce, reduction, label_smoothing)
    reduction = _reduction(reduction, size_average, reduce)
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    smoothing = max(float(label_smoothing), 0.0)
    if input.ndim >= 1 and target.shape == input.shape:
        return _cross_entropy_probs(input, target, weight, ignore_index, reduction, smoothing)
    return _class_nll(input, target, weight, ignore_index, reduction, smoothing, True,
                      "log_softmax_lastdim_kernel_impl")


# ---- binary classification ---------------------------------------------------------------------------------------

class _BinaryCrossEntropy(Function):
    """Unreduced BCE of probabilities; each log is clamped to >= -100 as in torch, and so are the gradients."""

    @staticmethod
    def forward(ctx, x: Tensor, y: Tensor) -> Tensor:
        ctx.save_for_backward(x, y)
        return -(y * x.log().clamp(min=-100) + (1 - y) * (-x).log1p().clamp(min=-100))

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        x, y = ctx.saved_tensors
        grad_x = grad_y = None
        if ctx.needs_input_grad[0]:
            grad_x = grad * (x - y) / (x * (1 - x)).clamp(min=1e-12)
        if ctx.needs_input_grad[1]:
            grad_y = grad * ((-x).log1p().clamp(min=-100) - x.log().clamp(min=-100))
        return grad_x, grad_y


def _check_probabilities(x: Tensor, role: str) -> None:
    """torch's BCE kernel refuses values outside [0, 1]; NaN fails ``0 <= x <= 1`` and is refused too."""
    if not bool(((x >= 0) & (x <= 1)).all()):
        raise RuntimeError(f"all elements of {role} should be between 0 and 1")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """``-w * (y * log(x) + (1 - y) * log(1 - x))`` for probabilities ``x``, logs clamped to >= -100."""
    if autocast_policy.ACTIVE and autocast_policy.covers("binary_cross_entropy", input):
        return autocast_policy.run("binary_cross_entropy", binary_cross_entropy, input, target, weight, size_average,
                                   reduce, reduction)
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    _require_float(input, "binary_cross_entropy")
    if target.dtype is not input.dtype:
        raise RuntimeError(f"Found dtype {target.dtype.scalar_type_name} but expected {input.dtype.scalar_type_name}")
    _check_probabilities(input, "input")
    _check_probabilities(target, "target")
    loss = _BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight.expand(input.shape)
    return name_node(_reduce(loss, reduction), "BinaryCrossEntropyBackward0")


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: bool | None = None, reduce: bool | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """BCE of ``sigmoid(input)``, computed from log-sigmoids so logits of any magnitude stay finite.

    ``pos_weight`` scales the positive term (broadcast along the last dim), ``weight`` the whole loss.
    """
    if autocast_policy.ACTIVE and autocast_policy.covers("binary_cross_entropy_with_logits", input):
        return autocast_policy.run("binary_cross_entropy_with_logits", binary_cross_entropy_with_logits, input, target,
                                   weight, size_average, reduce, reduction, pos_weight)
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    _require_float(input, "binary_cross_entropy_with_logits")
    positive = target * _log_sigmoid(input)
    if pos_weight is not None:
        positive = positive * pos_weight
    loss = -(positive + (1 - target) * _log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


# ---- distributions -----------------------------------------------------------------------------------------------

def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Pointwise KL divergence ``target * (log(target) - input)`` for log-probabilities ``input``.

    ``reduction='batchmean'`` divides the sum by the batch size (the true KL);
    ``'mean'`` divides by the element count and warns, as torch does.
    """
    if autocast_policy.ACTIVE and autocast_policy.covers("kl_div", input):
        return autocast_policy.run("kl_div", kl_div, input, target, size_average, reduce, reduction, log_target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    elif reduction != "batchmean":
        reduction = _reduction(reduction)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target.xlogy(target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """Gaussian negative log-likelihood ``0.5 * (log(var) + (input - target)**2 / var)`` (+ const if ``full``).

    ``var`` may match ``input``, lack its last dim, or have one dim of size 1;
    it is clamped to ``eps`` without blocking its gradient, as in torch.
    """
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")

        var = full_like(input, float(var))
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and
                  sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target).square() / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """Poisson negative log-likelihood: ``exp(input) - target * input`` (``log_input``) or
    ``input - target * log(input + eps)``; ``full`` adds Stirling's term where ``target > 1``."""
    if autocast_policy.ACTIVE and autocast_policy.covers("poisson_nll_loss", input):
        return autocast_policy.run("poisson_nll_loss", poisson_nll_loss, input, target, log_input, full, size_average,
                                   eps, reduce, reduction)
    reduction = _reduction(reduction, size_average, reduce)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target.xlogy(target) - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


# ---- margin and embedding losses ---------------------------------------------------------------------------------

def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: ``target`` 1 ranks ``input1`` first, -1 ``input2``."""
    if autocast_policy.ACTIVE and autocast_policy.covers("margin_ranking_loss", input1):
        return autocast_policy.run("margin_ranking_loss", margin_ranking_loss, input1, input2, target, margin,
                                   size_average, reduce, reduction)
    reduction = _reduction(reduction, size_average, reduce)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return _reduce((margin - target * (input1 - input2)).clamp(min=0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1."""
    if autocast_policy.ACTIVE and autocast_policy.covers("hinge_embedding_loss", input):
        return autocast_policy.run("hinge_embedding_loss", hinge_embedding_loss, input, target, margin, size_average,
                                   reduce, reduction)
    reduction = _reduction(reduction, size_average, reduce)
    below = where(target != 1, (margin - input).clamp(min=0), 0.0)
    return _reduce(below + where(target != -1, input, 0.0), reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-target * input))`` (computed without overflow)."""
    if autocast_policy.ACTIVE and autocast_policy.covers("soft_margin_loss", input):
        return autocast_policy.run("soft_margin_loss", soft_margin_loss, input, target, size_average, reduce,
                                   reduction)
    reduction = _reduction(reduction, size_average, reduce)
    return _reduce(-_log_sigmoid(target * input), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """One-vs-all logistic loss over the last (class) dim, averaged over classes: one value per sample."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    loss = -(target * _log_sigmoid(input) + (1 - target) * _log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.ndim - 1) / input.shape[-1]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``target`` is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1."""
    if autocast_policy.ACTIVE and autocast_policy.covers("cosine_embedding_loss", input1):
        return autocast_policy.run("cosine_embedding_loss", cosine_embedding_loss, input1, input2, target, margin,
                                   size_average, reduce, reduction)
    reduction = _reduction(reduction, size_average, reduce)
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.ndim != target.ndim + 1 or input2.ndim != target.ndim + 1:
        raise RuntimeError(f"{target.ndim}D target tensor expects {target.ndim + 1}D input tensors, but found "
                           f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    dim = input1.ndim - 1
    dot = (input1 * input2).sum(dim)
    norms = ((input1 * input1).sum(dim) + 1e-12) * ((input2 * input2).sum(dim) + 1e-12)
    cos = dot / norms.sqrt()
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp(min=0), 0.0)
    return _reduce(loss, reduction)


def _triplet(anchor: Tensor, positive: Tensor, negative: Tensor, distance: Callable, margin: float, swap: bool,
             reduction: str) -> Tensor:
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(distance(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp(min=0), reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` with the p-norm pairwise distance over the last dim."""
    if autocast_policy.ACTIVE and autocast_policy.covers("triplet_margin_loss", anchor):
        return autocast_policy.run("triplet_margin_loss", triplet_margin_loss, anchor, positive, negative, margin, p,
                                   eps, swap, size_average, reduce, reduction)
    reduction = _reduction(reduction, size_average, reduce)
    return _triplet(anchor, positive, negative, lambda a, b: pairwise_distance(a, b, p, eps), margin, swap,
                    reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """The triplet loss under any ``distance_function`` (default: the Euclidean pairwise distance)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _triplet(anchor, positive, negative, distance_function or pairwise_distance, margin, swap, reduction)


def _margin_targets(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor, np.ndarray]:
    """(input as (N, C), target as (N,), target array) for multi_margin_loss, with torch's checks."""
    if input.ndim not in (1, 2) or input.shape[-1] == 0:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    x = input.reshape(1, -1) if input.ndim == 1 else input
    if target.dtype is not dtypes.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.scalar_type_name}")
    if target.ndim > 1 or target.numel() != x.shape[0]:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{x.shape[0]}], but got "
                           f"{list(target.shape)}. Input has shape {list(input.shape)}.")
    t = target._array.reshape(-1)
    if ((t < 0) | (t >= x.shape[1])).any():
        raise RuntimeError("target out of range")
    return x, target.reshape(-1), t


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average: bool | None = None, reduce: bool | None = None,
                      reduction: str = "mean") -> Tensor:
    """Multi-class hinge: ``sum_{i != y} w[y] * max(0, margin - x[y] + x[i]) ** p / C`` per sample."""
    if autocast_policy.ACTIVE and autocast_policy.covers("multi_margin_loss", input):
        return autocast_policy.run("multi_margin_loss", multi_margin_loss, input, target, p, margin, weight,
                                   size_average, reduce, reduction)
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    x, t, t_arr = _margin_targets(input, target)
    n, c = x.shape
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
    picked = x.gather(1, t.unsqueeze(1))
    hinge = (margin - picked + x).clamp(min=0)
    if p == 2:
        hinge = hinge.square()
    if weight is not None:
        hinge = hinge * weight[t].unsqueeze(1)
    off_target = np.ones((n, c), dtype=x.dtype.np, like=x._array)
    off_target[np.arange(n), t_arr] = 0
    loss = (hinge * Tensor._make(off_target)).sum(1) / c
    if input.ndim == 1 and reduction == "none":
        loss = loss.reshape(target.shape)
    return _reduce(loss, reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Multi-label hinge: for each target class j (listed in ``target`` up to the first -1) and each
    non-target class i, ``max(0, 1 - (x[j] - x[i])) / C`` summed per sample."""
    if autocast_policy.ACTIVE and autocast_policy.covers("multilabel_margin_loss", input):
        return autocast_policy.run("multilabel_margin_loss", multilabel_margin_loss, input, target, size_average,
                                   reduce, reduction)
    reduction = _reduction(reduction, size_average, reduce)
    if target.dtype is not dtypes.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.scalar_type_name}")
    if target.shape != input.shape or input.ndim not in (1, 2):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    x = input.reshape(1, -1) if input.ndim == 1 else input
    t = place(target._array, CPU).reshape(x.shape)  # the listed classes set the mask's layout: host metadata
    n, c = x.shape
    listed = np.cumprod(t != -1, axis=1).astype(bool)  # entries before the first -1
    if ((t[listed] < 0) | (t[listed] >= c)).any():
        raise RuntimeError("argument #2 'target' is out of range")
    is_target = np.zeros((n, c), dtype=bool)
    rows = np.nonzero(listed)[0]
    is_target[rows, t[listed]] = True
    slots = Tensor._make(place(np.where(listed, t, 0), x.device))
    mask = place((listed[:, :, None] & ~is_target[:, None, :]).astype(x.dtype.np), x.device)
    picked = x.gather(1, slots)                                              # x[y_j], (N, C)
    pairs = (1 - picked.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0)         # (N, slot j, class i)
    loss = (pairs * Tensor._make(mask)).sum((1, 2)) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


# ---- CTC ---------------------------------------------------------------------------------------------------------

def _lengths(value, name: str, batch: int) -> np.ndarray:
    """CTC lengths (a tensor, an int sequence or, unbatched, an int) as an int64 array of ``batch`` entries."""
    if isinstance(value, Tensor):
        if value.dtype.is_floating_point:
            raise RuntimeError(f"{name} must be integral")
        arr = place(value._array, CPU).astype(np.int64).reshape(-1)
    else:
        arr = np.asarray(value, dtype=np.int64).reshape(-1)
    if arr.size != batch:
        raise RuntimeError(f"{name} must be of size batch_size")
    return np.ascontiguousarray(arr)


def _ctc_check_range(values: np.ndarray, name: str, high: int | None) -> None:
    where = "(while checking arguments for ctc_loss_allocate_outputs)"
    if values.size and values.min() < 0:
        raise RuntimeError(f"Expected {name} to have value at least 0, but got value {values.min()} {where}")
    if high is not None and values.size and values.max() > high:
        raise RuntimeError(f"Expected {name} to have value at most {high}, but got value {values.max()} {where}")


def _ctc_targets(targets: Tensor, target_lengths: np.ndarray, batch: int, unbatched: bool) -> np.ndarray:
    """Targets as a padded (N, max(L, 1)) int64 array; accepts the padded or the concatenated form."""
    where = "for argument #2 'targets' (while checking arguments for ctc_loss_allocate_outputs)"
    arr = place(targets._array, CPU).astype(np.int64)
    longest = int(target_lengths.max()) if target_lengths.size else 0
    if unbatched and arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim == 2:
        if arr.shape[0] != batch:
            raise RuntimeError(f"Expected tensor to have size {batch} at dimension 0, but got size {arr.shape[0]} "
                               f"{where}")
        if arr.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                               f"{arr.shape[1]} {where}")
        padded = arr[:, :max(longest, 1)] if arr.shape[1] else np.zeros((batch, 1), np.int64)
        return np.ascontiguousarray(padded)
    if arr.ndim != 1:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {arr.ndim}-dimensional tensor {where}")
    total = int(target_lengths.sum())
    if arr.shape[0] != total:
        raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got size {arr.shape[0]} "
                           f"{where}")
    padded = np.zeros((batch, max(longest, 1)), np.int64)
    starts = np.concatenate(([0], np.cumsum(target_lengths)[:-1])).astype(np.int64)
    for b in range(batch):
        padded[b, :target_lengths[b]] = arr[starts[b]:starts[b] + target_lengths[b]]
    return padded


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist Temporal Classification loss of ``log_probs`` (T, N, C) or (T, C).

    ``targets`` are padded (N, S) or concatenated (sum(target_lengths),);
    ``reduction='mean'`` divides each item's loss by its target length, then
    averages over the batch; ``zero_infinity`` zeroes impossible alignments
    and their gradients. Like torch, the gradient assumes ``log_probs`` come
    from a log-softmax.
    """
    if autocast_policy.ACTIVE and autocast_policy.covers("ctc_loss", log_probs):
        return autocast_policy.run("ctc_loss", ctc_loss, log_probs, targets, input_lengths, target_lengths, blank,
                                   reduction, zero_infinity)
    reduction = _reduction(reduction)
    if log_probs.dtype not in (dtypes.float32, dtypes.float64):
        raise NotImplementedError(f'"ctc_loss_cpu" not implemented for \'{log_probs.dtype.scalar_type_name}\'')
    unbatched = log_probs.ndim == 2
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D (T, C) or 3-D (T, N, C), got "
                           f"{log_probs.ndim}-D")
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    steps, batch, n_classes = lp.shape
    in_len = _lengths(input_lengths, "input_lengths", batch)
    tgt_len = _lengths(target_lengths, "target_lengths", batch)
    if not 0 <= blank < n_classes:
        raise RuntimeError("blank must be in label range")
    _ctc_check_range(in_len, "input_lengths", steps)
    _ctc_check_range(tgt_len, "target_lengths", None)
    padded = _ctc_targets(targets, tgt_len, batch, unbatched)
    used = np.arange(padded.shape[1])[None, :] < tgt_len[:, None]
    if ((padded < 0) | (padded >= n_classes))[used].any():
        raise RuntimeError(f"ctc_loss: target labels must be in [0, {n_classes})")
    nll = fused.ctc(lp, padded, in_len, tgt_len, int(blank), bool(zero_infinity))
    if zero_infinity:
        nll = where(nll == math.inf, 0.0, nll)
    if reduction == "mean":
        divisor = Tensor._make(place(np.maximum(tgt_len, 1).astype(lp.dtype.np), lp.device))
        return (nll / divisor).mean()
    if reduction == "sum":
        return nll.sum()
    return nll.reshape(()) if unbatched else nll


TORCH_FUNCTIONS = {
    "binary_cross_entropy_with_logits": binary_cross_entropy_with_logits,
    "cosine_embedding_loss": cosine_embedding_loss,
    "ctc_loss": ctc_loss,
    "hinge_embedding_loss": hinge_embedding_loss,
    "kl_div": kl_div,
    "margin_ranking_loss": margin_ranking_loss,
    "poisson_nll_loss": poisson_nll_loss,
    "triplet_margin_loss": triplet_margin_loss,
}
