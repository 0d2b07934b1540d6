"""The argument pool of the API sweep: 0-4 positional values and sometimes one keyword, drawn from tensors of every
dtype and layout (empty, 0-d, non-contiguous, expanded; NaN/inf/huge/tiny/-0.0 floats, extreme ints), ints, floats,
None, bools, int lists and tuples, tensor lists, dtypes, strings and index objects.

The sweep calls every function with whatever it draws, so sizes must never allocate gigabytes: positive ints stay
at most 8 and tensors at most 256 elements, besides a few ints too huge for any allocation (they fail fast).
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from fuzz_case import Arg, Case, DtypeArg
from fuzz_strategies import shapes, tensors

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
INTS = (0, 1, 1, 2, 2, 3, 4, 8, -1, -1, -2, -5, 2**62, -2**62, 2**63)
FLOATS = (0.5, -1.5, 2.0, 0.0, -0.0, 1e-30, 1e30, math.nan, math.inf, -math.inf)
STRINGS = ("sum", "mean", "none", "fro", "nuc", "constant", "reflect", "replicate", "circular", "nearest",
           "bilinear", "linear", "floor", "trunc", "tanh", "ij,jk->ik", "i,i->", "...", "cpu", "", "xyz")
INDEXES = (slice(None, None, 2), slice(1, None), slice(None, None, -1), Ellipsis)

small_ints = st.integers(-2, 4)
int_lists = st.lists(small_ints, max_size=4)
dtypes = st.sampled_from(DTYPES).map(DtypeArg)
strings = st.sampled_from(STRINGS)
# the shape most tensors of one call share (so several tensors often fit together); st.shared draws it once a call
call_shape = st.shared(shapes(), key="sweep call shape")
any_tensor = tensors(call_shape | shapes(), dtypes=DTYPES)


@st.composite
def pool_tensor(draw) -> Arg:
    """A tensor of any dtype, sometimes with an int extreme (overflow edges: abs(min), min // -1, max + 1)."""
    with np.errstate(over="ignore"):   # float16 turns the huge specials into inf, as intended
        arg = draw(any_tensor)
    arr = arg.array
    if arr.dtype.kind in "iu" and arr.size and arg.layout != "expand" and draw(st.integers(0, 3)) == 0:
        info = np.iinfo(arr.dtype)
        arr = arr.copy()
        arr.reshape(-1)[draw(st.integers(0, arr.size - 1))] = draw(st.sampled_from([info.min, info.max]))
        arg = Arg(arr, arg.layout)
    return arg


tensor = pool_tensor()
# one argument from the pool; a tensor one time in four
value = st.one_of(
    tensor, tensor, tensor, tensor,
    st.sampled_from(INTS), st.sampled_from(INTS), st.sampled_from(FLOATS), st.none(), st.booleans(),
    int_lists, int_lists.map(tuple),
    st.lists(tensor, min_size=1, max_size=3), st.lists(tensor, min_size=1, max_size=3).map(tuple),
    dtypes, strings, st.sampled_from(INDEXES))

# parameter names that say what kind of value a parameter takes
HINTS = {
    "tensor": ("input", "other", "tensor", "weight", "bias", "target", "index", "mask", "src", "source", "values",
               "x", "x1", "x2", "A", "B", "mat1", "mat2", "vec", "tensor1", "tensor2", "input1", "input2",
               "running_mean", "running_var", "indices", "offsets", "anchor", "positive", "negative", "end", "out"),
    "int": ("dim", "dim0", "dim1", "dim2", "k", "n", "diagonal", "offset", "groups", "kernel_size", "stride",
            "padding", "dilation", "chunks", "steps", "bins", "minlength", "padding_idx", "num_groups",
            "start_dim", "end_dim", "repeats", "split_size_or_sections", "sections", "num_classes", "blank"),
    "ints": ("size", "shape", "dims", "sizes", "output_size", "normalized_shape", "pad"),
    "float": ("p", "eps", "alpha", "beta", "value", "min", "max", "lambd", "margin", "momentum", "rtol", "atol",
              "threshold", "exponent", "norm_type", "fill_value", "negative_slope", "scale_factor"),
    "bool": ("keepdim", "inplace", "largest", "sorted", "descending", "right", "training", "align_corners",
             "return_indices", "ceil_mode", "upper", "lower", "unbiased", "stable", "accumulate", "equal_nan"),
    "string": ("reduction", "reduce", "mode", "padding_mode", "rounding_mode", "equation", "ord", "side"),
    "dtype": ("dtype",),
}
OF_KIND = {"tensor": tensor, "int": st.sampled_from(INTS), "ints": int_lists.map(tuple), "float": st.sampled_from(FLOATS),
           "bool": st.booleans(), "string": strings, "dtype": dtypes}
# a value for a parameter: of the kind its name hints at three times in four, else anything
HINTED = {name: st.one_of(OF_KIND[kind], OF_KIND[kind], OF_KIND[kind], value)
          for kind, names in HINTS.items() for name in names}


@dataclass(frozen=True)
class Params:
    """What a callable's signature says about its arguments (self excluded for a method)."""
    positional: tuple[str, ...] = ()
    required: int = 0
    var_positional: bool = True
    keywords: tuple[str, ...] = ("dim", "keepdim", "dtype", "out")


def params_of(fn, method: bool) -> Params:
    """``fn``'s parameters; one it cannot tell (a builtin) takes anything."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return Params()
    found = list(sig.parameters.values())[1 if method else 0:]
    positional = [p for p in found if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keywords = [p.name for p in found if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return Params(tuple(p.name for p in positional), sum(p.default is p.empty for p in positional),
                  any(p.kind is p.VAR_POSITIONAL for p in found), tuple(keywords) or Params.keywords)


@st.composite
def calls(draw, name: str, params: Params, method: bool) -> Case:
    """A call of ``name``: 0-4 arguments (a method's tensor counted), mostly as many as its signature wants, of the
    kinds its parameter names hint at; one time in three also a keyword it takes."""
    args = [draw(tensor)] if method else []
    most = 4 - len(args)
    if draw(st.integers(0, 3)):
        fits = params.required + (1 if params.var_positional or len(params.positional) > params.required else 0)
        count = draw(st.integers(min(params.required, most), min(fits, most)))
    else:
        count = draw(st.integers(0, most))
    names = params.positional + (None,) * 4
    args += [draw(HINTED.get(names[i], value)) for i in range(count)]
    kwargs = {}
    free = [k for k in params.keywords if k not in names[:count]]
    if free and draw(st.integers(0, 2)) == 0:
        key = draw(st.sampled_from(free))
        kwargs[key] = draw(HINTED.get(key, value))
    return Case(name, tuple(args), kwargs)
