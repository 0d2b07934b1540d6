"""Argument guards live where functions are defined (``@tensor_args``), ``ember/__init__.py`` only re-exports, and
a guarded function calling another reports its own argument."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import ember
import ember.nn.functional as F
from ember.tensor.arguments import tensor_args, unguarded

INIT = Path(ember.__file__)


@pytest.mark.parametrize("label, namespace", [("ember", ember), ("F", F), ("linalg", ember.linalg)])
def test_every_public_function_is_guarded_where_it_is_defined(label, namespace):
    """Guarding a public function again changes nothing: it was guarded (or needs no guard) already."""
    unguarded_here = [name for name in dir(namespace) if not name.startswith("_")
                      and inspect.isfunction(getattr(namespace, name))
                      and tensor_args(getattr(namespace, name)) is not getattr(namespace, name)]
    assert not unguarded_here, unguarded_here


def test_the_top_level_package_defines_no_functions():
    tree = ast.parse(INIT.read_text())
    defined = [node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.Lambda, ast.ClassDef))]
    assert defined == []


@pytest.mark.parametrize("call, message", [
    (lambda: ember.argsort(3), "argsort(): argument 'input' (position 1) must be Tensor, not int"),
    (lambda: ember.std_mean([1.0]), "std_mean(): argument 'input' (position 1) must be Tensor, not list"),
    (lambda: F.softshrink(2.0), "softshrink(): argument 'input' (position 1) must be Tensor, not float"),
])
def test_a_guard_inside_another_names_the_outer_call(call, message):
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == message


def test_out_functions_take_out_and_numpy_names():
    x = ember.tensor([[1.0, 5.0], [3.0, 2.0]])
    out = ember.empty(2)
    assert ember.amax(x, 1, out=out) is out and out.tolist() == [5.0, 3.0]
    assert ember.amax(x, axis=0).tolist() == [3.0, 5.0] and x.amax(axis=1, keepdims=True).tolist() == [[5.0], [3.0]]


def test_one_guarded_object_per_function():
    assert ember.Tensor.masked_fill is ember.masked_fill  # the method and the function
    assert ember.arcsin is ember.asin and ember.clip is ember.clamp and ember.concat is ember.cat
    assert ember.sin.__name__ == "sin" and unguarded(ember.sin) is not ember.sin
