"""The op table: every fuzzed public entry point with its argument strategy (valid and invalid calls alike).

Each strategy returns a ``Case``; ``Op.call(lib, ...)`` runs it in ember or torch. Families name the kernel family an
op exercises, so the boundscheck pass can pick a small subset that still reaches every CPU kernel family.
"""
from __future__ import annotations

from hypothesis import strategies as st

from fuzz_case import TORCH, Case, Op
from fuzz_strategies import (FLOATS, INTS, MIXED, broadcast_pair, dims, floats, indices, nonzero_sizes, scalars,
                             shapes, sizes, tensors)

OPS: dict[str, Op] = {}


def register(name: str, call, cases, **kw) -> None:
    OPS[name] = Op(name, call, cases, **kw)


def values_only(result):
    """(values, indices) results whose index order on ties is unspecified: compare the values."""
    return result[0]


# ---- elementwise ----------------------------------------------------------------------------------------------------

UNARY = ("abs", "neg", "exp", "log", "sqrt", "sin", "tanh", "sigmoid", "floor", "round", "sign", "reciprocal",
         "erf", "log1p", "expm1", "isnan", "isinf", "logical_not", "rsqrt", "nan_to_num", "square", "trunc",
         "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2",
         "ceil", "frac", "erfc", "sgn", "signbit", "isfinite", "isneginf", "isposinf", "deg2rad", "rad2deg",
         "positive", "fix", "angle", "sinc", "logit")


def _unary(name: str):
    return st.builds(lambda x: Case(name, (x,)), tensors())


for _name in UNARY:
    register(_name, lambda lib, x, _n=_name: getattr(lib.t, _n)(x), _unary(_name), family="elementwise")

register("bitwise_not", lambda lib, x: lib.t.bitwise_not(x),
         st.builds(lambda x: Case("bitwise_not", (x,)), tensors(dtypes=INTS + ("bool", "float32"))),
         family="elementwise")

BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod", "remainder", "atan2", "eq", "lt",
          "logical_and", "floor_divide", "hypot", "copysign", "xlogy", "bitwise_and", "ne", "le", "gt", "ge",
          "fmax", "fmin", "logical_or", "logical_xor", "true_divide", "logaddexp", "logaddexp2", "float_power",
          "ldexp", "heaviside")
BINARY_WITH_OUT = {"logaddexp", "logaddexp2", "float_power", "ldexp", "heaviside"}  # out= through the shared writer


@st.composite
def _binary(draw, name: str):
    sa, sb = draw(broadcast_pair())
    a = draw(tensors(sa, dtypes=INTS + ("bool",) if name == "bitwise_and" else MIXED))
    b = draw(scalars) if draw(st.integers(0, 4)) == 0 else draw(tensors(sb))
    return Case(name, (a, b))


for _name in BINARY:
    register(_name, lambda lib, a, b, _n=_name, **o: getattr(lib.t, _n)(a, b, **o), _binary(_name),
             out=_name in BINARY_WITH_OUT, family="elementwise")


@st.composite
def _inplace(draw, name: str):
    sa, sb = draw(broadcast_pair())
    return Case(name, (draw(tensors(sa)), draw(tensors(sb)) if draw(st.booleans()) else draw(scalars)))


for _name in ("add_", "mul_", "div_", "clamp_min", "float_power_", "clamp_min_", "true_divide_"):
    register(_name, lambda lib, a, b, _n=_name: getattr(a, _n)(b), _inplace(_name), family="elementwise")


@st.composite
def _where(draw):
    sa, sb = draw(broadcast_pair())
    return Case("where", (draw(tensors(sa, dtypes=("bool", "bool", "float32"))), draw(tensors(sa)),
                          draw(tensors(sb))))


register("where", lambda lib, c, a, b: lib.t.where(c, a, b), _where(), family="elementwise")


@st.composite
def _clamp(draw):
    x = draw(tensors())
    lo = draw(st.none() | scalars)
    hi = draw(st.none() | scalars)
    return Case("clamp", (x,), {"min": lo, "max": hi})


register("clamp", lambda lib, x, **kw: lib.t.clamp(x, **kw), _clamp(), family="elementwise")


@st.composite
def _ternary(draw, name: str):
    sa, sb = draw(broadcast_pair())
    return Case(name, (draw(floats(sa)), draw(floats(sb)), draw(floats(sa))), {"value": draw(scalars)})


register("addcmul", lambda lib, a, b, c, value: lib.t.addcmul(a, b, c, value=value), _ternary("addcmul"),
         family="elementwise")


@st.composite
def _lerp(draw):
    sa, sb = draw(broadcast_pair())
    return Case("lerp", (draw(floats(sa)), draw(floats(sb)), draw(st.sampled_from([0.3, 1.5, -1.0]))))


register("lerp", lambda lib, a, b, w: lib.t.lerp(a, b, w), _lerp(), family="elementwise")

# ---- reductions and scans -------------------------------------------------------------------------------------------


@st.composite
def _reduce(draw, name: str, dtypes=MIXED, dim_required: bool = False, distinct: bool = False, extra=None):
    x = draw(tensors(dtypes=dtypes, distinct=distinct))
    kw = {"dim": draw(dims(x.array.ndim, allow_none=not dim_required))}
    if draw(st.booleans()) and not dim_required:
        kw["keepdim"] = draw(st.booleans())
    if extra is not None:
        kw.update(draw(extra))
    return Case(name, (x,), kw)


def _method(name: str):
    return lambda lib, x, *a, **kw: getattr(x, name)(*a, **kw)


for _name in ("sum", "mean", "prod", "amax", "logsumexp", "std", "var", "any", "all", "count_nonzero", "norm",
              "nansum", "nanmean"):
    _needs_dim = _name == "logsumexp"
    register(_name, _method(_name), _reduce(_name, dim_required=_needs_dim), family="reduction")


@st.composite
def _reduce_tuple(draw, name: str):
    x = draw(tensors())
    nd = x.array.ndim
    dim = tuple(draw(st.lists(dims(nd), max_size=3)))
    return Case(name, (x,), {"dim": dim, "keepdim": draw(st.booleans())})


register("sum_dims", lambda lib, x, **kw: x.sum(**kw), _reduce_tuple("sum_dims"), family="reduction")
register("amin_dims", lambda lib, x, **kw: x.amin(**kw), _reduce_tuple("amin_dims"), family="reduction")

@st.composite
def _vector_norm(draw):
    x = draw(tensors(dtypes=("float32", "float64", "int64")))
    return Case("vector_norm", (x,), {"ord": draw(st.sampled_from([2, 1, float("inf"), 0, -1, 3.5])),
                                      "dim": draw(dims(x.array.ndim, allow_none=True)), "keepdim": draw(st.booleans())})


# out= goes through one shared writer: the canary checks it writes only into the out view
register("vector_norm", lambda lib, x, **kw: lib.t.linalg.vector_norm(x, **kw), _vector_norm(), out=True,
         family="reduction")

for _name in ("argmax", "argmin"):
    register(_name, _method(_name), _reduce(_name, distinct=True), family="reduction")
for _name in ("max", "min"):
    register(_name + "_dim", _method(_name), _reduce(_name + "_dim", dim_required=True, distinct=True),
             family="reduction")

for _name in ("cumsum", "cumprod", "cummax", "logcumsumexp"):
    register(_name, _method(_name), _reduce(_name, dim_required=True, distinct=_name == "cummax"), family="scan")

# ---- indexing -------------------------------------------------------------------------------------------------------


@st.composite
def _index_select(draw):
    x = draw(tensors(shapes(min_dims=1)))
    dim = draw(dims(x.array.ndim))
    size = x.array.shape[dim] if -x.array.ndim <= dim < x.array.ndim else 2
    return Case("index_select", (x, dim, draw(indices(shapes(max_dims=2), size, negative=False))))


register("index_select", lambda lib, x, d, i: lib.t.index_select(x, d, i), _index_select(), family="indexing")


@st.composite
def _gather_like(draw, name: str):
    x = draw(tensors(shapes(min_dims=1)))
    nd = x.array.ndim
    dim = draw(dims(nd))
    d = dim % nd if -nd <= dim < nd else 0
    ishape = tuple(draw(st.integers(0, n)) if draw(st.booleans()) else n for n in x.array.shape)
    if draw(st.integers(0, 5)) == 0:
        ishape = ishape + (1,)
    idx = draw(indices(ishape, x.array.shape[d] if nd else 1, negative=False))
    if name == "gather":
        return Case(name, (x, dim, idx))
    src = draw(tensors(ishape, dtypes=(x.array.dtype.name,), special=False))
    return Case(name, (x, dim, idx, src))


register("gather", lambda lib, x, d, i: lib.t.gather(x, d, i), _gather_like("gather"), family="indexing")
register("scatter", lambda lib, x, d, i, s: lib.t.scatter(x, d, i, s), _gather_like("scatter"),
         family="indexing")
register("scatter_add", lambda lib, x, d, i, s: lib.t.scatter_add(x, d, i, s), _gather_like("scatter_add"),
         family="indexing")
register("take_along_dim", lambda lib, x, d, i: lib.t.take_along_dim(x, i, d), _gather_like("take_along_dim"),
         family="indexing")


@st.composite
def _take(draw):
    x = draw(tensors())
    return Case("take", (x, draw(indices(shapes(max_dims=2), x.array.size))))


register("take", lambda lib, x, i: lib.t.take(x, i), _take(), family="indexing")


@st.composite
def _put(draw):
    x = draw(tensors(layouts=("contiguous",)))
    idx = draw(indices(shapes(max_dims=1), x.array.size))
    src = draw(tensors(idx.array.shape, dtypes=(x.array.dtype.name,)))
    return Case("put_", (x, idx, src), {"accumulate": draw(st.booleans())})


register("put_", lambda lib, x, i, s, **kw: x.put_(i, s, **kw), _put(), family="indexing")


@st.composite
def _index_add(draw, name: str):
    x = draw(tensors(shapes(min_dims=1), layouts=("contiguous", "transpose", "step2")))
    nd = x.array.ndim
    dim = draw(dims(nd))
    d = dim % nd if -nd <= dim < nd else 0
    idx = draw(indices((draw(sizes),), x.array.shape[d], negative=False))
    sshape = list(x.array.shape)
    sshape[d] = idx.array.shape[0]
    if draw(st.integers(0, 5)) == 0:
        sshape[-1] += 1
    return Case(name, (x, dim, idx, draw(tensors(tuple(sshape), dtypes=(x.array.dtype.name,)))))


register("index_add", lambda lib, x, d, i, s: lib.t.index_add(x, d, i, s), _index_add("index_add"),
         family="indexing")
register("index_copy_", lambda lib, x, d, i, s: x.index_copy_(d, i, s), _index_add("index_copy_"),
         family="indexing")


@st.composite
def _getitem(draw):
    x = draw(tensors(shapes(min_dims=1)))
    n = x.array.shape[0]
    kind = draw(st.sampled_from(["tensor", "tensor2", "mask", "int", "slice"]))
    if kind == "tensor":
        key = draw(indices(shapes(max_dims=2), n))
    elif kind == "tensor2":
        last = x.array.shape[-1]
        key = (draw(indices((2,), n)), Ellipsis, draw(indices(draw(st.sampled_from([(2,), (1,), (3,)])), last)))
    elif kind == "mask":
        mshape = x.array.shape[:draw(st.integers(1, x.array.ndim))]
        if draw(st.integers(0, 5)) == 0:
            mshape = (n + 1,) + mshape[1:]
        key = draw(tensors(mshape, dtypes=("bool",), layouts=("contiguous",)))
    elif kind == "int":
        key = draw(st.integers(-n - 2, n + 1))
    else:
        key = slice(draw(st.integers(-5, 5)), draw(st.none() | st.integers(-5, 5)), draw(st.sampled_from([1, 2, 3])))
    return Case("getitem", (x, key))


register("getitem", lambda lib, x, key: x[key], _getitem(), family="indexing")


@st.composite
def _setitem(draw):
    base = draw(_getitem())
    x, key = base.args
    value = draw(scalars) if draw(st.booleans()) else draw(tensors(shapes(max_dims=1), dtypes=FLOATS))
    return Case("setitem", (x, key, value))


def _setitem_call(lib, x, key, value):
    x[key] = value
    return x


register("setitem", _setitem_call, _setitem(), family="indexing")


@st.composite
def _masked(draw, name: str):
    sx, sm = draw(broadcast_pair())
    x = draw(tensors(sx))
    mask = draw(tensors(sm, dtypes=("bool", "bool", "bool", "int64"), layouts=("contiguous", "expand")))
    if name == "masked_fill":
        return Case(name, (x, mask, draw(scalars)))
    if name == "masked_scatter":
        src = draw(tensors(shapes(max_dims=2), dtypes=(x.array.dtype.name,)))
        return Case(name, (x, mask, src))
    return Case(name, (x, mask))


register("masked_fill", lambda lib, x, m, v: lib.t.masked_fill(x, m, v), _masked("masked_fill"), family="indexing")
register("masked_select", lambda lib, x, m: lib.t.masked_select(x, m), _masked("masked_select"), family="indexing")
register("masked_scatter", lambda lib, x, m, s: lib.t.masked_scatter(x, m, s), _masked("masked_scatter"),
         family="indexing")

# ---- views ----------------------------------------------------------------------------------------------------------


@st.composite
def _reshape(draw, name: str):
    x = draw(tensors())
    n = x.array.size
    shape = list(draw(shapes(max_dims=3)))
    if draw(st.booleans()) and n:
        shape = [n] if not shape else shape[:-1] + [-1]
    elif draw(st.booleans()):
        shape = [n]
    return Case(name, (x, tuple(shape)))


register("reshape", lambda lib, x, s: x.reshape(s), _reshape("reshape"), family="view")
register("view", lambda lib, x, s: x.view(s), _reshape("view"), family="view")


@st.composite
def _permute(draw):
    x = draw(tensors())
    nd = x.array.ndim
    perm = draw(st.permutations(range(nd)))
    if draw(st.integers(0, 3)) == 0:
        perm = draw(st.lists(dims(nd), min_size=max(nd - 1, 0), max_size=nd + 1))
    return Case("permute", (x, tuple(perm)))


register("permute", lambda lib, x, p: x.permute(*p), _permute(), family="view")


@st.composite
def _two_dims(draw, name: str):
    x = draw(tensors())
    return Case(name, (x, draw(dims(x.array.ndim)), draw(dims(x.array.ndim))))


register("transpose", lambda lib, x, a, b: x.transpose(a, b), _two_dims("transpose"), family="view")
register("movedim", lambda lib, x, a, b: x.movedim(a, b), _two_dims("movedim"), family="view")


@st.composite
def _narrow(draw):
    x = draw(tensors(shapes(min_dims=1)))
    return Case("narrow", (x, draw(dims(x.array.ndim)), draw(st.integers(-5, 5)), draw(st.integers(-1, 5))))


register("narrow", lambda lib, x, d, s, n: x.narrow(d, s, n), _narrow(), family="view")


@st.composite
def _select(draw):
    x = draw(tensors(shapes(min_dims=1)))
    return Case("select", (x, draw(dims(x.array.ndim)), draw(st.integers(-5, 5))))


register("select", lambda lib, x, d, i: x.select(d, i), _select(), family="view")


@st.composite
def _expand(draw):
    x = draw(tensors(shapes(max_dims=3)))
    target = [n if draw(st.booleans()) else draw(st.sampled_from([-1, n, 3, 0])) for n in x.array.shape]
    lead = draw(st.lists(st.sampled_from([1, 2, 0, -1]), max_size=2))
    return Case("expand", (x, tuple(lead + target)))


register("expand", lambda lib, x, s: x.expand(*s), _expand(), family="view")


@st.composite
def _as_strided(draw):
    x = draw(tensors(layouts=("contiguous", "transpose", "step2")))
    nd = draw(st.integers(0, 3))
    size = tuple(draw(st.lists(st.integers(-1, 3), min_size=nd, max_size=nd)))
    stride = tuple(draw(st.lists(st.integers(-1, 3), min_size=nd, max_size=nd)))
    return Case("as_strided", (x, size, stride, draw(st.integers(0, 4))))


def _as_strided_call(lib, x, size, stride, offset):
    return x.as_strided(size, stride, x.storage_offset() + offset)


register("as_strided", _as_strided_call, _as_strided(), family="view")


@st.composite
def _unfold(draw):
    x = draw(tensors(shapes(min_dims=1)))
    return Case("unfold", (x, draw(dims(x.array.ndim)), draw(st.integers(-1, 4)), draw(st.integers(-1, 3))))


register("unfold", lambda lib, x, d, s, st_: x.unfold(d, s, st_), _unfold(), family="view")


@st.composite
def _one_dim(draw, name: str, extra=st.just(())):
    x = draw(tensors())
    return Case(name, (x, draw(dims(x.array.ndim))) + tuple(draw(extra)))


register("squeeze", lambda lib, x, d: x.squeeze(d), _one_dim("squeeze"), family="view")
register("unsqueeze", lambda lib, x, d: x.unsqueeze(d), _one_dim("unsqueeze"), family="view")
register("flip", lambda lib, x, d: x.flip(d), _one_dim("flip"), family="view")
register("roll", lambda lib, x, d, s: x.roll(s, d), _one_dim("roll", st.tuples(st.integers(-5, 5))), family="view")
register("diagonal", lambda lib, x, d, o: x.diagonal(o, d, -1),
         _one_dim("diagonal", st.tuples(st.integers(-3, 3))), family="view")
register("flatten", lambda lib, x, d, e: x.flatten(d, e), _one_dim("flatten", st.tuples(st.integers(-3, 2))),
         family="view")


@st.composite
def _repeat(draw):
    x = draw(tensors(shapes(max_dims=3)))
    reps = draw(st.lists(st.integers(-1, 3), min_size=max(x.array.ndim - 1, 0), max_size=x.array.ndim + 1))
    return Case("repeat", (x, tuple(reps)))


register("repeat", lambda lib, x, r: x.repeat(*r), _repeat(), family="view")
register("tile", lambda lib, x, r: x.tile(r), _repeat(), family="view")

# ---- joins ----------------------------------------------------------------------------------------------------------


@st.composite
def _join(draw, name: str):
    shape = draw(shapes(min_dims=1, max_dims=3))
    count = draw(st.integers(0, 3))
    parts = []
    for _ in range(count):
        s = list(shape)
        if draw(st.booleans()):
            s[0] = draw(sizes)
        if draw(st.integers(0, 7)) == 0:
            s = s[1:] if len(s) > 1 else s + [2]
        parts.append(draw(tensors(tuple(s))))
    return Case(name, (parts, draw(dims(len(shape) + (name == "stack")))))


register("cat", lambda lib, ts, d: lib.t.cat(ts, d), _join("cat"), family="join")
register("stack", lambda lib, ts, d: lib.t.stack(ts, d), _join("stack"), family="join")


@st.composite
def _split(draw, name: str):
    x = draw(tensors(shapes(min_dims=1)))
    if name == "split" and draw(st.booleans()):
        how = draw(st.lists(st.integers(-1, 4), min_size=1, max_size=3))
    else:
        how = draw(st.integers(-1, 4))
    return Case(name, (x, how, draw(dims(x.array.ndim))))


register("split", lambda lib, x, h, d: lib.t.split(x, h, d), _split("split"), family="join")
register("chunk", lambda lib, x, h, d: lib.t.chunk(x, h, d), _split("chunk"), family="join")
register("unbind", lambda lib, x, d: lib.t.unbind(x, d), _one_dim("unbind"), family="join")

# ---- products -------------------------------------------------------------------------------------------------------


@st.composite
def _matmul_shapes(draw, lo: int = 1, hi: int = 4):
    a = list(draw(shapes(min_dims=lo, max_dims=hi)))
    b = list(draw(shapes(min_dims=lo, max_dims=hi)))
    if a and len(b) >= 2 and draw(st.integers(0, 5)):
        b[-2] = a[-1]
    elif a and len(b) == 1 and draw(st.integers(0, 5)):
        b[0] = a[-1]
    if len(a) > 2 and len(b) > 2 and draw(st.booleans()):
        b[:-2] = a[:-2][-(len(b) - 2):] if len(a) >= len(b) else b[:-2]
    return tuple(a), tuple(b)


_product_dtypes = ("float32", "float64", "float32", "int64")


@st.composite
def _product(draw, name: str, lo: int, hi: int):
    sa, sb = draw(_matmul_shapes(lo, hi))
    return Case(name, (draw(tensors(sa, dtypes=_product_dtypes)), draw(tensors(sb, dtypes=_product_dtypes))))


for _name, _lo, _hi in (("matmul", 1, 4), ("mm", 2, 2), ("bmm", 3, 3), ("mv", 1, 2), ("dot", 1, 1),
                        ("outer", 1, 1)):
    register(_name, lambda lib, a, b, _n=_name, **o: getattr(lib.t, _n)(a, b, **o), _product(_name, _lo, _hi),
             degree=2, family="products")


@st.composite
def _addmm(draw):
    sa, sb = draw(_matmul_shapes(2, 2))
    bias_shape = draw(st.sampled_from([(sa[0], sb[1]), (sb[1],), (), (1, 3)]))
    return Case("addmm", (draw(floats(bias_shape)), draw(floats(sa)), draw(floats(sb))),
                {"beta": draw(st.sampled_from([1.0, 0.0, 0.5])), "alpha": draw(st.sampled_from([1.0, -2.0]))})


register("addmm", lambda lib, c, a, b, **kw: lib.t.addmm(c, a, b, **kw), _addmm(), degree=2, family="products")

@st.composite
def _cross(draw):
    sa, sb = draw(broadcast_pair(3))
    a, b = (draw(floats(s + (draw(st.sampled_from([3, 3, 2])),))) for s in (sa, sb))
    return Case("linalg_cross", (a, b), {"dim": draw(st.sampled_from([-1, 0]))})


register("linalg_cross", lambda lib, a, b, **kw: lib.t.linalg.cross(a, b, **kw), _cross(), degree=2, out=True,
         family="products")

# ---- sorting --------------------------------------------------------------------------------------------------------


def _sort_extra():
    return st.fixed_dictionaries({"descending": st.booleans()})


register("sort", lambda lib, x, **kw: x.sort(stable=True, **kw),
         _reduce("sort", dim_required=True, extra=_sort_extra()), family="sorting")
register("argsort", lambda lib, x, **kw: x.argsort(stable=True, **kw),
         _reduce("argsort", dim_required=True, extra=_sort_extra()), family="sorting")


@st.composite
def _topk(draw, name: str):
    x = draw(tensors())
    nd = x.array.ndim
    kw = {"dim": draw(dims(nd))}
    if name == "topk":
        kw["largest"] = draw(st.booleans())
    return Case(name, (x, draw(st.integers(-1, 5))), kw)


register("topk", lambda lib, x, k, **kw: x.topk(k, **kw), _topk("topk"), project=values_only, family="sorting")
register("kthvalue", lambda lib, x, k, **kw: x.kthvalue(k, **kw), _topk("kthvalue"), project=values_only,
         family="sorting")
def dense_for_torch(lib, x):
    """torch's median along an expanded (zero-stride) dim returns garbage (torch 2.13 CPU): the oracle gets a dense
    copy of the same values."""
    return x.contiguous() if lib is TORCH else x


register("median_dim", lambda lib, x, **kw: dense_for_torch(lib, x).median(**kw),
         _reduce("median_dim", dim_required=True), project=values_only, family="sorting")
register("unique", lambda lib, x, **kw: lib.t.unique(x, **kw),
         st.builds(lambda x, c: Case("unique", (x,), {"return_counts": c}), tensors(dtypes=("float32", "int64")),
                   st.booleans()), family="sorting")


@st.composite
def _searchsorted(draw):
    seq = draw(tensors(shapes(min_dims=1, max_dims=2), dtypes=("float32", "int64"), special=False))
    seq = type(seq)(__import__("numpy").sort(seq.array, axis=-1), seq.layout)
    values = draw(tensors(shapes(max_dims=2), dtypes=(seq.array.dtype.name,)))
    return Case("searchsorted", (seq, values), {"right": draw(st.booleans())})


register("searchsorted", lambda lib, s, v, **kw: lib.t.searchsorted(s, v, **kw), _searchsorted(), family="sorting")

# ---- nn.functional --------------------------------------------------------------------------------------------------


@st.composite
def _conv(draw, nd: int):
    n, groups = draw(st.integers(0, 2)), draw(st.sampled_from([1, 1, 2, 3]))
    cin = groups * draw(st.integers(1, 2)) + (1 if draw(st.integers(0, 7)) == 0 else 0)
    cout = groups * draw(st.integers(1, 2))
    spatial = tuple(draw(st.integers(0, 6)) for _ in range(nd))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    x = draw(floats((n, cin) + spatial, layouts=("contiguous", "transpose", "step2")))
    w = draw(floats((cout, max(cin // groups, 1)) + kernel, layouts=("contiguous", "step2")))
    bias = draw(st.none() | floats((cout + (1 if draw(st.integers(0, 7)) == 0 else 0),)))
    kw = {"stride": draw(st.integers(0, 3)) if draw(st.integers(0, 5)) == 0 else draw(st.integers(1, 2)),
          "padding": draw(st.integers(-1, 2)), "dilation": draw(st.integers(1, 2)), "groups": groups}
    return Case(f"conv{nd}d", (x, w, bias), kw)


register("conv1d", lambda lib, x, w, b, **kw: lib.F.conv1d(x, w, b, **kw), _conv(1), degree=2, family="conv")
register("conv2d", lambda lib, x, w, b, **kw: lib.F.conv2d(x, w, b, **kw), _conv(2), degree=2, family="conv")


@st.composite
def _pool(draw, name: str, nd: int):
    lead = draw(st.sampled_from([(1,), (2, 1), (1, 2)]))
    x = draw(floats(lead + tuple(draw(st.integers(0, 6)) for _ in range(nd)), layouts=("contiguous", "transpose")))
    kernel = draw(st.integers(0, 3))
    kw = {"kernel_size": kernel, "stride": draw(st.none() | st.integers(0, 2)),
          "padding": draw(st.integers(0, 2)), "ceil_mode": draw(st.booleans())}
    return Case(name, (x,), kw)


register("max_pool1d", lambda lib, x, **kw: lib.F.max_pool1d(x, **kw), _pool("max_pool1d", 1), family="pool")
register("max_pool2d", lambda lib, x, **kw: lib.F.max_pool2d(x, **kw), _pool("max_pool2d", 2), family="pool")
register("avg_pool2d", lambda lib, x, **kw: lib.F.avg_pool2d(x, **kw), _pool("avg_pool2d", 2), family="pool")


@st.composite
def _adaptive(draw):
    x = draw(floats((1, 2, draw(st.integers(0, 5)), draw(st.integers(0, 5)))))
    return Case("adaptive_avg_pool2d", (x, (draw(st.integers(-1, 4)), draw(st.integers(1, 4)))))


register("adaptive_avg_pool2d", lambda lib, x, s: lib.F.adaptive_avg_pool2d(x, s), _adaptive(), family="pool")

for _name in ("softmax", "log_softmax"):
    register(_name, lambda lib, x, d, _n=_name: getattr(lib.F, _n)(x, dim=d), _one_dim(_name), family="softmax")


@st.composite
def _class_loss(draw, name: str):
    n, c = draw(sizes), draw(nonzero_sizes)
    x = draw(tensors((n, c), dtypes=("float32", "float64", "float32", "int64")))
    target = draw(indices((n + (1 if draw(st.integers(0, 7)) == 0 else 0),), c, negative=False))
    kw = {"reduction": draw(st.sampled_from(["mean", "sum", "none"]))}
    if draw(st.booleans()):
        kw["ignore_index"] = draw(st.sampled_from([-100, 0, 1]))
    if name == "cross_entropy" and draw(st.booleans()):
        kw["label_smoothing"] = draw(st.sampled_from([0.0, 0.1, 1.5]))
    return Case(name, (x, target), kw)


register("cross_entropy", lambda lib, x, t, **kw: lib.F.cross_entropy(x, t, **kw), _class_loss("cross_entropy"),
         family="loss")
register("nll_loss", lambda lib, x, t, **kw: lib.F.nll_loss(x, t, **kw), _class_loss("nll_loss"), family="loss")


@st.composite
def _pair_loss(draw, name: str, lo=-10, hi=10):
    sa, sb = draw(broadcast_pair(3))
    sb = sa if draw(st.integers(0, 3)) else sb
    return Case(name, (draw(floats(sa, lo=lo, hi=hi)), draw(floats(sb, lo=lo, hi=hi))),
                {"reduction": draw(st.sampled_from(["mean", "sum", "none"]))})


register("mse_loss", lambda lib, a, b, **kw: lib.F.mse_loss(a, b, **kw), _pair_loss("mse_loss"), degree=2,
         family="loss")
register("binary_cross_entropy", lambda lib, a, b, **kw: lib.F.binary_cross_entropy(a, b, **kw),
         _pair_loss("binary_cross_entropy", lo=-0.1, hi=1.0), family="loss")


@st.composite
def _embedding(draw):
    rows = draw(sizes)
    weight = draw(floats((rows, draw(nonzero_sizes)), layouts=("contiguous", "transpose")))
    idx = draw(indices(shapes(max_dims=2), rows, negative=False))
    kw = {"padding_idx": draw(st.none() | st.integers(-rows - 1, rows))} if draw(st.booleans()) else {}
    return Case("embedding", (idx, weight), kw)


register("embedding", lambda lib, i, w, **kw: lib.F.embedding(i, w, **kw), _embedding(), family="embedding")


@st.composite
def _one_hot(draw):
    classes = draw(st.integers(-1, 4))
    return Case("one_hot", (draw(indices(shapes(max_dims=2), max(classes, 1), dtypes=("int64",))), classes))


register("one_hot", lambda lib, i, c: lib.F.one_hot(i, c), _one_hot(), family="indexing")


@st.composite
def _pad(draw):
    x = draw(floats(shapes(min_dims=1, max_dims=4)))
    mode = draw(st.sampled_from(["constant", "constant", "reflect", "replicate", "circular"]))
    pad = tuple(draw(st.lists(st.integers(-2, 3), min_size=1, max_size=4)))
    return Case("pad", (x, pad), {"mode": mode})


register("pad", lambda lib, x, p, **kw: lib.F.pad(x, p, **kw), _pad(), family="view")


@st.composite
def _interpolate(draw):
    x = draw(floats((1, draw(nonzero_sizes), draw(st.integers(0, 4)), draw(st.integers(1, 4)))))
    mode = draw(st.sampled_from(["nearest", "bilinear", "linear"]))
    kw = {"mode": mode}
    if draw(st.booleans()):
        kw["size"] = (draw(st.integers(-1, 5)), draw(st.integers(1, 5)))
    else:
        kw["scale_factor"] = draw(st.sampled_from([2.0, 0.5, 1.5]))
    if mode == "bilinear":
        kw["align_corners"] = draw(st.booleans())
    return Case("interpolate", (x,), kw)


register("interpolate", lambda lib, x, **kw: lib.F.interpolate(x, **kw), _interpolate(), family="pool")


@st.composite
def _layer_norm(draw):
    x = draw(floats(shapes(min_dims=1, max_dims=3)))
    k = draw(st.integers(1, x.array.ndim + 1))
    normalized = x.array.shape[-k:] if k <= x.array.ndim else (3,) + x.array.shape
    affine = draw(st.booleans())
    w = draw(floats(normalized, special=False)) if affine else None
    b = draw(floats(normalized, special=False)) if affine else None
    return Case("layer_norm", (x, tuple(normalized), w, b))


register("layer_norm", lambda lib, x, s, w, b: lib.F.layer_norm(x, s, w, b), _layer_norm(), family="normalization")


@st.composite
def _batch_norm(draw):
    c = draw(nonzero_sizes)
    x = draw(floats((draw(st.integers(1, 3)), c) + tuple(draw(shapes(max_dims=2, nonempty=True)))))
    stats_c = c if draw(st.integers(0, 5)) else c + 1
    # Not expanded: torch updates a zero-stride running buffer from racing threads (values vary run to run).
    dense = ("contiguous", "transpose", "step2", "reversed")
    mean = draw(floats((stats_c,), special=False, layouts=dense))
    var = draw(floats((stats_c,), special=False, lo=0.1, hi=3, layouts=dense))
    return Case("batch_norm", (x, mean, var), {"training": draw(st.booleans())})


register("batch_norm", lambda lib, x, m, v, **kw: lib.F.batch_norm(x, m, v, **kw), _batch_norm(),
         family="normalization")


@st.composite
def _group_norm(draw):
    groups = draw(st.integers(1, 3))
    c = groups * draw(st.integers(1, 2)) + (1 if draw(st.integers(0, 5)) == 0 else 0)
    x = draw(floats((draw(st.integers(1, 2)), c, draw(nonzero_sizes))))
    return Case("group_norm", (x, groups))


register("group_norm", lambda lib, x, g: lib.F.group_norm(x, g), _group_norm(), family="normalization")

# ---- creation -------------------------------------------------------------------------------------------------------

_size_lists = st.lists(st.integers(-1, 4), max_size=3).map(tuple)
register("zeros", lambda lib, s: lib.t.zeros(s), st.builds(lambda s: Case("zeros", (s,)), _size_lists),
         family="creation")
register("full", lambda lib, s, v: lib.t.full(s, v),
         st.builds(lambda s, v: Case("full", (s, v)), _size_lists, scalars), family="creation")
register("eye", lambda lib, n, m: lib.t.eye(n, m),
         st.builds(lambda n, m: Case("eye", (n, m)), st.integers(-1, 4), st.integers(-1, 4)), family="creation")
register("arange", lambda lib, a, b, s: lib.t.arange(a, b, s),
         st.builds(lambda a, b, s: Case("arange", (a, b, s)), st.sampled_from([0, -2, 1.5, 3]),
                   st.sampled_from([5, -3, 2.25, 0]), st.sampled_from([1, 2, -1, 0, 0.5])), family="creation")
register("linspace", lambda lib, a, b, n: lib.t.linspace(a, b, n),
         st.builds(lambda a, b, n: Case("linspace", (a, b, n)), st.sampled_from([0.0, -1.0, 2]),
                   st.sampled_from([1.0, 10]), st.integers(-1, 5)), family="creation")
register("tril_indices", lambda lib, r, c, o: lib.t.tril_indices(r, c, o),
         st.builds(lambda r, c, o: Case("tril_indices", (r, c, o)), st.integers(0, 4), st.integers(0, 4),
                   st.integers(-3, 3)), family="creation")

# ---- optimizer updates ----------------------------------------------------------------------------------------------


def _step(optimizer: str, **hyper):
    def call(lib, p, g):
        param = p.clone().requires_grad_(True)
        param.grad = g.clone()
        getattr(lib.optim, optimizer)([param], **hyper).step()
        return param.detach()
    return call


@st.composite
def _param_and_grad(draw, name: str):
    shape = draw(shapes(max_dims=2))
    return Case(name, (draw(floats(shape, layouts=("contiguous",))), draw(floats(shape, layouts=("contiguous",)))))


register("sgd_step", _step("SGD", lr=0.1, momentum=0.9, weight_decay=0.01), _param_and_grad("sgd_step"),
         family="optim")
register("adam_step", _step("Adam", lr=0.01), _param_and_grad("adam_step"), family="optim")

# the boundscheck pass: a few ops that between them reach every CPU kernel family
BOUNDSCHECK_OPS = ("add", "exp", "sum", "amax", "cumsum", "gather", "scatter_add", "index_select", "take",
                   "getitem", "sort", "topk", "conv2d", "max_pool2d", "avg_pool2d", "softmax", "cross_entropy",
                   "embedding", "layer_norm", "batch_norm", "adam_step", "sgd_step", "matmul", "masked_select")
