"""The fused activations' scalar functions, shared by the CPU and CUDA activation kernels.

The activations are declared in ``ember.opcodes`` (``ACTIVATION_OPS``: which there are, which backward reads the
output); each is a pair of scalar functions here, ``f(v, a, b, c)`` and
``df(v, g, a, b, c)`` (``g * f'(v)``), with up to three parameters; the
activations whose gradient is cheapest from their output have ``*_grad_y``
instead (``OUTPUT_GRAD_ACTIVATIONS``). Parameters arrive as scalars of the
array's dtype (``scalar_params``), so float32 work stays in float32. The CPU
inlines these into generated loops (``ember.kernels.cpu.activations``); the
GPU builds them as device functions (``ember.kernels.cuda.device_functions``).

``vexp``, ``verfc`` and ``vtanh`` are float32 versions of exp, erfc and tanh written in plain
arithmetic, so LLVM vectorises them (libm's ``expf`` is a scalar call, ~5x
slower); float64 uses libm. The softmax kernels use ``vexp`` too. On a GPU the
plain ``math`` functions are native, so the device build uses those instead.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.errors import NumbaIRAssumptionWarning
from numba.extending import intrinsic, overload

from ... import opcodes as op

# Numba's pedantic SSA check flags IR-inlined overloads (a false alarm: the kernels compile and are tested).
warnings.filterwarnings("ignore", category=NumbaIRAssumptionWarning)

# Scalar functions are inlined in Numba's IR: LLVM's inliner leaves calls of their size in place, and a loop
# with a call in it does not vectorise.
scalar = njit(nogil=True, cache=False, error_model="numpy", inline="always")


# ------------------------------------------------------------------------------------------ typed vector math
def const(x, value):
    """``value`` in ``x``'s float type (a Python float literal would widen float32 math to float64)."""
    return value


@overload(const)
def _const(x, value):
    if x == types.float32:
        return lambda x, value: np.float32(value)
    return lambda x, value: np.float64(value)


@intrinsic
def _float32_from_bits(typingctx, bits):
    """The float32 whose bit pattern is the int32 ``bits`` (a register move; scalar ``.view`` allocates)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


def vexp(x):
    """exp(x): vectorisable in float32 (about 1 ulp), libm's in float64."""
    return math.exp(x)


@scalar
def _exp32(x):
    # Clamp (NaN passes both tests), round x/ln2 to n, reduce by a two-part ln2, evaluate a degree-7 polynomial
    # on [-ln2/2, ln2/2], then scale by 2**n built from exponent bits in two halves, so results from the
    # subnormals up to overflow come out right.
    if x < np.float32(-104.0):
        x = np.float32(-104.0)
    if x > np.float32(89.0):
        x = np.float32(89.0)
    n = np.floor(x * np.float32(1.4426950408889634) + np.float32(0.5))
    r = x - n * np.float32(0.693145751953125)
    r = r - n * np.float32(1.428606765330187e-06)
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    p = p * r * r + r + np.float32(1.0)
    k = np.int32(n)
    k1 = k >> np.int32(1)
    s1 = _float32_from_bits(np.int32((k1 + np.int32(127)) << np.int32(23)))
    s2 = _float32_from_bits(np.int32((k - k1 + np.int32(127)) << np.int32(23)))
    return p * s1 * s2


def _float32_fast_path(stub, fast32, libm) -> None:
    """Make ``stub`` run ``fast32`` on float32 and the libm function ``libm`` otherwise, inlined in Numba's IR."""
    def fast_impl(x):
        return fast32(x)

    def libm_impl(x):
        return libm(x)

    @overload(stub, inline="always")
    def _typed(x):
        return fast_impl if x == types.float32 else libm_impl


_float32_fast_path(vexp, _exp32, math.exp)


def verfc(x):
    """erfc(x): vectorisable in float32 (relative error ~1e-7 for every x), libm's in float64."""
    return math.erfc(x)


@scalar
def _erfc32(x):
    # Chebyshev-fitted erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), z = |x|: relative accuracy everywhere,
    # so the far tail keeps its digits (GELU of negative inputs needs them).
    z = abs(x)
    t = np.float32(1.0) / (np.float32(1.0) + np.float32(0.5) * z)
    p = np.float32(0.17087277)
    p = p * t + np.float32(-0.82215223)
    p = p * t + np.float32(1.48851587)
    p = p * t + np.float32(-1.13520398)
    p = p * t + np.float32(0.27886807)
    p = p * t + np.float32(-0.18628806)
    p = p * t + np.float32(0.09678418)
    p = p * t + np.float32(0.37409196)
    p = p * t + np.float32(1.00002368)
    p = p * t + np.float32(-1.26551223)
    e = t * _exp32(p - z * z)
    return e if x >= np.float32(0.0) else np.float32(2.0) - e


_float32_fast_path(verfc, _erfc32, math.erfc)


def vtanh(x):
    """tanh(x): vectorisable in float32 (about 2 ulp), libm's in float64."""
    return math.tanh(x)


@scalar
def _tanh32(x):
    # Cephes' tanhf: an odd polynomial below |x| = 0.625 (no cancellation near 0), else 1 - 2 / (exp(2|x|) + 1)
    # with the sign put back (exp overflowing to inf gives exactly 1; NaN takes the polynomial and stays NaN).
    z = abs(x)
    if z > np.float32(0.625):
        t = np.float32(1.0) - np.float32(2.0) / (_exp32(z + z) + np.float32(1.0))
        return t if x > np.float32(0.0) else -t
    z = x * x
    p = np.float32(-5.70498872745e-3)
    p = p * z + np.float32(2.06390887954e-2)
    p = p * z + np.float32(-5.37397155531e-2)
    p = p * z + np.float32(1.33314422036e-1)
    p = p * z + np.float32(-3.33332819422e-1)
    return p * z * x + x


_float32_fast_path(vtanh, _tanh32, math.tanh)


@scalar
def sigmoid(x):
    """1 / (1 + exp(-x)); exp(-x) = inf gives exactly 0."""
    return const(x, 1.0) / (const(x, 1.0) + vexp(-x))


@scalar
def softplus(x):
    """log(1 + exp(x)), accurate for large |x| of either sign."""
    return max(x, const(x, 0.0)) + math.log1p(vexp(-abs(x)))


# ------------------------------------------------------------------------------------------ the activations
# f(v, a, b, c) and df(v, g, a, b, c) = g * f'(v). NaN inputs give NaN, as torch.
_SQRT_HALF = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327
_TANH_K = 0.7978845608028654  # sqrt(2 / pi)
_TANH_C = 0.044715


@scalar
def gelu(v, a, b, c):
    return const(v, 0.5) * v * verfc(-v * const(v, _SQRT_HALF))


@scalar
def gelu_grad(v, g, a, b, c):
    cdf = const(v, 0.5) * verfc(-v * const(v, _SQRT_HALF))
    pdf = const(v, _INV_SQRT_2PI) * vexp(const(v, -0.5) * v * v)
    return g * (cdf + v * pdf)


@scalar
def _tanh_gate(v):
    """0.5 (1 + tanh(u)) = sigmoid(2u), u = sqrt(2/pi) (v + c v^3): no cancellation, no overflow."""
    u = const(v, _TANH_K) * (v + const(v, _TANH_C) * v * v * v)
    return sigmoid(const(v, 2.0) * u)


@scalar
def gelu_tanh(v, a, b, c):
    return v * _tanh_gate(v)


@scalar
def gelu_tanh_grad(v, g, a, b, c):
    s = _tanh_gate(v)
    du = const(v, _TANH_K) * (const(v, 1.0) + const(v, 3.0 * _TANH_C) * v * v)
    return g * (s + const(v, 2.0) * v * s * (const(v, 1.0) - s) * du)


@scalar
def silu(v, a, b, c):
    return v * sigmoid(v)


@scalar
def silu_grad(v, g, a, b, c):
    s = sigmoid(v)
    return g * s * (const(v, 1.0) + v * (const(v, 1.0) - s))


@scalar
def _mish_gate(v):
    """tanh(softplus(v)) = n / (n + 2), n = e (e + 2), e = exp(v); exactly 1 once v > 20."""
    e = vexp(min(v, const(v, 20.0)))
    n = e * (e + const(v, 2.0))
    return n / (n + const(v, 2.0)) if v <= const(v, 20.0) else const(v, 1.0)


@scalar
def mish(v, a, b, c):
    return v * _mish_gate(v)


@scalar
def mish_grad(v, g, a, b, c):
    t = _mish_gate(v)
    return g * (t + v * sigmoid(v) * (const(v, 1.0) - t * t))


@scalar
def leaky_relu(v, a, b, c):  # a: negative slope
    return v if v > const(v, 0.0) else v * a


@scalar
def leaky_relu_grad(v, g, a, b, c):
    return g if v > const(v, 0.0) else g * a


@scalar
def elu(v, a, b, c):  # a: alpha, b: scale, c: input scale (ELU, SELU and CELU)
    return b * v if v > const(v, 0.0) else b * a * math.expm1(v * c)


@scalar
def elu_grad(v, g, a, b, c):
    return g * b if v > const(v, 0.0) else g * b * a * c * vexp(v * c)


@scalar
def softplus_beta(v, a, b, c):  # a: beta, b: threshold
    return v if v * a > b else softplus(v * a) / a


@scalar
def softplus_beta_grad(v, g, a, b, c):
    return g if v * a > b else g * sigmoid(v * a)


@scalar
def hardswish(v, a, b, c):
    return v * min(max(v + const(v, 3.0), const(v, 0.0)), const(v, 6.0)) / const(v, 6.0)


@scalar
def hardswish_grad(v, g, a, b, c):
    if v <= const(v, -3.0):
        return const(v, 0.0)
    if v < const(v, 3.0):
        return g * (v / const(v, 3.0) + const(v, 0.5))
    return g


@scalar
def hardsigmoid(v, a, b, c):
    return min(max(v + const(v, 3.0), const(v, 0.0)), const(v, 6.0)) / const(v, 6.0)


@scalar
def hardsigmoid_grad(v, g, a, b, c):
    return g / const(v, 6.0) if const(v, -3.0) < v < const(v, 3.0) else const(v, 0.0)


@scalar
def hardtanh(v, a, b, c):  # a: min, b: max
    return a if v < a else (b if v > b else v)


@scalar
def hardtanh_grad(v, g, a, b, c):
    return const(v, 0.0) if (v <= a or v >= b) else g


@scalar
def logsigmoid(v, a, b, c):
    return -softplus(-v)


@scalar
def logsigmoid_grad(v, g, a, b, c):
    return g * sigmoid(-v)


# Activations whose gradient is cheapest from their output y: ``*_grad_y(y, g, a, b, c)`` is ``g * f'(x)`` written
# in y. The fused linear path (``bias_activation``) saves y for these instead of the pre-activation.
@scalar
def relu(v, a, b, c):
    return v if not v < const(v, 0.0) else const(v, 0.0)  # the unary relu's rule: NaN passes, +0 at -inf


@scalar
def relu_grad_y(y, g, a, b, c):
    return g if y > const(y, 0.0) else const(y, 0.0)


@scalar
def tanh(v, a, b, c):
    return vtanh(v)


@scalar
def tanh_grad_y(y, g, a, b, c):
    return g * (const(y, 1.0) - y * y)


@scalar
def logistic(v, a, b, c):  # sigmoid as an activation (``sigmoid`` is the one-argument helper above)
    return sigmoid(v)


@scalar
def logistic_grad_y(y, g, a, b, c):
    return g * y * (const(y, 1.0) - y)


OUTPUT_GRAD_ACTIVATIONS = tuple(a.name for a in op.ACTIVATION_OPS if a.grad_reads_output)
# the fused activation kernels of their own (the output-gradient ones run as unary ops outside ``Linear``)
ACTIVATIONS = tuple(a.name for a in op.ACTIVATION_OPS if not a.grad_reads_output)


# The fused linear path (``bias_activation``) runs every activation: the output-gradient ones first.
BIAS_ACTIVATIONS = OUTPUT_GRAD_ACTIVATIONS + ACTIVATIONS


def grad_reads_output(name: str) -> bool:
    """Whether activation ``name``'s backward reads its output (else its pre-activation)."""
    return op.ACTIVATIONS_BY_NAME[name].grad_reads_output


def grad_function(name: str) -> str:
    """The name of activation ``name``'s scalar gradient function here."""
    return name + ("_grad_y" if grad_reads_output(name) else "_grad")


def scalar_params(x, params: tuple) -> tuple:
    """Three parameters as scalars of array ``x``'s dtype (unused ones 0)."""
    t = x.dtype.type
    padded = tuple(params) + (0.0,) * (3 - len(params))
    return t(padded[0]), t(padded[1]), t(padded[2])
