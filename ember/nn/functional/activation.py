"""Activations and the softmax family, as ``torch.nn.functional`` has them.

The hot activations (GELU, SiLU, Mish, the ELU family, leaky ReLU, hardtanh,
softplus, hardswish, hardsigmoid, logsigmoid) run one fused kernel forward
and one backward (``ember.cpu_kernels.activations``); their backward is itself
a Function whose own backward is written in tensor ops, so second derivatives
work. Softmax and log-softmax are fused row kernels the same way. The rest are
short compositions of tensor ops, exact and differentiable as they stand.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np

from ...autograd import function as _function
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ...cpu_kernels.layout import dense_flat, is_dense
from ...tensor import dtypes
from ...tensor import elementwise as ew
from ...tensor.tensor import Tensor
from ...tensor._dispatch import ascontiguous, family

_TYPE_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _require_float(x: Tensor, kernel: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{kernel}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_TYPE_NAMES[x.dtype.name]}\'')


def _compute_np(dt: dtypes.dtype) -> np.dtype:
    """The dtype kernels compute in: float16 widens to float32."""
    return np.dtype(np.float32) if dt is dtypes.float16 else dt.np


# ------------------------------------------------------------------------------------------ fused elementwise
def _flat_pair(arrays: list[np.ndarray], cdt: np.dtype) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Flat 1-D views of same-shape arrays in one shared memory order, plus an output array and its flat view.

    A dense input (contiguous, channels_last, any permutation) keeps its order, so the result has the input's
    memory format; anything else is copied to C order.
    """
    first = arrays[0]
    if type(first) is np.ndarray and is_dense(first) and all(a.strides == first.strides and a.dtype == cdt
                                                             for a in arrays):
        out = np.empty_like(first, dtype=cdt, order="K")
        return [dense_flat(a) for a in arrays], out, dense_flat(out)
    arrays = [ascontiguous(a, dtype=cdt) for a in arrays]
    out = np.empty(first.shape, dtype=cdt, like=first)
    return [a.reshape(-1) for a in arrays], out, out.reshape(-1)


def _run_activation(kind: str, name: str, arrays: list[np.ndarray], params: tuple, rdt: dtypes.dtype) -> np.ndarray:
    cdt = _compute_np(rdt)
    flats, out, out_flat = _flat_pair(arrays, cdt)
    if out.size:
        kernels = family("activations", out)
        run = kernels.activation_forward if kind == "forward" else kernels.activation_backward
        run(name, *flats, out_flat, params)
    return out if cdt == rdt.np else out.astype(rdt.np)


class _Activation(Function):
    """``f(x)`` by the fused kernel ``name`` with parameters ``params``."""

    @staticmethod
    def forward(ctx, x: Tensor, name: str, params: tuple) -> np.ndarray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(x)
            ctx.activation, ctx.params = name, params
        return _run_activation("forward", name, [x._array], params, x.dtype)

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple:
        (x,) = ctx.saved_tensors
        return _ActivationGrad.apply(x, g, ctx.activation, ctx.params), None, None


class _ActivationGrad(Function):
    """``g * f'(x)`` by the fused kernel; its own gradient is in tensor ops (``_SECOND``)."""

    @staticmethod
    def forward(ctx, x: Tensor, g: Tensor, name: str, params: tuple) -> np.ndarray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, g)
            ctx.activation, ctx.params = name, params
        garr = g._array if g.dtype is x.dtype else g._array.astype(x.dtype.np)
        return _run_activation("backward", name, [x._array, np.broadcast_to(garr, x.shape)], params, x.dtype)

    @staticmethod
    def backward(ctx, gg: Tensor) -> tuple:
        x, g = ctx.saved_tensors
        need_x, need_g = ctx.needs_input_grad[:2]
        gx = gg * g * _SECOND[ctx.activation](x, *ctx.params) if need_x else None
        gg_g = _ActivationGrad.apply(x, gg, ctx.activation, ctx.params) if need_g else None
        return gx, gg_g, None, None


def _gelu_tanh_second(x: Tensor) -> Tensor:
    k, c = math.sqrt(2.0 / math.pi), 0.044715
    du = k * (1 + 3 * c * x * x)
    s = (2 * k * (x + c * x * x * x)).sigmoid()
    return s * (1 - s) * (4 * du + 4 * x * du * du * (1 - 2 * s) + 12 * k * c * x * x)


def _mish_second(x: Tensor) -> Tensor:
    t = softplus(x).tanh()
    sg = x.sigmoid()
    return (1 - t * t) * sg * (2 + x * (1 - sg) - 2 * x * t * sg)


def _zero_second(x: Tensor, *params: Any) -> Tensor:
    return x * 0


# f''(x) in tensor ops, for the gradient of a fused backward.
_SECOND: dict[str, Callable[..., Tensor]] = {
    "gelu": lambda x: (-0.5 * x * x).exp() * (1 / math.sqrt(2 * math.pi)) * (2 - x * x),
    "gelu_tanh": _gelu_tanh_second,
    "silu": lambda x: x.sigmoid() * (1 - x.sigmoid()) * (2 + x * (1 - 2 * x.sigmoid())),
    "mish": _mish_second,
    "leaky_relu": _zero_second,
    "hardtanh": _zero_second,
    "hardsigmoid": _zero_second,
    "elu": lambda x, a, b, c: ew.where(x > 0, 0.0, (b * a * c * c) * (x * c).exp()),
    "softplus_beta": lambda x, beta, th: ew.where(x * beta > th, 0.0,
                                                  beta * (x * beta).sigmoid() * (1 - (x * beta).sigmoid())),
    "hardswish": lambda x: ew.where((x > -3) & (x < 3), 1.0 / 3.0, 0.0).to(x.dtype),
    "logsigmoid": lambda x: -x.sigmoid() * (-x).sigmoid(),
}


def _activation(x: Tensor, name: str, kernel: str, params: tuple = (), inplace: bool = False) -> Tensor:
    """Apply fused activation ``name`` (``kernel``: torch's kernel name for dtype errors), maybe in place."""
    _require_float(x, kernel)
    if inplace:
        return ew.inplace(x, name, lambda s: _activation(s, name, kernel, params))
    if (x._requires_grad and is_grad_enabled()) or _function._APPLY_WRAPPERS:  # recorded, or watched
        return _Activation.apply(x, name, params)
    return Tensor._make(_run_activation("forward", name, [x._array], params, x.dtype))


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
    return _activation(input, "hardtanh", "hardtanh_cpu", (min_val, max_val), inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, else negative_slope * x."""
    return _activation(input, "leaky_relu", "leaky_relu_cpu", (negative_slope,), inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place :func:`leaky_relu`."""
    return leaky_relu(input, negative_slope, inplace=True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha * (exp(x) - 1)."""
    return _activation(input, "elu", "elu_cpu", (alpha, 1.0, 1.0), inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`elu`."""
    return elu(input, alpha, inplace=True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _activation(input, "elu", "elu_cpu", (_SELU_ALPHA, _SELU_SCALE, 1.0), inplace)


def selu_(input: Tensor) -> Tensor:
    """In-place :func:`selu`."""
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _activation(input, "elu", "elu_cpu", (alpha, 1.0, 1.0 / alpha), inplace)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`celu`."""
    return celu(input, alpha, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x) (``approximate='tanh'``: the tanh approximation)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _activation(input, "gelu" if approximate == "none" else "gelu_tanh", "GeluKernelImpl")


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (swish)."""
    return _activation(input, "silu", "silu_cpu", (), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _activation(input, "mish", "mish_cpu", (), inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _activation(input, "hardswish", "hardswish_cpu", (), inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    return _activation(input, "hardsigmoid", "hardsigmoid_cpu", (), inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""
    return _activation(input, "softplus_beta", "softplus_cpu", (beta, threshold))


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), stable for large |x|."""
    return _activation(input, "logsigmoid", "log_sigmoid_cpu")


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
        kind = {"float16": "Half", "float64": "Double"}.get(input.dtype.name, "Float")
        raise RuntimeError(f"lambda must be in range [0, 3.40282e+38] for input dtype {kind}, but found {lambd:g}")


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between (x - clamp(x, -lambd, lambd))."""
    _check_lambd(input, lambd)
    return input - ew.clamp(input, -lambd, lambd)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0 (NaN stays NaN)."""
    inside = (input >= -lambd) & (input <= lambd)
    return ew.where(inside, 0.0, input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value."""
    def compute(x: Tensor) -> Tensor:
        return ew.where(x > threshold, x, value if x.dtype.is_floating_point else int(value)).to(x.dtype)

    return ew.inplace(input, "threshold", compute) if inplace else compute(input)


_threshold = threshold  # the parameter of threshold_ shadows the function


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`."""
    return _threshold(input, threshold, value, inplace=True)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, else weight * x, with one weight per channel (dim 1) or one shared."""
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    n = weight.numel()
    if n != 1:
        channels = input.shape[1] if input.ndim >= 2 else 1
        if n != channels:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                f"{n} and channel size = {channels}."
            )
        weight = weight.reshape((n,) + (1,) * (input.ndim - 2))
    elif weight.ndim == 1 and input.ndim == 0:
        weight = weight.reshape(())
    return ew.where(input > 0, input, weight * input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Leaky ReLU with a random slope from U(lower, upper) per element in training, their mean otherwise."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    _require_float(input, "rrelu_with_noise_cpu")

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
def _wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _row_call(arrays: list[np.ndarray], dim: int, rdt: dtypes.dtype, call: Callable) -> np.ndarray:
    """Run a row kernel along ``dim``: move it last, make 2-D contiguous rows, and put the result back."""
    cdt = _compute_np(rdt)
    ndim = arrays[0].ndim
    moved = [np.moveaxis(a, dim, -1) if ndim else a.reshape(1) for a in arrays]
    shape = moved[0].shape
    n = shape[-1] if shape else 1
    rows = [ascontiguous(a, dtype=cdt).reshape(math.prod(shape[:-1]), n) for a in moved]
    out = np.empty_like(rows[0])
    if out.size:
        call(*rows, out)
    result = out.reshape(shape)
    if ndim == 0:
        result = result.reshape(())
    elif dim != ndim - 1:
        result = ascontiguous(np.moveaxis(result, -1, dim))
    return result if cdt == rdt.np else result.astype(rdt.np)


class _Softmax(Function):
    """softmax or log_softmax along ``dim`` by the fused row kernel."""

    @staticmethod
    def forward(ctx, x: Tensor, dim: int, log: bool) -> np.ndarray:
        out = _row_call([x._array], dim, x.dtype, lambda a, o: family("softmax", a).softmax_forward(a, o, log))
        if ctx.needs_input_grad:
            y = Tensor._make(out)
            ctx.save_for_backward(y)
            ctx.dim, ctx.log = dim, log
            return y
        return out

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple:
        (y,) = ctx.saved_tensors
        return _SoftmaxGrad.apply(y, g, ctx.dim, ctx.log), None, None


class _SoftmaxGrad(Function):
    """The input gradient of softmax/log_softmax from its output ``y``; differentiable in y and g."""

    @staticmethod
    def forward(ctx, y: Tensor, g: Tensor, dim: int, log: bool) -> np.ndarray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(y, g)
            ctx.dim, ctx.log = dim, log
        garr = np.broadcast_to(g._array, y.shape)
        return _row_call([y._array, garr], dim, y.dtype,
                         lambda a, b, o: family("softmax", a).softmax_backward(a, b, o, log))

    @staticmethod
    def backward(ctx, gg: Tensor) -> tuple:
        y, g = ctx.saved_tensors
        dim, need_y, need_g = ctx.dim, ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        if ctx.log:  # gx = g - exp(y) * sum(g)
            p = y.exp()
            gy = -gg * p * g.sum(dim, keepdim=True) if need_y else None
            gg_g = gg - (gg * p).sum(dim, keepdim=True) if need_g else None
        else:  # gx = y * (g - sum(g * y))
            gy = gg * (g - (g * y).sum(dim, keepdim=True)) - g * (gg * y).sum(dim, keepdim=True) if need_y \
                else None
            gg_g = _SoftmaxGrad.apply(y, gg, dim, False) if need_g else None
        return gy, gg_g, None, None


def _get_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  "an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


class _NoRecordCtx:
    """The ctx of a forward run outside autograd."""

    needs_input_grad = ()


_NO_RECORD = _NoRecordCtx()


def _softmax_op(input: Tensor, dim: int, dtype: Any, log: bool) -> Tensor:
    """torch's order: the cast, the dim check, then an empty tensor (of any dtype) passes through, then the float
    check."""
    if not isinstance(input, Tensor):
        name = "log_softmax" if log else "softmax"
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    d = _wrap_dim(int(dim), input.ndim)
    if input.numel() == 0:
        return input.clone()
    _require_float(input, "log_softmax_lastdim_kernel_impl" if log else "softmax_lastdim_kernel_impl")
    if (input._requires_grad and is_grad_enabled()) or _function._APPLY_WRAPPERS:  # recorded, or watched
        return _Softmax.apply(input, d, log)
    return Tensor._make(_Softmax.forward(_NO_RECORD, input, d, log))


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (optionally after casting to ``dtype``)."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return _softmax_op(input, dim, dtype, False)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """x - logsumexp(x) along ``dim``."""
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _softmax_op(input, dim, dtype, True)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """softmax(-x) along ``dim``."""
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    return _softmax_op(-input, dim, None, False)


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


def _softmax_function(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``torch.softmax`` / ``Tensor.softmax``: dim is required."""
    return _softmax_op(input, dim, dtype, False)


def _log_softmax_function(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``torch.log_softmax`` / ``Tensor.log_softmax``: dim is required."""
    return _softmax_op(input, dim, dtype, True)


__all__ = [
    "relu", "relu_", "relu6", "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_",
    "celu", "celu_", "gelu", "silu", "mish", "hardswish", "hardsigmoid", "softplus", "logsigmoid", "sigmoid",
    "tanh", "softsign", "tanhshrink", "softshrink", "hardshrink", "threshold", "threshold_", "prelu", "rrelu",
    "rrelu_", "glu", "softmax", "log_softmax", "softmin", "gumbel_softmax",
]

TENSOR_METHODS = {
    "softmax": _softmax_function, "log_softmax": _log_softmax_function, "hardshrink": hardshrink, "prelu": prelu,
}

TORCH_FUNCTIONS = {
    "softmax": _softmax_function, "log_softmax": _log_softmax_function, "selu": selu, "selu_": selu_,
    "celu": celu, "celu_": celu_, "prelu": prelu, "rrelu": rrelu, "rrelu_": rrelu_, "hardshrink": hardshrink,
    "threshold": threshold, "threshold_": threshold_,
}
