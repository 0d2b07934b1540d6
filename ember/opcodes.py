"""Operation codes shared by the tensor layer and every kernel backend.

Kernels are written once per op *family* (unary, binary, ternary, reduction,
scan) and take one of these integers to select the scalar operation, so a
program compiles a handful of kernels rather than one per op and dtype.
"""

# unary: out = f(x)
(NEG, ABS, EXP, EXP2, EXPM1, LOG, LOG2, LOG10, LOG1P, SIN, COS, TAN, ASIN, ACOS, ATAN, SINH, COSH, TANH,
 ASINH, ACOSH, ATANH, SQRT, RSQRT, SQUARE, SIGMOID, ERF, ERFC, ERFINV, LGAMMA, DIGAMMA, SIGN, FLOOR, CEIL,
 ROUND, TRUNC, FRAC, RECIPROCAL, RELU, LOGICAL_NOT, BITWISE_NOT, ISNAN, ISINF, ISFINITE, ISPOSINF, ISNEGINF,
 SIGNBIT, COPY, TRIGAMMA, CUBE) = range(49)

# binary: out = f(a, b)
(ADD, SUB, MUL, DIV, FLOOR_DIV, TRUNC_DIV, REMAINDER, FMOD, POW, ATAN2, HYPOT, MAXIMUM, MINIMUM, FMAX, FMIN,
 EQ, NE, LT, LE, GT, GE, LOGICAL_AND, LOGICAL_OR, LOGICAL_XOR, BITWISE_AND, BITWISE_OR, BITWISE_XOR,
 LSHIFT, RSHIFT, COPYSIGN, XLOGY, IFLOOR_DIV, ITRUNC_DIV, IREMAINDER, IFMOD, IPOW, LOGADDEXP, LOGADDEXP2,
 GCD, LCM, NEXTAFTER, NEXTAFTER_F32, NEXTAFTER_F16) = range(43)  # nextafter: one code per float width

# ternary: out = f(a, b, c)
(WHERE, CLAMP, LERP) = range(3)

# reductions over some dimensions
(R_SUM, R_PROD, R_MAX, R_MIN, R_ALL, R_ANY, R_COUNT_NONZERO, R_SUMSQ, R_ABSMAX, R_ABSSUM) = range(10)
# argument reductions (index of the extreme element along one dimension)
(A_MAX, A_MIN) = range(2)
# scans along one dimension
(S_SUM, S_PROD, S_MAX, S_MIN, S_LOGSUMEXP) = range(5)
