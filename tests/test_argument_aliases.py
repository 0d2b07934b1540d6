"""NumPy's argument names (``axis``, ``keepdims``, ``x``/``a``/``x1``, ``x2``) where torch's argument parser takes
them: every built-in torch function and Tensor method with a ``dim``/``keepdim``/``input``/``other`` parameter,
none of those torch writes in Python. Checked against torch (skipped cleanly without it)."""
from __future__ import annotations

import inspect
import types

import numpy as np
import pytest

import ember
from ember.tensor.arguments import tensor_args as guarded

X = np.arange(12.0, dtype=np.float32).reshape(3, 4)

CALLS = [
    lambda t: t.tensor(X).sum(axis=1),
    lambda t: t.tensor(X).sum(axis=1, keepdims=True),
    lambda t: t.sum(t.tensor(X), axis=0),
    lambda t: t.sum(t.tensor(X), axis=None),
    lambda t: t.mean(t.tensor(X), axis=0, keepdims=True),
    lambda t: t.max(t.tensor(X), axis=0),
    lambda t: t.tensor(X).max(axis=1, keepdims=True),
    lambda t: t.tensor(X).std(axis=0, keepdims=True),
    lambda t: t.tensor(X).argmax(axis=1),
    lambda t: t.tensor(X).cumsum(axis=1),
    lambda t: t.tensor(X).softmax(axis=1),
    lambda t: t.log_softmax(t.tensor(X), axis=0),
    lambda t: t.tensor(X)[None].squeeze(axis=0),
    lambda t: t.unsqueeze(t.tensor(X), axis=0),
    lambda t: t.cat([t.tensor(X), t.tensor(X)], axis=1),
    lambda t: t.stack([t.tensor(X), t.tensor(X)], axis=1),
    lambda t: t.tensor(X).sort(axis=1, descending=True),
    lambda t: t.tensor(X).gather(axis=1, index=t.tensor([[0], [1], [2]])),
    lambda t: t.tensor(X).index_select(axis=0, index=t.tensor([2, 0])),
    lambda t: t.tensor(X).unbind(axis=1),
    lambda t: t.tensor(X).chunk(2, axis=1),
    lambda t: t.tensor(X).tensor_split(2, axis=1),
    lambda t: t.logsumexp(t.tensor(X), axis=1),
    lambda t: t.nansum(t.tensor(X), axis=0),
    lambda t: t.diff(t.tensor(X), axis=1),
    lambda t: t.linalg.vector_norm(t.tensor(X), axis=1, keepdims=True),
    lambda t: t.linalg.norm(t.tensor(X), axis=1),
    lambda t: t.nn.functional.cosine_similarity(t.tensor(X), t.tensor(X) + 1, axis=1),
    lambda t: t.sum(x=t.tensor(X)),
    lambda t: t.sum(a=t.tensor(X), axis=1),
    lambda t: t.sigmoid(x=t.tensor(X)),
    lambda t: t.add(x1=t.tensor(X), x2=t.tensor(X)),
    lambda t: t.gt(t.tensor(X), x2=t.tensor(X).t().reshape(3, 4)),
    lambda t: t.tensor(X).add(x2=t.tensor(X)),
    lambda t: t.where(t.tensor(X) > 3, t.tensor(X), x2=t.zeros(3, 4)),
]


def _values(result) -> list[np.ndarray]:
    items = result if isinstance(result, tuple) else (result,)
    return [np.asarray(r.detach().numpy() if hasattr(r, "detach") else r, dtype=np.float64) for r in items]


@pytest.mark.parametrize("call", CALLS)
def test_numpy_names_give_torch_results(torch_ref, call):
    got, want = _values(call(ember)), _values(call(torch_ref))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda t: t.tensor(X).sum(dim=0, axis=1),                       # both spellings: the alias is unexpected
    lambda t: t.sum(t.tensor(X), axis=1, dims=0),                   # a name neither has
    lambda t: t.sum(x=t.tensor(X), a=t.tensor(X)),                  # two aliases of one parameter
    lambda t: t.tensor(X).split(1, axis=0),                         # written in Python in torch: no aliases
    lambda t: t.tensor(X).norm(axis=1),
    lambda t: t.norm(t.tensor(X), axis=1),
    lambda t: t.unique(t.tensor(X), axis=0),
    lambda t: t.flip(t.tensor(X), axis=(0,)),                        # ``dims`` has no NumPy name
])
def test_what_torch_refuses_ember_refuses(torch_ref, call):
    with pytest.raises(TypeError):
        call(torch_ref)
    with pytest.raises(TypeError):
        call(ember)


_BUILT_IN = (types.BuiltinFunctionType, types.BuiltinMethodType, type(str.join), type(str.__add__))


def _takes(fn, alias: str) -> bool:
    """Whether ``fn`` takes ``alias`` (called with it alone: the binding fails before anything runs)."""
    try:
        fn(**{alias: object()})
    except TypeError as e:
        return f"'{alias}'" not in str(e)
    except Exception:  # noqa: BLE001 - any other complaint is about the value, so the name was taken
        return True
    return True


# ember.unflatten and Tensor.unflatten are one function: torch's function is built in, its method is not
SUPERSET = {"Tensor.unflatten"}


@pytest.mark.parametrize("parameter, alias", [("dim", "axis"), ("keepdim", "keepdims"), ("input", "x"),
                                              ("input", "x1"), ("other", "x2")])
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_every_builtin_torch_function_takes_the_numpy_names_and_no_python_one(torch_ref, parameter, alias):
    differ = []
    spaces = [("", torch_ref, ember), ("Tensor.", torch_ref.Tensor, ember.Tensor),
              ("linalg.", torch_ref.linalg, ember.linalg)]
    checked = 0
    for prefix, torch_space, ember_space in spaces:
        for name in dir(ember_space):
            fn = getattr(ember_space, name)
            if name.startswith("_") or not hasattr(torch_space, name) or not callable(fn) or isinstance(fn, type):
                continue
            try:
                params = list(inspect.signature(fn).parameters)
            except (TypeError, ValueError):
                continue
            if parameter not in params or (prefix == "Tensor." and params[0] == parameter):
                continue
            checked += 1
            if _takes(fn, alias) != isinstance(getattr(torch_space, name), _BUILT_IN) \
                    and prefix + name not in SUPERSET:
                differ.append(prefix + name)
    assert checked > 20 and not differ, differ


def test_the_guard_leaves_plain_functions_alone_and_costs_a_call_only_on_failure():
    def plain(n: int, step: int = 1) -> int:
        return n

    assert guarded(plain) is plain
    calls = []

    def reduce_like(input: ember.Tensor, dim: int = 0, keepdim: bool = False) -> tuple:
        calls.append(dim)
        return dim, keepdim

    wrapped = guarded(reduce_like)
    assert wrapped(ember.ones(1), 1) == (1, False) and calls == [1]  # one call when the names are torch's own
    assert wrapped(ember.ones(1), axis=2, keepdims=True) == (2, True) and calls == [1, 2]
    with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
        wrapped(ember.ones(1), dim=0, axis=1)
    assert calls == [1, 2]  # a refused call runs nothing
