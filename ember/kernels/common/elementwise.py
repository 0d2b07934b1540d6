"""The elementwise op tables both backends compile, derived from the op declarations (``ember.opcodes``).

``UNARY``/``BINARY``/``TERNARY`` map an op code to the name of its scalar function in
``ember.kernels.common.scalar_ops`` (the arity is the table's): the CPU inlines each into its loop skeletons
(``ember.kernels.cpu.elementwise``), the GPU builds it as a device function (``ember.kernels.cuda.elementwise``).
The other tables are the declarations' facts a backend needs, keyed by code or by NumPy name.
"""
from __future__ import annotations

from ... import opcodes as op

__all__ = ["UNARY", "BINARY", "TERNARY", "INTEGER_ONLY", "UFUNCS", "BOOL_UFUNCS", "INTEGER_TWINS", "HOST_UFUNCS",
           "PYTHON_OPERATORS"]

_TABLES = {1: op.UNARY, 2: op.BINARY, 3: op.TERNARY}

UNARY = {d.code: d.scalar for d in op.UNARY}
BINARY = {d.code: d.scalar for d in op.BINARY}
TERNARY = {d.code: d.scalar for d in op.TERNARY}
# per arity, the codes with no floating-point meaning (a float operand is refused)
INTEGER_ONLY = {arity: frozenset(d.code for d in table if d.result == op.INT_ONLY) for arity, table in _TABLES.items()}
# per arity, NumPy ufunc name -> the code that serves it on device arrays
UFUNCS = {arity: {name: d.code for d in table for name in d.numpy} for arity, table in _TABLES.items()}
# the ufuncs whose result is bool
BOOL_UFUNCS = frozenset(name for table in _TABLES.values() for d in table if d.result == op.BOOL for name in d.numpy)
# binary code -> the code integer operands run instead (floor_divide, remainder, fmod, pow, trunc_divide)
INTEGER_TWINS = {d.code: op.BINARY_BY_NAME[d.integer].code for d in op.BINARY if d.integer}
# unary code -> the NumPy ufunc whose float loop gives the kernel's results (or better), several times faster
HOST_UFUNCS = {d.code: d.numpy[0] for d in op.UNARY if d.host_ufunc}
# binary code -> the ``operator`` function computing it exactly on Python floats (IEEE + - * /, as the kernels)
PYTHON_OPERATORS = {d.code: d.python for d in op.BINARY if d.python}
