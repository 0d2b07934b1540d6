"""Every elementwise op and fused activation, declared once; the integer codes the kernels select ops by.

An elementwise op is one ``Unary``/``Binary``/``Ternary`` row below: its name, its scalar function (a function of
``ember.kernels.common.scalar_ops``, named here so this module imports nothing), how it types its result, its
gradient, torch's other names, its in-place and ``out=`` forms and its NumPy name. Everything else is derived:

- its code is its position in its arity's table (``EXP``, ``ADD`` ... below are those codes, by ``code_name``);
- the kernels' op tables (``ember.kernels.common.elementwise``), hence the CPU loops and CUDA kernels;
- the NumPy names the CUDA arrays serve (``ember.kernels.cuda.ndarray``);
- the tensor layer's Function classes, Tensor methods and torch functions (``ember.tensor.elementwise``,
  ``.methods``, ``.elementwise_functions``) and ``ember.special``.

A fused activation (one kernel forward, one backward; also fused after ``Linear``) is an ``Activation`` row: its
scalar pair lives in ``ember.kernels.common.activations``, and the kernel families, the second derivatives and
the dtype errors of ``ember.nn.functional`` come from the row.

Gradients are written in Tensor methods on their arguments (this module imports nothing of ember): a unary
``grad(x, y, g)`` gets the input, the output and the output's gradient (None for what the op does not read, see
``grad_reads_input``/``grad_reads_output``); a binary ``grad(a, b, y, g, needs)`` gets the operands (tensors or
Python numbers), the output, the gradient and which inputs need one, and returns one gradient per operand (None
where none is needed).

Adding an op: a row here, its scalar function in ``scalar_ops``, a test (``tests/op_harness.py``). Codes live
within a process only (compiled kernels are cached under their scalar function's name), so rows may go anywhere.
The reductions and scans, whose kernels are not elementwise, have plain codes at the bottom.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable

# How an op types its result from the promoted input dtype.
SAME = "same"              # the promoted dtype (bool stays bool)
FLOAT = "float"            # integers and bool become the default float dtype
BOOL = "bool"              # computed in the promoted dtype, the result is bool
INT_ONLY = "int"           # integers and bool only
FLOAT_ONLY = "float_only"  # floating inputs only, the result in the same dtype

# Which one-element operands of a half-precision op keep their value (``Binary.exact_scalar``).
SECOND = "second"
EITHER = "either"

# Who makes an op's tensor-level callables.
GENERATED = "generated"  # the tensor layer makes its Function, Tensor methods and torch functions from the row
WRITTEN = "written"      # the tensor layer writes its function and method (extra arguments); the rest is made here
INTERNAL = "internal"    # a Function reached by name only (``elementwise.unary("trigamma", x)``), no public name
KERNEL = "kernel"        # no tensor-level Function: a kernel variant, or a function written whole (the predicates)

# What ``out=`` of an op's torch function accepts.
CAST = "cast"    # any dtype the result casts to
EXACT = "exact"  # exactly the result's dtype


@dataclass(frozen=True, eq=False)
class Elementwise:
    """One elementwise op (see the module docstring); ``code`` is filled in from its place in its table."""

    name: str
    scalar: str = ""                       # its function in ``kernels.common.scalar_ops`` (default: ``name``)
    code_name: str = ""                    # the name of its code in this module (default: ``name.upper()``)
    result: str = SAME
    grad: Callable[..., Any] | None = None
    grad_reads_input: bool = True          # backward reads the inputs (saved for it)
    grad_reads_output: bool = False        # backward reads the output (saved for it)
    surface: str = GENERATED
    method: bool = True                    # ``Tensor.name`` and ``Tensor.name_``
    function: bool = True                  # ``ember.name``
    inplace_method: bool = True            # ``Tensor.name_`` (when ``method``)
    inplace_function: bool = True          # ``ember.name_``
    out: str | None = CAST                 # the ``out=`` of ``ember.name`` (None: it takes none)
    aliases: tuple[str, ...] = ()          # torch's other names of the method and the function
    alias_inplace_functions: bool = True   # whether ``ember.alias_`` exists beside ``ember.name_``
    special: tuple[str, ...] = ()          # its names in ``ember.special``
    numpy: tuple[str, ...] = ()            # the NumPy ufuncs this kernel serves on CUDA arrays
    host_ufunc: bool = False               # NumPy's ufunc ``numpy[0]`` gives the kernel's results (or better), faster
    refuses: tuple[str, ...] = ()          # the (promoted) input dtypes torch has no kernel for
    code: int = field(default=-1, init=False)

    arity = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "scalar", self.scalar or self.name)
        object.__setattr__(self, "code_name", self.code_name or self.name.upper())
        if isinstance(self.numpy, str):
            object.__setattr__(self, "numpy", (self.numpy,))


@dataclass(frozen=True, eq=False)
class Unary(Elementwise):
    """``out = f(x)``."""

    integer_identity: bool = False  # integers (and bool) come back unchanged (rounding)
    bool_error: str = ""            # torch's RuntimeError for a bool input
    bool_as_int64: bool = False     # a bool input computes as int64 (torch's square is pow(x, 2))

    arity = 1


@dataclass(frozen=True, eq=False)
class Binary(Elementwise):
    """``out = f(a, b)``; either operand may be a Python number unless ``tensor_only``."""

    inplace_function: bool = False
    tensor_only: bool = False   # torch has no Scalar overload: both operands must be tensors
    integer: str = ""           # the kernel op integer operands run instead (a ``KERNEL`` row)
    widths: tuple[tuple[str, str], ...] = ()  # (float dtype name, kernel op) for ops with a kernel per float width
    int_divisor: bool = False   # an integer zero divisor raises (torch's ZeroDivisionError)
    python: str = ""            # the ``operator`` function that computes it exactly on Python floats (+ - * /)
    # Where every operand of a float16/bfloat16 op is first rounded to that dtype, these keep their value in the
    # compute dtype (torch's original_scalar_value): SECOND, a one-element second operand (a number or a 0-d
    # tensor); EITHER, that or a number first (torch's ``number * x`` is ``x.mul(number)``)
    exact_scalar: str = ""

    arity = 2


@dataclass(frozen=True, eq=False)
class Ternary(Elementwise):
    """``out = f(a, b, c)``: the tensor layer writes their Functions (where, clamp, lerp)."""

    surface: str = KERNEL
    arity = 3


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Number)


def _needs(n: tuple, i: int) -> bool:
    return len(n) > i and n[i]


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_READS_OUTPUT = {"grad_reads_input": False, "grad_reads_output": True}  # the gradient is written in the output
_ZERO = {"grad": lambda x, y, g: g * 0, "grad_reads_input": False}  # a piecewise-constant op


# ----------------------------------------------------------------------------------------------------- unary
UNARY: tuple[Unary, ...] = (
    Unary("neg", grad=lambda x, y, g: -g, grad_reads_input=False, out=EXACT, aliases=("negative",), numpy="negative",
          bool_error="Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                     "mask, use the `~` or `logical_not()` operator instead."),
    Unary("abs", scalar="absolute", grad=lambda x, y, g: g * x.sign(), out=EXACT, aliases=("absolute",),
          alias_inplace_functions=False, numpy="absolute"),
    Unary("exp", result=FLOAT, grad=lambda x, y, g: g * y, **_READS_OUTPUT, numpy="exp"),
    Unary("exp2", result=FLOAT, grad=lambda x, y, g: g * y * _LN2, **_READS_OUTPUT,
          special=("exp2",), numpy="exp2"),
    Unary("expm1", result=FLOAT, grad=lambda x, y, g: g * (y + 1), **_READS_OUTPUT,
          special=("expm1",), numpy="expm1", host_ufunc=True),
    Unary("log", result=FLOAT, grad=lambda x, y, g: g / x, numpy="log"),
    Unary("log2", result=FLOAT, grad=lambda x, y, g: g / (x * _LN2), numpy="log2"),
    Unary("log10", result=FLOAT, grad=lambda x, y, g: g / (x * _LN10), numpy="log10"),
    Unary("log1p", result=FLOAT, grad=lambda x, y, g: g / (x + 1), special=("log1p",), numpy="log1p",
          host_ufunc=True),
    Unary("sin", result=FLOAT, grad=lambda x, y, g: g * x.cos(), numpy="sin"),
    Unary("cos", result=FLOAT, grad=lambda x, y, g: -g * x.sin(), numpy="cos"),
    Unary("tan", result=FLOAT, grad=lambda x, y, g: g * (1 + y * y), **_READS_OUTPUT, numpy="tan"),
    Unary("asin", result=FLOAT, grad=lambda x, y, g: g * (1 - x * x).rsqrt(), aliases=("arcsin",), numpy="arcsin"),
    Unary("acos", result=FLOAT, grad=lambda x, y, g: -g * (1 - x * x).rsqrt(), aliases=("arccos",),
          numpy="arccos"),
    Unary("atan", result=FLOAT, grad=lambda x, y, g: g / (1 + x * x), aliases=("arctan",), numpy="arctan"),
    Unary("sinh", result=FLOAT, grad=lambda x, y, g: g * x.cosh(), numpy="sinh"),
    Unary("cosh", result=FLOAT, grad=lambda x, y, g: g * x.sinh(), numpy="cosh"),
    Unary("tanh", result=FLOAT, grad=lambda x, y, g: g * (1 - y * y), **_READS_OUTPUT, numpy="tanh", host_ufunc=True),
    Unary("asinh", result=FLOAT, grad=lambda x, y, g: g * (x * x + 1).rsqrt(), aliases=("arcsinh",),
          numpy="arcsinh"),
    Unary("acosh", result=FLOAT, grad=lambda x, y, g: g * (x * x - 1).rsqrt(), aliases=("arccosh",),
          numpy="arccosh"),
    Unary("atanh", result=FLOAT, grad=lambda x, y, g: g / (1 - x * x), aliases=("arctanh",), numpy="arctanh"),
    Unary("sqrt", result=FLOAT, grad=lambda x, y, g: g / (2 * y), **_READS_OUTPUT, numpy="sqrt", host_ufunc=True),
    Unary("rsqrt", result=FLOAT, grad=lambda x, y, g: -0.5 * g * y * y * y, **_READS_OUTPUT),
    Unary("square", grad=lambda x, y, g: 2 * g * x, bool_as_int64=True, numpy="square"),
    Unary("sigmoid", result=FLOAT, grad=lambda x, y, g: g * y * (1 - y), **_READS_OUTPUT, special=("expit",)),
    Unary("erf", result=FLOAT, grad=lambda x, y, g: g * _TWO_OVER_SQRT_PI * (-x * x).exp(), special=("erf",)),
    Unary("erfc", result=FLOAT, grad=lambda x, y, g: g * -_TWO_OVER_SQRT_PI * (-x * x).exp(), special=("erfc",)),
    Unary("erfinv", result=FLOAT, grad=lambda x, y, g: g * (math.sqrt(math.pi) / 2) * (y * y).exp(),
          **_READS_OUTPUT, inplace_function=False, special=("erfinv",)),
    Unary("lgamma", result=FLOAT, grad=lambda x, y, g: g * x.digamma(), inplace_function=False,
          special=("gammaln",)),
    Unary("digamma", result=FLOAT, grad=lambda x, y, g: g * x.polygamma(1), inplace_function=False,
          special=("digamma", "psi")),
    Unary("sign", **_ZERO, out=EXACT, inplace_function=False, aliases=("sgn",), numpy="sign"),
    Unary("floor", **_ZERO, out=EXACT, integer_identity=True, numpy="floor"),
    Unary("ceil", **_ZERO, out=EXACT, integer_identity=True, numpy="ceil"),
    Unary("round", scalar="round_half_even", **_ZERO, surface=WRITTEN, integer_identity=True, numpy="rint"),
    Unary("trunc", **_ZERO, out=EXACT, integer_identity=True, aliases=("fix",), numpy="trunc"),
    Unary("frac", result=FLOAT_ONLY, grad=lambda x, y, g: g, grad_reads_input=False, out=EXACT),
    Unary("reciprocal", result=FLOAT, grad=lambda x, y, g: -g * y * y, **_READS_OUTPUT, numpy="reciprocal"),
    Unary("relu", grad=lambda x, y, g: g * (y > 0), **_READS_OUTPUT, out=None,
          bool_error="Boolean inputs not supported for relu"),
    # no gradient, fixed answers on integers: ``ember.tensor.elementwise`` writes their functions
    Unary("logical_not", result=BOOL, surface=KERNEL, numpy="logical_not"),
    Unary("bitwise_not", result=INT_ONLY, surface=KERNEL, numpy="invert"),
    Unary("isnan", result=BOOL, surface=KERNEL, numpy="isnan"),
    Unary("isinf", result=BOOL, surface=KERNEL, numpy="isinf"),
    Unary("isfinite", result=BOOL, surface=KERNEL, numpy="isfinite"),
    Unary("isposinf", result=BOOL, surface=KERNEL),
    Unary("isneginf", result=BOOL, surface=KERNEL),
    Unary("signbit", result=BOOL, surface=KERNEL, numpy="signbit"),
    Unary("copy", scalar="identity", surface=KERNEL, numpy="positive"),
    Unary("trigamma", result=FLOAT, surface=INTERNAL),  # torch spells it polygamma(1, x)
    Unary("cube", surface=KERNEL),  # x * x * x in one pass: torch's x ** 3
    # bfloat16 on CUDA, held as uint16 bits: narrowing float32 values to bits and widening bits to values
    Unary("bfloat16_bits", code_name="TO_BFLOAT16_BITS", surface=KERNEL),
    Unary("bfloat16_value", code_name="FROM_BFLOAT16_BITS", surface=KERNEL),
    # torch.special
    Unary("entr", result=FLOAT, grad=lambda x, y, g: g * -(x.log() + 1), method=False, function=False,
          special=("entr",)),
    Unary("erfcx", result=FLOAT, grad=lambda x, y, g: g * (2 * x * y - _TWO_OVER_SQRT_PI), grad_reads_output=True,
          method=False, function=False, special=("erfcx",), refuses=("float16",)),
)


# ---------------------------------------------------------------------------------------------------- binary
def _pow_grad(a, b, y, g, n):
    ga = gb = None
    if _needs(n, 0):
        ga = g * 0 if (_is_number(b) and b == 0) else g * b * a.pow(b - 1)
    if _needs(n, 1):
        if _is_number(a):
            gb = g * y * (math.log(a) if a > 0 else (0.0 if a == 0 else math.nan))
        else:
            gb = g * (y * a.log()).masked_fill((a == 0) & (b >= 0), 0.0)
    return ga, gb


def _extreme_grad(pick_a: Callable) -> Callable:
    """maximum/minimum/fmax/fmin: the gradient goes to the operand picked; ties split it evenly, as in torch."""
    def grad(a, b, y, g, n):
        wa = pick_a(a, b).to(g.dtype)
        if not (_is_number(a) or _is_number(b)):
            wa = wa.masked_fill(a == b, 0.5)
        return (g * wa if _needs(n, 0) else None), (g * (1 - wa) if _needs(n, 1) else None)
    return grad


def _xlogy_grad(a, b, log1p: bool):
    """d/da of xlogy (``log1p``: xlog1py), torch's rule: ``xlogy(a != 0, b)``, the log of ``b`` where ``a`` is
    nonzero or ``b`` NaN, else 0; for a number ``b`` inside the log's domain, the log everywhere."""
    if _is_number(b):
        inside = b > (-1 if log1p else 0)
        b = a.new_full((), b)
        if inside:
            return b.log1p() if log1p else b.log()
    logged = b.log1p() if log1p else b.log()
    return logged.where((a != 0) | b.isnan(), 0.0)


BINARY: tuple[Binary, ...] = (
    Binary("add", grad=lambda a, b, y, g, n: (g, g), grad_reads_input=False, surface=WRITTEN, numpy="add",
           python="add"),
    Binary("sub", grad=lambda a, b, y, g, n: (g, -g), grad_reads_input=False, surface=WRITTEN,
           aliases=("subtract",), numpy="subtract", python="sub"),
    Binary("mul", grad=lambda a, b, y, g, n: (g * b if _needs(n, 0) else None, g * a if _needs(n, 1) else None),
           surface=WRITTEN, aliases=("multiply",), numpy="multiply", python="mul", exact_scalar=EITHER),
    Binary("div", result=FLOAT, grad=lambda a, b, y, g, n: (g / b if _needs(n, 0) else None,
                                                           -g * y / b if _needs(n, 1) else None),
           grad_reads_output=True, surface=WRITTEN, aliases=("divide", "true_divide"),
           numpy=("divide", "true_divide"), python="truediv", exact_scalar=SECOND),
    Binary("floor_divide", code_name="FLOOR_DIV", grad=lambda a, b, y, g, n: (g * 0, g * 0), surface=WRITTEN,
           integer="int_floor_divide", int_divisor=True, numpy="floor_divide", exact_scalar=SECOND),
    Binary("trunc_divide", code_name="TRUNC_DIV", grad=lambda a, b, y, g, n: (g * 0, g * 0), surface=INTERNAL,
           integer="int_trunc_divide", int_divisor=True, exact_scalar=SECOND),
    Binary("remainder", grad=lambda a, b, y, g, n: (g, -g * (a // b)), integer="int_remainder", int_divisor=True,
           numpy="remainder"),
    Binary("fmod", grad=lambda a, b, y, g, n: (g, -g * a.div(b, rounding_mode="trunc")), integer="int_fmod",
           int_divisor=True, numpy="fmod"),
    Binary("pow", scalar="power", grad=_pow_grad, grad_reads_output=True, surface=WRITTEN, integer="int_power",
           numpy="power"),
    Binary("atan2", result=FLOAT, grad=lambda a, b, y, g, n: (g * b / (a * a + b * b), -g * a / (a * a + b * b)),
           tensor_only=True, aliases=("arctan2",), numpy="arctan2"),
    Binary("hypot", result=FLOAT_ONLY, grad=lambda a, b, y, g, n: (g * a / y, g * b / y), grad_reads_output=True,
           tensor_only=True, numpy="hypot"),
    Binary("maximum", grad=_extreme_grad(lambda a, b: a > b), tensor_only=True, numpy="maximum"),
    Binary("minimum", grad=_extreme_grad(lambda a, b: a < b), tensor_only=True, numpy="minimum"),
    Binary("fmax", grad=_extreme_grad(lambda a, b: (a >= b) | b.isnan()), tensor_only=True, numpy="fmax"),
    Binary("fmin", grad=_extreme_grad(lambda a, b: (a <= b) | b.isnan()), tensor_only=True, numpy="fmin"),
    Binary("eq", result=BOOL, numpy="equal"),
    Binary("ne", result=BOOL, aliases=("not_equal",), numpy="not_equal"),
    Binary("lt", result=BOOL, aliases=("less",), numpy="less"),
    Binary("le", result=BOOL, aliases=("less_equal",), numpy="less_equal"),
    Binary("gt", result=BOOL, aliases=("greater",), numpy="greater"),
    Binary("ge", result=BOOL, aliases=("greater_equal",), numpy="greater_equal"),
    Binary("logical_and", result=BOOL, tensor_only=True, numpy="logical_and"),
    Binary("logical_or", result=BOOL, tensor_only=True, numpy="logical_or"),
    Binary("logical_xor", result=BOOL, tensor_only=True, numpy="logical_xor"),
    Binary("bitwise_and", result=INT_ONLY, numpy="bitwise_and"),
    Binary("bitwise_or", result=INT_ONLY, numpy="bitwise_or"),
    Binary("bitwise_xor", result=INT_ONLY, numpy="bitwise_xor"),
    Binary("bitwise_left_shift", scalar="left_shift", code_name="LSHIFT", result=INT_ONLY, numpy="left_shift"),
    Binary("bitwise_right_shift", scalar="right_shift", code_name="RSHIFT", result=INT_ONLY, numpy="right_shift"),
    Binary("copysign", result=FLOAT, grad=lambda a, b, y, g, n: (
        g * (y / a).nan_to_num(0.0) if _needs(n, 0) else None, g * 0 if _needs(n, 1) else None),
        grad_reads_output=True, numpy="copysign"),
    Binary("xlogy", result=FLOAT, grad=lambda a, b, y, g, n: (
        g * _xlogy_grad(a, b, False) if _needs(n, 0) else None, g * a / b if _needs(n, 1) else None),
        inplace_function=True, special=("xlogy",)),
    # integer operands of floor_divide, trunc_divide, remainder, fmod and pow
    Binary("int_floor_divide", code_name="IFLOOR_DIV", result=INT_ONLY, surface=KERNEL),
    Binary("int_trunc_divide", code_name="ITRUNC_DIV", result=INT_ONLY, surface=KERNEL),
    Binary("int_remainder", code_name="IREMAINDER", result=INT_ONLY, surface=KERNEL),
    Binary("int_fmod", code_name="IFMOD", result=INT_ONLY, surface=KERNEL),
    Binary("int_power", code_name="IPOW", result=INT_ONLY, surface=KERNEL),
    # torch's gradients: d/da log(e^a + e^b) = 1 / (1 + e^(b - a)), and the same in base 2
    Binary("logaddexp", result=FLOAT_ONLY, grad=lambda a, b, y, g, n: (
        g / (1 + (b - a).exp()) if _needs(n, 0) else None, g / (1 + (a - b).exp()) if _needs(n, 1) else None),
        tensor_only=True, surface=WRITTEN, inplace_method=False),
    Binary("logaddexp2", result=FLOAT_ONLY, grad=lambda a, b, y, g, n: (
        g / (1 + (b - a).exp2()) if _needs(n, 0) else None, g / (1 + (a - b).exp2()) if _needs(n, 1) else None),
        tensor_only=True, surface=WRITTEN, inplace_method=False),
    Binary("gcd", result=INT_ONLY, refuses=("bool",), tensor_only=True, inplace_function=True, numpy="gcd"),
    Binary("lcm", result=INT_ONLY, refuses=("bool",), tensor_only=True, inplace_function=True, numpy="lcm"),
    Binary("nextafter", result=FLOAT_ONLY, grad=lambda a, b, y, g, n: (g, g * 0),  # torch's: identity for input
           tensor_only=True,
           widths=(("float32", "nextafter_f32"), ("float16", "nextafter_f16"), ("bfloat16", "nextafter_bf16"))),
    Binary("nextafter_f32", result=FLOAT_ONLY, surface=KERNEL),
    Binary("nextafter_f16", result=FLOAT_ONLY, surface=KERNEL),
    Binary("nextafter_bf16", result=FLOAT_ONLY, surface=KERNEL),
    # torch.special
    Binary("xlog1py", result=FLOAT, grad=lambda a, b, y, g, n: (
        g * _xlogy_grad(a, b, True) if _needs(n, 0) else None, g * a / (b + 1) if _needs(n, 1) else None),
        method=False, function=False, special=("xlog1py",)),
)

TERNARY: tuple[Ternary, ...] = (Ternary("where"), Ternary("clamp"), Ternary("lerp"))


# ------------------------------------------------------------------------------------------ fused activations
@dataclass(frozen=True, eq=False)
class Activation:
    """One fused activation kernel: ``name`` and ``name_grad`` (or ``name_grad_y``) of
    ``ember.kernels.common.activations``, with up to three parameters."""

    name: str
    torch_kernel: str = ""                 # torch's kernel, named in its dtype errors ("silu_cpu")
    grad_reads_output: bool = False        # the backward reads the output (``name_grad_y``); fused after Linear only
    second: Callable[..., Any] | None = None  # f''(x, *params) in Tensor methods: the gradient of the fused backward
    # torch's op (default: ``name``): its nodes are ``<TorchOp>Backward0`` ("log_sigmoid": LogSigmoidBackward0); an
    # activation whose backward reads the output has the gradient of the unary op of that name
    torch_op: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "torch_op", self.torch_op or self.name)


def _gelu_tanh_second(x):
    k, c = math.sqrt(2.0 / math.pi), 0.044715
    du = k * (1 + 3 * c * x * x)
    s = (2 * k * (x + c * x * x * x)).sigmoid()
    return s * (1 - s) * (4 * du + 4 * x * du * du * (1 - 2 * s) + 12 * k * c * x * x)


def _mish_second(x):
    t = x.exp().log1p().tanh()  # tanh(softplus(x)): exp overflowing to inf gives tanh(inf) = 1, the limit
    sg = x.sigmoid()
    return (1 - t * t) * sg * (2 + x * (1 - sg) - 2 * x * t * sg)


def _zero_second(x, *params):
    return x * 0


ACTIVATION_OPS: tuple[Activation, ...] = (
    Activation("relu", grad_reads_output=True),
    Activation("tanh", grad_reads_output=True),
    Activation("logistic", grad_reads_output=True, torch_op="sigmoid"),
    Activation("gelu", "GeluKernelImpl",
               second=lambda x: (-0.5 * x * x).exp() * (1 / math.sqrt(2 * math.pi)) * (2 - x * x)),
    Activation("gelu_tanh", "GeluKernelImpl", second=_gelu_tanh_second, torch_op="gelu"),
    Activation("silu", "silu_cpu",
               second=lambda x: x.sigmoid() * (1 - x.sigmoid()) * (2 + x * (1 - 2 * x.sigmoid()))),
    Activation("mish", "mish_cpu", second=_mish_second),
    Activation("leaky_relu", "leaky_relu_cpu", second=_zero_second),  # negative slope
    Activation("elu", "elu_cpu",  # alpha, scale, input scale (ELU, SELU and CELU)
               second=lambda x, a, b, c: ((x * c).exp() * (b * a * c * c)).masked_fill(x > 0, 0.0)),
    Activation("softplus_beta", "softplus_cpu", second=lambda x, beta, th: (
        beta * (x * beta).sigmoid() * (1 - (x * beta).sigmoid())).masked_fill(x * beta > th, 0.0),
        torch_op="softplus"),
    Activation("hardswish", "hardswish_cpu",
               second=lambda x: ((x > -3) & (x < 3)).to(x.dtype) * (1.0 / 3.0)),
    Activation("hardsigmoid", "hardsigmoid_cpu", second=_zero_second),
    Activation("hardtanh", "hardtanh_cpu", second=_zero_second),  # min, max
    Activation("logsigmoid", "log_sigmoid_cpu", second=lambda x: -x.sigmoid() * (-x).sigmoid(),
               torch_op="log_sigmoid"),
)
ACTIVATIONS_BY_NAME = {a.name: a for a in ACTIVATION_OPS}


# ------------------------------------------------------------------------------------------------ the codes
def _number(table: tuple[Elementwise, ...]) -> dict[str, Elementwise]:
    for code, op in enumerate(table):
        object.__setattr__(op, "code", code)
    return {op.name: op for op in table}


UNARY_BY_NAME = _number(UNARY)
BINARY_BY_NAME = _number(BINARY)
TERNARY_BY_NAME = _number(TERNARY)
globals().update({op.code_name: op.code for table in (UNARY, BINARY, TERNARY) for op in table})

# reductions over some dimensions
(R_SUM, R_PROD, R_MAX, R_MIN, R_ALL, R_ANY, R_COUNT_NONZERO, R_SUMSQ, R_ABSMAX, R_ABSSUM) = range(10)
# argument reductions (index of the extreme element along one dimension)
(A_MAX, A_MIN) = range(2)
# scans along one dimension
(S_SUM, S_PROD, S_MAX, S_MIN, S_LOGSUMEXP) = range(5)
