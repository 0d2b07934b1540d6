"""Scalar operations: one small function per op, inlined into the loop kernels.

Kernels are compiled with NumPy's error model, so float division by zero and
libm domain errors give inf/NaN as IEEE (and torch) say, with no branches here.

These are plain ``numba.njit(inline="always")`` functions of numbers, so the
same definitions are inlined into the CPU kernels, built as CUDA device
functions (``ember.kernels.cuda.device_functions``) and, with
``NUMBA_DISABLE_JIT=1``, run as ordinary Python.
"""
import math

import numpy as np
from numba import njit

inline = njit(inline="always", cache=False)

_NAN = math.nan
# NumPy's fmod (Numba has no math.fmod on the CPU); the device build reads math.fmod instead (its twin there)
_fmod = np.fmod
_INF = math.inf
_LOG2_E = 1.0 / math.log(2.0)


@inline
def _ffloor(x):
    """floor as a float: ``math.floor`` returns an int64, which is wrong for NaN, inf, -0.0 and |x| >= 2**63."""
    if x != x or x == 0 or abs(x) >= 4503599627370496.0:   # NaN, a signed zero, inf, or already integral (>= 2**52)
        return x
    return float(math.floor(x))


# ---------------------------------------------------------------- unary, any dtype
@inline
def neg(x):
    return -x


@inline
def absolute(x):
    return abs(x)


@inline
def square(x):
    return x * x


@inline
def cube(x):
    return x * x * x  # (x * x) * x: torch's rounding for x ** 3


@inline
def sign(x):
    return (x > 0) - (x < 0)


@inline
def identity(x):
    return x


@inline
def relu(x):
    return x if not x < 0 else 0  # not x * 0, which is NaN at -inf; torch gives +0 there


@inline
def logical_not(x):
    return x == 0


@inline
def bitwise_not(x):
    return ~x


@inline
def isnan(x):
    return x != x


@inline
def isinf(x):
    return x == _INF or x == -_INF


@inline
def isfinite(x):
    return x == x and x != _INF and x != -_INF


@inline
def isposinf(x):
    return x == _INF


@inline
def isneginf(x):
    return x == -_INF


@inline
def signbit(x):
    return math.copysign(1.0, x) < 0


# ---------------------------------------------------------------- unary, floating
@inline
def exp(x):
    return math.exp(x)


@inline
def exp2(x):
    return 2.0 ** x


@inline
def expm1(x):
    return math.expm1(x)


@inline
def log(x):
    return math.log(x)




@inline
def log2(x):
    return math.log2(x)




@inline
def log10(x):
    return math.log10(x)




@inline
def log1p(x):
    return math.log1p(x)




@inline
def sin(x):
    return math.sin(x)


@inline
def cos(x):
    return math.cos(x)


@inline
def tan(x):
    return math.tan(x)


@inline
def asin(x):
    return math.asin(x)




@inline
def acos(x):
    return math.acos(x)




@inline
def atan(x):
    return math.atan(x)


@inline
def sinh(x):
    return math.sinh(x)


@inline
def cosh(x):
    return math.cosh(x)


@inline
def tanh(x):
    return math.tanh(x)


@inline
def asinh(x):
    return math.asinh(x)


@inline
def acosh(x):
    return math.acosh(x)




@inline
def atanh(x):
    return math.atanh(x)




@inline
def sqrt(x):
    return math.sqrt(x)




@inline
def rsqrt(x):
    return 1.0 / math.sqrt(x)




@inline
def sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@inline
def erf(x):
    return math.erf(x)


@inline
def erfc(x):
    return math.erfc(x)


@inline
def erfinv(y):
    if y != y or y < -1 or y > 1:
        return _NAN
    if y == 1:
        return _INF
    if y == -1:
        return -_INF
    # Giles' single-precision rational start, polished by two Newton steps on erf.
    w = -math.log((1.0 - y) * (1.0 + y))
    if w < 5.0:
        w = w - 2.5
        p = 2.81022636e-08
        p = 3.43273939e-07 + p * w
        p = -3.5233877e-06 + p * w
        p = -4.39150654e-06 + p * w
        p = 0.00021858087 + p * w
        p = -0.00125372503 + p * w
        p = -0.00417768164 + p * w
        p = 0.246640727 + p * w
        p = 1.50140941 + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        p = 0.000100950558 + p * w
        p = 0.00134934322 + p * w
        p = -0.00367342844 + p * w
        p = 0.00573950773 + p * w
        p = -0.0076224613 + p * w
        p = 0.00943887047 + p * w
        p = 1.00167406 + p * w
        p = 2.83297682 + p * w
    x = p * y
    for _ in range(2):
        x = x - (math.erf(x) - y) / (1.1283791670955126 * math.exp(-x * x))
    return x


@inline
def lgamma(x):
    if x == _INF or x == -_INF:
        return _INF
    if x <= 0 and x == _ffloor(x):
        return _INF
    return math.lgamma(x)


@inline
def digamma(x):
    if x != x or x == -_INF:
        return _NAN
    if x == 0:
        return math.copysign(_INF, -x)
    result = 0.0
    if x < 0:
        if x == _ffloor(x):
            return _NAN
        # reflection: psi(1 - x) - psi(x) = pi / tan(pi x)
        result = -math.pi / math.tan(math.pi * x)
        x = 1.0 - x
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    if x == _INF:
        return _INF
    inv = 1.0 / x
    inv2 = inv * inv
    # asymptotic series: sum of B_2k / (2k x^2k) for k = 1..6
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
        1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760))))))
    return result + math.log(x) - 0.5 * inv - series


@inline
def _trigamma_positive(x):
    acc = 0.0
    while x < 10.0:
        acc += 1.0 / (x * x)
        x += 1.0
    if x == _INF:
        return acc
    inv = 1.0 / x
    inv2 = inv * inv
    # asymptotic series: 1/x + 1/(2x^2) + sum of B_2k / x^(2k+1) for k = 1..5
    return acc + inv + 0.5 * inv2 + inv * inv2 * (1.0 / 6 - inv2 * (1.0 / 30 - inv2 * (1.0 / 42 - inv2 * (
        1.0 / 30 - inv2 * (5.0 / 66)))))


@inline
def trigamma(x):
    if x != x or x == -_INF:
        return _NAN
    if x <= 0 and x == _ffloor(x):
        return _INF
    if x < 0:
        # reflection: psi1(x) + psi1(1 - x) = pi^2 / sin^2(pi x)
        s = math.sin(math.pi * x)
        return (math.pi * math.pi) / (s * s) - _trigamma_positive(1.0 - x)
    return _trigamma_positive(x)


@inline
def entr(x):
    """``-x log(x)`` (torch.special.entr): 0 at 0, -inf below it."""
    if x != x:
        return _NAN
    if x < 0:
        return -_INF
    if x == 0:
        return 0.0
    return -x * math.log(x)


@inline
def erfcx(x):
    """``exp(x*x) erfc(x)`` (torch.special.erfcx), free of the overflow and the rounding of that product: below 26
    (where erfc still has its digits) ``x*x`` is split into an exact square and a small rest (Dekker's split of x
    into two 26-bit halves), above it the asymptotic series of the continued fraction."""
    v = np.float64(x)  # the float32 of a float32 kernel would underflow erfc early
    if v != v:
        return _NAN
    if v < -26.64:  # 2 exp(x*x) overflows
        return _INF
    if v < 26.0:
        c = 134217729.0 * v  # 2**27 + 1
        hi = c - (c - v)
        lo = v - hi
        return math.exp(hi * hi) * math.exp((hi + hi + lo) * lo) * math.erfc(v)
    inv2 = 0.5 / v / v
    term = 1.0
    total = 1.0
    for k in range(1, 8):  # sum of (-1)^k (2k-1)!! / (2 x^2)^k: the seventh term is below 2e-17 from 26 on
        term *= -(2 * k - 1) * inv2
        total += term
    return total / v * 0.5641895835477563  # 1 / sqrt(pi)


@inline
def floor(x):
    return _ffloor(x)


@inline
def ceil(x):
    return -_ffloor(-x)


@inline
def round_half_even(x):
    if x != x or x == _INF or x == -_INF:
        return x
    r = _ffloor(x)
    diff = x - r
    if diff > 0.5 or (diff == 0.5 and r % 2 != 0):
        r += 1.0
    return math.copysign(r, x) if r == 0 else r


@inline
def bfloat16_bits(x):
    """The 16 bits of ``x`` rounded to bfloat16 (to nearest, ties to even; overflow to inf, NaN as 0x7FC0), as an
    integer: how device storage holds bfloat16. Arithmetic on the value, no reinterpreting casts, so it compiles
    for the CPU and CUDA and runs as Python in the simulator."""
    if x != x:
        return 0x7FC0
    sign = 0x8000 if math.copysign(1.0, x) < 0 else 0
    ax = abs(float(x))  # a double: the simulator's float32 scalars would overflow ax * 2**133 below
    if ax == _INF:
        return sign | 0x7F80
    if ax == 0:
        return sign
    m, e = math.frexp(ax)  # ax = m * 2**e, 0.5 <= m < 1
    if e < -125:  # below the smallest normal 2**-126: subnormal steps of 2**-133 (a count of 128 is that normal)
        return sign | int(round_half_even(ax * 2.0 ** 133))
    q = int(round_half_even(m * 256.0))  # the 8 significant bits, 128..256
    biased = e + 126
    if q == 256:
        q = 128
        biased += 1
    if biased >= 255:
        return sign | 0x7F80
    return sign | (biased << 7) | (q - 128)


@inline
def bfloat16_value(bits):
    """The value of bfloat16 ``bits`` (an unsigned 16-bit integer), exact in float32: ``bfloat16_bits``' inverse."""
    b = int(bits)  # a Python int under the simulator, whose math.ldexp takes no NumPy integer
    biased = (b >> 7) & 0xFF
    fraction = b & 0x7F
    if biased == 0xFF:
        v = _NAN if fraction else _INF
    elif biased == 0:
        v = math.ldexp(float(fraction), -133)
    else:
        v = math.ldexp(float(fraction + 128), biased - 134)
    return -v if b & 0x8000 else v


@inline
def trunc(x):
    # not ``math.trunc``, which returns an int64 (wrong for |x| >= 2**63, inf and NaN); the sign keeps -0.0 as torch
    return math.copysign(_ffloor(abs(x)), x)


@inline
def frac(x):
    if x == _INF or x == -_INF:
        return _NAN
    return x - trunc(x)


@inline
def reciprocal(x):
    return 1.0 / x




# ---------------------------------------------------------------- binary, any dtype
@inline
def add(x, y):
    return x + y


@inline
def sub(x, y):
    return x - y


@inline
def mul(x, y):
    return x * y


@inline
def div(x, y):
    return x / y




@inline
def maximum(x, y):
    if x != x:
        return x
    if y != y:
        return y
    return x if x >= y else y


@inline
def minimum(x, y):
    if x != x:
        return x
    if y != y:
        return y
    return x if x <= y else y


@inline
def fmax(x, y):
    if x != x:
        return y
    if y != y:
        return x
    return x if x >= y else y


@inline
def fmin(x, y):
    if x != x:
        return y
    if y != y:
        return x
    return x if x <= y else y


@inline
def eq(x, y):
    return x == y


@inline
def ne(x, y):
    return x != y


@inline
def lt(x, y):
    return x < y


@inline
def le(x, y):
    return x <= y


@inline
def gt(x, y):
    return x > y


@inline
def ge(x, y):
    return x >= y


@inline
def logical_and(x, y):
    return (x != 0) and (y != 0)


@inline
def logical_or(x, y):
    return (x != 0) or (y != 0)


@inline
def logical_xor(x, y):
    return (x != 0) != (y != 0)


# ---------------------------------------------------------------- binary, floating
@inline
def floor_divide(x, y):
    # torch's div_floor: exact through fmod, then rounded to the nearest integer quotient
    if y == 0:
        return x / y
    mod = _fmod(x, y)
    quot = (x - mod) / y
    if mod != 0 and (y < 0) != (mod < 0):
        quot -= 1.0
    if quot == 0:
        return math.copysign(0.0, x / y)
    fq = _ffloor(quot)
    if quot - fq > 0.5:
        fq += 1.0
    return fq


@inline
def trunc_divide(x, y):
    return trunc(x / y)


@inline
def remainder(x, y):
    if y == 0:
        return _NAN
    mod = _fmod(x, y)
    if mod != 0 and (y < 0) != (mod < 0):
        mod += y
    return mod


@inline
def fmod(x, y):
    if y == 0:
        return _NAN
    return _fmod(x, y)


@inline
def power(x, y):
    if y == 0:
        return 1.0
    if x < 0 and y != _ffloor(y):
        return _NAN
    if x == 0 and y < 0:
        return _INF
    return x ** y


@inline
def atan2(x, y):
    return math.atan2(x, y)


@inline
def hypot(x, y):
    return math.hypot(x, y)


@inline
def copysign(x, y):
    return math.copysign(x, y)


@inline
def xlogy(x, y):
    if y != y:
        return _NAN
    if x == 0:
        return 0.0
    return x * log(y)


@inline
def xlog1py(x, y):
    """``x log1p(y)``, 0 where ``x`` is 0 unless ``y`` is NaN (torch.special.xlog1py)."""
    if y != y:
        return _NAN
    if x == 0:
        return 0.0
    if y <= -1:  # spelled out: Python's log1p (the simulator's, NUMBA_DISABLE_JIT's) raises there
        return x * -_INF if y == -1 else _NAN
    return x * math.log1p(y)


@inline
def _log_add_split(a, b):
    """(larger operand, smaller minus larger, whether the larger is already the sum): the shared first step of
    logaddexp and logaddexp2, which factor the larger term out so nothing overflows. NaN propagates, and equal
    infinities (where the difference would be NaN) are their own sum."""
    if a != a or b != b:
        return a + b, a - a, True
    hi, lo = (a, b) if a >= b else (b, a)
    return hi, lo - hi, hi == -_INF or hi == _INF


@inline
def logaddexp(a, b):
    """``log(exp(a) + exp(b))`` without overflow."""
    hi, gap, done = _log_add_split(a, b)
    return hi if done else hi + math.log1p(math.exp(gap))


@inline
def _float_step(x, y, ulp_of_one, min_exp, tiny, largest):
    """The float next to ``x`` towards ``y`` in a format given by its constants: the spacing of [1, 2), the
    ``frexp`` exponent of its smallest normal, its smallest subnormal and its largest finite value. Written with
    frexp and exact power-of-two products (not ``math.nextafter``), so every width gives the same answer compiled,
    in the CUDA simulator and under ``NUMBA_DISABLE_JIT``, where NumPy scalars would step by a float64 ulp."""
    if x != x or y != y:
        return x + y
    if x == y:
        return y
    if x == 0:
        return math.copysign(tiny, y)
    if x == _INF or x == -_INF:
        return math.copysign(largest, x)
    ax = abs(x)
    m, e = math.frexp(ax)  # ax = m * 2**e with 0.5 <= m < 1
    toward_zero = (y < x) == (x > 0)
    if e <= min_exp:  # subnormal, or the smallest normal binade: the subnormal spacing either way
        step = tiny
    else:
        step = (ax * 0.5) / m * ulp_of_one  # 2**(e - 1) times the spacing of [1, 2): exact
        if toward_zero and m == 0.5:  # below a power of two the spacing halves
            step *= 0.5
    return math.copysign(ax - step if toward_zero else ax + step, x)


@inline
def nextafter(x, y):
    """float64 ``nextafter``."""
    return _float_step(x, y, 2.0 ** -52, -1021, 5e-324, 1.7976931348623157e308)


@inline
def nextafter_f32(x, y):
    """float32 ``nextafter`` (the float32 values computed exactly in float64)."""
    return _float_step(x, y, 2.0 ** -23, -125, 2.0 ** -149, 3.4028234663852886e38)


@inline
def nextafter_f16(x, y):
    """float16 ``nextafter`` (float16 values carried in float32, as ember computes float16)."""
    return _float_step(x, y, 2.0 ** -10, -13, 2.0 ** -24, 65504.0)


@inline
def nextafter_bf16(x, y):
    """bfloat16 ``nextafter`` (bfloat16 values carried in float32, as ember computes bfloat16; float32's exponent
    range, 7 fraction bits)."""
    return _float_step(x, y, 2.0 ** -7, -125, 2.0 ** -133, 3.3895313892515355e38)


@inline
def logaddexp2(a, b):
    """``log2(2**a + 2**b)`` without overflow."""
    hi, gap, done = _log_add_split(a, b)
    return hi if done else hi + math.log1p(2.0 ** gap) * _LOG2_E


# ---------------------------------------------------------------- binary, integer
@inline
def int_floor_divide(x, y):
    if y == -1:  # the most negative x // -1 overflows (0 or a trap in LLVM); torch wraps it, as negation does
        return -x
    return x // y


@inline
def int_trunc_divide(x, y):
    if y == -1:
        return -x
    q = x // y
    if q < 0 and q * y != x:
        q += 1
    return q


@inline
def int_remainder(x, y):
    return x % y


@inline
def int_fmod(x, y):
    r = x % y
    if r != 0 and (r < 0) != (x < 0):
        r -= y
    return r


@inline
def int_power(x, y):
    if y < 0:  # torch's integer pow: 1 and -1 keep a magnitude of 1, every other base truncates to 0
        if x == 1:
            return 1
        if x == -1:
            return -1 if y & 1 else 1
        return 0
    result = 1
    base = x
    e = y
    while e > 0:
        if e & 1:
            result *= base
        base *= base
        e >>= 1
    return result


@inline
def gcd(x, y):
    """Greatest common divisor (non-negative; gcd(0, 0) = 0), by Euclid with C's remainder as torch."""
    a = abs(x)
    b = abs(y)
    while a != 0:
        a, b = int_fmod(b, a), a
    return b


@inline
def lcm(x, y):
    """Least common multiple (non-negative; 0 when either operand is 0)."""
    g = gcd(x, y)
    if g == 0:
        return g
    return abs(x // g * y)


@inline
def bitwise_and(x, y):
    return x & y


@inline
def bitwise_or(x, y):
    return x | y


@inline
def bitwise_xor(x, y):
    return x ^ y


@inline
def left_shift(x, y):
    if y < 0 or y >= 64:
        return x * 0
    return x << y


@inline
def right_shift(x, y):
    if y < 0 or y >= 64:
        return x >> 63
    return x >> y


# ---------------------------------------------------------------- ternary
@inline
def where(c, x, y):
    return x if c else y


@inline
def clamp(x, lo, hi):
    # NaN in x propagates; NaN bounds propagate as in torch.clamp
    if x != x:
        return x
    if lo != lo:
        return lo
    if hi != hi:
        return hi
    r = x if x >= lo else lo
    return r if r <= hi else hi


@inline
def lerp(start, end, weight):
    # torch's two-sided form keeps lerp exact at weight 0 and 1
    if abs(weight) < 0.5:
        return start + weight * (end - start)
    return end - (end - start) * (1.0 - weight)
