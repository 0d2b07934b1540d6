"""Activations and the softmax family, as ``torch.nn.functional`` has them.

The hot activations (GELU, SiLU, Mish, the ELU family, leaky ReLU, hardtanh,
softplus, hardswish, hardsigmoid, logsigmoid) and softmax/log-softmax are fused
ops (``ember.tensor.fused.activations`` and ``.softmax``: one kernel forward and
one backward, differentiable twice); this module checks their arguments. The
rest are short compositions of tensor ops, exact and differentiable as they stand.
``hardshrink``, ``prelu`` and the ``dim``-required softmax forms are tensor ops
(``ember.tensor.activation_ops``, also ``Tensor`` methods), re-exported here.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...opcodes import ACTIVATIONS_BY_NAME
from ...tensor import activation_ops, autocast_policy, dtypes
from ...tensor import elementwise as ew
from ...tensor.activation_ops import checked_softmax, hardshrink, prelu, require_float
from ...tensor.fused.activations import activation as fused_activation
from ...tensor.tensor import Tensor


def _activation(x: Tensor, name: str, params: tuple = (), inplace: bool = False) -> Tensor:
    """Apply fused activation ``name`` (declared in ``ember.opcodes``, with torch's kernel name for its dtype
    errors), maybe in place."""
    require_float(x, ACTIVATIONS_BY_NAME[name].torch_kernel)
    if inplace:
        return ew.inplace(x, name, lambda s: _activation(s, name, params))
    return fused_activation(x, name, params)


# ------------------------------------------------------------------------------------------ the activations
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0)."""
    return input.relu_() if inplace else input.relu()


def relu_(input: Tensor) -> Tensor:
    """In-place :func:`relu`."""
    return input.relu_()


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """Clamp to [min_val, max_val]; the gradient is zero at and beyond the bounds (torch's rule)."""
    if not input.dtype.is_floating_point:
        return ew.inplace(input, "hardtanh", lambda s: ew.clamp(s, min_val, max_val)) if inplace \
            else ew.clamp(input, min_val, max_val)
    return _activation(input, "hardtanh", (min_val, max_val), inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, else negative_slope * x."""
    return _activation(input, "leaky_relu", (negative_slope,), inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place :func:`leaky_relu`."""
    return leaky_relu(input, negative_slope, inplace=True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha * (exp(x) - 1)."""
    return _activation(input, "elu", (alpha, 1.0, 1.0), inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`elu`."""
    return elu(input, alpha, inplace=True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _activation(input, "elu", (_SELU_ALPHA, _SELU_SCALE, 1.0), inplace)


def selu_(input: Tensor) -> Tensor:
    """In-place :func:`selu`."""
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _activation(input, "elu", (alpha, 1.0, 1.0 / alpha), inplace)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`celu`."""
    return celu(input, alpha, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x) (``approximate='tanh'``: the tanh approximation)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _activation(input, "gelu" if approximate == "none" else "gelu_tanh")


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (swish)."""
    return _activation(input, "silu", (), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _activation(input, "mish", (), inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _activation(input, "hardswish", (), inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    return _activation(input, "hardsigmoid", (), inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""
    if autocast_policy.ACTIVE and autocast_policy.covers("softplus", input):
        return autocast_policy.run("softplus", softplus, input, beta, threshold)
    return _activation(input, "softplus_beta", (beta, threshold))


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), stable for large |x|."""
    return _activation(input, "logsigmoid")


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x))."""
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return input.tanh()


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (1 + input.abs())


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - input.tanh()


def _check_lambd(input: Tensor, lambd: float) -> None:
    if not lambd >= 0:
        raise RuntimeError(f"lambda must be in range [0, 3.40282e+38] for input dtype "
                           f"{input.dtype.scalar_type_name}, but found {lambd:g}")


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between (x - clamp(x, -lambd, lambd))."""
    _check_lambd(input, lambd)
    return input - ew.clamp(input, -lambd, lambd)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value."""
    def compute(x: Tensor) -> Tensor:
        return ew.where(x > threshold, x, value if x.dtype.is_floating_point else int(value)).to(x.dtype)

    return ew.inplace(input, "threshold", compute) if inplace else compute(input)


_threshold = threshold  # the parameter of threshold_ shadows the function


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`."""
    return _threshold(input, threshold, value, inplace=True)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Leaky ReLU with a random slope from U(lower, upper) per element in training, their mean otherwise."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    require_float(input, "rrelu_with_noise_cpu")

    def compute(x: Tensor) -> Tensor:
        slope = Tensor._make(np.empty(x.shape, x.dtype.np)).uniform_(lower, upper)
        return ew.where(x >= 0, x, x * slope)

    return ew.inplace(input, "rrelu", compute) if inplace else compute(input)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """In-place :func:`rrelu`."""
    return rrelu(input, lower, upper, training, inplace=True)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), where a and b are the two halves of ``input`` along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim + input.ndim if dim < 0 else dim
    if not 0 <= d < input.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, {input.ndim - 1}], "
                         f"but got {dim})")
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


# ------------------------------------------------------------------------------------------ softmax family
def _get_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  "an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (optionally after casting to ``dtype``)."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return checked_softmax(input, dim, dtype, False)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """x - logsumexp(x) along ``dim``."""
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return checked_softmax(input, dim, dtype, True)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """softmax(-x) along ``dim``."""
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    return checked_softmax(-input, dim, None, False)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """Softmax of (logits + Gumbel noise) / tau; ``hard``: one-hot of the argmax with the soft gradient."""
    uniform = Tensor._make(np.empty(logits.shape, logits.dtype.np)).uniform_()
    gumbels = -(-(uniform.clamp(min=eps).log())).log()  # -log(Exp(1)) samples from Gumbel(0, 1)
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = soft.new_zeros(soft.shape).scatter(dim, index, 1.0)
    return one_hot - soft.detach() + soft


__all__ = [
    "relu", "relu_", "relu6", "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_",
    "celu", "celu_", "gelu", "silu", "mish", "hardswish", "hardsigmoid", "softplus", "logsigmoid", "sigmoid",
    "tanh", "softsign", "tanhshrink", "softshrink", "hardshrink", "threshold", "threshold_", "prelu", "rrelu",
    "rrelu_", "glu", "softmax", "log_softmax", "softmin", "gumbel_softmax",
]

TORCH_FUNCTIONS = {
    "softmax": activation_ops.softmax, "log_softmax": activation_ops.log_softmax, "selu": selu, "selu_": selu_,
    "celu": celu, "celu_": celu_, "prelu": prelu, "rrelu": rrelu, "rrelu_": rrelu_, "hardshrink": hardshrink,
    "threshold": threshold, "threshold_": threshold_,
}
