"""The op declarations (``ember.opcodes``) against what is derived from them and against torch's names.

Each elementwise op and fused activation is declared once; these tests check that every declared fact is served
(the scalar function exists, the NumPy name is a ufunc of the right arity, each name and alias is bound where the
declaration says) and, where torch is installed, that the declared names are torch's.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import opcodes as op
from ember.kernels.common import activations, elementwise, scalar_ops

ELEMENTWISE = (*op.UNARY, *op.BINARY, *op.TERNARY)
PUBLIC = [d for d in (*op.UNARY, *op.BINARY) if d.surface in (op.GENERATED, op.WRITTEN)]


def test_codes_are_positions_and_names_are_unique():
    for table in (op.UNARY, op.BINARY, op.TERNARY):
        assert [d.code for d in table] == list(range(len(table)))
        assert getattr(op, table[0].code_name) == 0
    assert len({d.name for d in ELEMENTWISE}) == len(ELEMENTWISE)
    for table in (op.UNARY, op.BINARY):
        assert len({d.code_name for d in table}) == len(table)
        assert all(getattr(op, d.code_name) == d.code for d in table)


def test_every_kernel_table_entry_is_a_shared_scalar_function():
    for table, arity in ((elementwise.UNARY, 1), (elementwise.BINARY, 2), (elementwise.TERNARY, 3)):
        for name in table.values():
            fn = getattr(scalar_ops, name)
            assert fn.py_func.__code__.co_argcount == arity, name


def test_numpy_names_are_ufuncs_of_the_ops_arity():
    for d in ELEMENTWISE:
        for name in d.numpy:
            assert isinstance(getattr(np, name), np.ufunc) and getattr(np, name).nin == d.arity, name


def test_referenced_kernel_ops_exist():
    for d in op.BINARY:
        if d.integer:
            assert op.BINARY_BY_NAME[d.integer].surface == op.KERNEL
        for dtype, kernel in d.widths:
            assert op.BINARY_BY_NAME[kernel].surface == op.KERNEL and hasattr(ember, dtype)


def test_declared_names_are_bound():
    for d in PUBLIC:
        if d.method and d.surface == op.GENERATED:
            assert callable(getattr(ember.Tensor, d.name)), d.name
        if d.method and d.inplace_method:
            assert callable(getattr(ember.Tensor, d.name + "_")), d.name
        if d.function:
            assert callable(getattr(ember, d.name)), d.name
        if d.function and d.inplace_function:
            assert callable(getattr(ember, d.name + "_")), d.name
        for alias in d.aliases:
            if d.function:
                assert getattr(ember, alias) is getattr(ember, d.name), alias
            if d.method:
                assert getattr(ember.Tensor, alias) is getattr(ember.Tensor, d.name), alias
        for name in d.special:
            assert callable(getattr(ember.special, name)), name
    assert not hasattr(ember.Tensor, "trigamma")  # an INTERNAL op has no public name


def test_declared_names_are_torchs(torch_ref):
    for d in PUBLIC:
        assert hasattr(torch_ref, d.name) == d.function, d.name
        assert hasattr(torch_ref.Tensor, d.name) == d.method, d.name
        if d.function:
            assert hasattr(torch_ref, d.name + "_") == d.inplace_function, d.name
        for alias in d.aliases:
            assert hasattr(torch_ref, alias) == d.function and hasattr(torch_ref.Tensor, alias) == d.method, alias
            if d.function:
                want = d.inplace_function and d.alias_inplace_functions
                assert hasattr(torch_ref, alias + "_") == want, alias
        for name in d.special:
            assert hasattr(torch_ref.special, name), name


def test_activations_have_their_scalar_pairs():
    for a in op.ACTIVATION_OPS:
        assert callable(getattr(activations, a.name))
        assert callable(getattr(activations, activations.grad_function(a.name)))
        assert activations.grad_reads_output(a.name) == a.grad_reads_output
        assert (a.second is None) == a.grad_reads_output  # the fused backward of the others is differentiated
    assert activations.BIAS_ACTIVATIONS == tuple(a.name for a in op.ACTIVATION_OPS if a.grad_reads_output) + \
        activations.ACTIVATIONS


@pytest.mark.parametrize("d", [d for d in op.UNARY if d.surface == op.GENERATED and d.function], ids=lambda d: d.name)
def test_out_rule(d):
    x = ember.tensor([0.5, 0.25])
    if d.out is None:
        with pytest.raises(TypeError):
            getattr(ember, d.name)(x, out=ember.empty(2))
        return
    out = ember.empty(2, dtype=ember.float64)
    if d.out == op.EXACT:
        with pytest.raises(RuntimeError):
            getattr(ember, d.name)(x, out=out)
    else:
        assert getattr(ember, d.name)(x, out=out) is out
