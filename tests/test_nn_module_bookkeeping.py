"""nn.Module bookkeeping against torch: registration order after re-assignment, kind changes and deletion, the
errors of each, the dotted-path getters/setters, traversal with duplicates, extra state and pickling.

Each scenario is run on torch and on ember with the same script; the recorded traces (table contents in order,
exceptions by type and message) must be equal.
"""
from __future__ import annotations

import pickle
import re

import pytest

import ember
import ember.nn as enn


def _tables(m) -> tuple:
    return (list(m._parameters), list(m._buffers), list(m._modules), sorted(m._non_persistent_buffers_set))


def _attempt(trace: list, action) -> None:
    """Run ``action``; record its exception (type and message, module paths of type names dropped) or 'ok'."""
    try:
        action()
        trace.append("ok")
    except Exception as error:  # noqa: BLE001 - the trace compares whatever each library raises
        message = re.sub(r"'(?:torch|ember)\.[\w.]*\.(\w+)'", r"'\1'", str(error))
        trace.append((type(error).__name__, message))


def _replacements(lib, trace: list) -> None:
    nn = lib.nn
    m = nn.Module()
    m.a, m.b, m.c = nn.Linear(1, 1), nn.ReLU(), nn.Linear(1, 1)
    m.a = nn.Tanh()  # a replaced submodule keeps its place
    m.w = nn.Parameter(lib.zeros(1))
    m.x = nn.Parameter(lib.zeros(1))
    m.w = nn.Parameter(lib.ones(1))
    m.register_buffer("q", lib.zeros(1))
    m.register_buffer("r", lib.zeros(1), persistent=False)
    m.q, m.r = lib.ones(1), lib.ones(1)  # a re-assigned buffer keeps its place and its persistence
    trace.append(_tables(m))
    _attempt(trace, lambda: setattr(m, "a", nn.Parameter(lib.zeros(1))))  # module -> parameter: moves
    _attempt(trace, lambda: setattr(m, "q", nn.ReLU()))  # buffer -> module
    trace.append(_tables(m))
    m.r = None
    trace.append(_tables(m))
    m.plain = 3
    m.plain = nn.ReLU()  # a plain attribute becomes a submodule
    m.plain2 = "x"
    m.plain2 = nn.Parameter(lib.zeros(1))
    trace.append(_tables(m) + ("plain" in m.__dict__, "plain2" in m.__dict__))


def _refused_assignments(lib, trace: list) -> None:
    nn = lib.nn
    m = nn.Module()
    m.sub = nn.ReLU()
    m.w = nn.Parameter(lib.zeros(1))
    m.register_buffer("buf", lib.zeros(1))
    m.plain = 3
    for name, value in (("w", nn.ReLU()), ("sub", nn.Buffer(lib.zeros(1))), ("w", nn.Buffer(lib.zeros(1))),
                        ("plain", nn.Buffer(lib.zeros(1))), ("sub", 5), ("w", 5), ("buf", 5),
                        ("w", lib.zeros(1))):
        _attempt(trace, lambda: setattr(m, name, value))
    trace.append(_tables(m))


def _register_errors(lib, trace: list) -> None:
    nn = lib.nn
    m = nn.Linear(2, 2)
    m.register_buffer("nb", lib.zeros(1), persistent=False)
    for action in (lambda: m.register_buffer("weight", lib.zeros(1)), lambda: m.register_parameter("nb", None),
                   lambda: m.add_module("bias", nn.ReLU()), lambda: m.add_module("in_features", nn.ReLU()),
                   lambda: m.add_module("a.b", nn.ReLU()), lambda: m.add_module(3, nn.ReLU()),
                   lambda: m.add_module("", nn.ReLU()), lambda: m.add_module("k", 3),
                   lambda: m.register_buffer(3, None), lambda: m.register_buffer("train", None),
                   lambda: m.register_buffer("bad", 3), lambda: m.register_parameter("a.b", None),
                   lambda: m.register_parameter("", None), lambda: m.register_parameter("p", lib.zeros(1)),
                   lambda: m.register_module("child", None), lambda: delattr(m, "nothere")):
        _attempt(trace, action)
    trace.append(_tables(m))


def _deletion_and_reregistration(lib, trace: list) -> None:
    nn = lib.nn
    m = nn.Module()
    m.a, m.b, m.c = nn.ReLU(), nn.Tanh(), nn.Sigmoid()
    m.p, m.p2 = nn.Parameter(lib.zeros(1)), nn.Parameter(lib.zeros(1))
    m.register_buffer("q", lib.zeros(1), persistent=False)
    m.register_buffer("q2", lib.zeros(1))
    del m.a, m.p, m.q
    trace.append(_tables(m))
    m.a = nn.ReLU()
    m.p = nn.Parameter(lib.zeros(1))
    m.register_buffer("q", lib.zeros(1))  # persistent again
    trace.append(_tables(m))
    trace.append(list(m.state_dict()))
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    seq[0] = nn.Linear(2, 3)
    setattr(seq, "1", nn.Tanh())
    trace.append([type(c).__name__ for c in nn.Sequential(*seq.children())])


def _paths(lib, trace: list) -> None:
    nn = lib.nn
    m = nn.Module()
    m.s = nn.Sequential(nn.Linear(1, 1), nn.ReLU())
    m.register_buffer("q", lib.zeros(1))
    m.register_module("none", None)
    m.plain = 3
    for action in (lambda: m.get_submodule("s.5"), lambda: m.get_submodule("s.0.weight"),
                   lambda: m.get_submodule("plain"), lambda: m.get_parameter("s.0.nope"),
                   lambda: m.get_parameter("plain"), lambda: m.get_parameter("q"),
                   lambda: m.get_buffer("s.0.weight"), lambda: m.get_buffer("nope"),
                   lambda: m.get_buffer("none.x"), lambda: m.set_submodule("", nn.ReLU()),
                   lambda: m.set_submodule("s.0", 3), lambda: m.set_submodule("s.7", nn.ReLU(), strict=True),
                   lambda: m.set_submodule("s.7", nn.ReLU()), lambda: m.set_submodule("plain", nn.ReLU()),
                   lambda: m.set_submodule("q", nn.ReLU()), lambda: m.set_submodule("nope.x", nn.ReLU()),
                   lambda: m.set_submodule("s.0", nn.Tanh(), strict=True),
                   lambda: m.set_submodule("none", nn.Tanh(), strict=True), lambda: m.set_submodule("s", nn.Tanh())):
        _attempt(trace, action)
    trace.append(_tables(m))
    trace.append([m.get_submodule("") is m])


def _traversal(lib, trace: list) -> None:
    nn = lib.nn
    shared = nn.Linear(2, 2)
    m = nn.Module()
    m.first, m.again, m.bn = shared, shared, nn.BatchNorm1d(2)
    m.tied = nn.Linear(2, 2)
    m.tied.weight = shared.weight
    m.bn.register_buffer("alias", m.bn.running_mean)
    for remove_duplicate in (True, False):
        trace.append([name for name, _ in m.named_modules(remove_duplicate=remove_duplicate)])
        trace.append([name for name, _ in m.named_modules(prefix="root", remove_duplicate=remove_duplicate)])
        trace.append([name for name, _ in m.named_parameters(remove_duplicate=remove_duplicate)])
        trace.append([name for name, _ in m.named_parameters(prefix="x", recurse=False,
                                                                 remove_duplicate=remove_duplicate)])
        trace.append([name for name, _ in m.named_buffers(remove_duplicate=remove_duplicate)])
    memo = {m.bn}
    trace.append([name for name, _ in m.named_modules(memo=memo)])
    trace.append([name for name, _ in m.named_children()])
    trace.append(list(m.state_dict()))


SCENARIOS = [_replacements, _refused_assignments, _register_errors, _deletion_and_reregistration, _paths,
             _traversal]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__.strip("_"))
def test_bookkeeping_matches_torch(scenario, torch_ref):
    expected, got = [], []
    scenario(torch_ref, expected)
    scenario(ember, got)
    assert got == expected


def test_replacing_the_first_layer_keeps_the_order_of_children():
    model = enn.Sequential(enn.Linear(2, 3), enn.ReLU(), enn.Linear(3, 1))
    model[0] = enn.Linear(2, 3)
    rebuilt = enn.Sequential(*model.children())
    assert rebuilt(ember.ones(4, 2)).shape == (4, 1)
    assert [type(c) for c in rebuilt] == [enn.Linear, enn.ReLU, enn.Linear]


def _with_extra_state(lib):
    """A module class of ``lib`` that keeps a counter as extra state."""

    class WithExtra(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = lib.nn.Linear(1, 1)
            self.count = 0

        def get_extra_state(self) -> dict:
            return {"count": self.count}

        def set_extra_state(self, state: dict) -> None:
            self.count = state["count"]

    return WithExtra


def _extra_state_round_trip(lib, trace: list) -> None:
    with_extra = _with_extra_state(lib)
    outer = lib.nn.Module()
    outer.inner = with_extra()
    outer.inner.count = 7
    state = outer.state_dict()
    trace.append(list(state))
    fresh = lib.nn.Module()
    fresh.inner = with_extra()
    fresh.load_state_dict(state)
    trace.append(fresh.inner.count)
    del state["inner._extra_state"]
    _attempt(trace, lambda: fresh.load_state_dict(state))
    trace.append(tuple(fresh.load_state_dict(state, strict=False)))


def test_extra_state_is_saved_and_loaded_as_torch(torch_ref):
    expected, got = [], []
    _extra_state_round_trip(torch_ref, expected)
    _extra_state_round_trip(ember, got)
    assert got == expected
    assert got[0] == ["inner._extra_state", "inner.lin.weight", "inner.lin.bias"]


def test_extra_state_key_without_set_extra_state_is_unexpected_first(torch_ref):
    def unexpected(lib) -> list:
        m = lib.nn.Linear(1, 1)
        state = {**m.state_dict(), "zzz": lib.zeros(1), "_extra_state": 1}
        return m.load_state_dict(state, strict=False).unexpected_keys

    assert unexpected(ember) == unexpected(torch_ref) == ["_extra_state", "zzz"]


def test_pickled_module_keeps_order_persistence_and_values():
    m = enn.Module()
    m.b, m.a = enn.Linear(2, 2), enn.ReLU()
    m.register_buffer("np", ember.arange(3.0), persistent=False)
    m.b = enn.Linear(2, 2)
    copy = pickle.loads(pickle.dumps(m))
    assert list(copy._modules) == ["b", "a"]
    assert copy._non_persistent_buffers_set == {"np"}
    assert copy.np.tolist() == [0.0, 1.0, 2.0]
    assert copy.b.weight.tolist() == m.b.weight.tolist()


def test_setstate_of_an_old_pickle_gives_the_missing_tables():
    m = enn.Linear(1, 1)
    state = m.__getstate__()
    for name in ("_forward_hooks_always_called", "_non_persistent_buffers_set", "_backward_pre_hooks",
                 "_load_state_dict_post_hooks"):
        del state[name]
    revived = enn.Linear.__new__(enn.Linear)
    revived.__setstate__(state)
    assert revived._non_persistent_buffers_set == set() and len(revived._backward_pre_hooks) == 0
    assert revived(ember.ones(1, 1)).shape == (1, 1)
    assert list(revived.state_dict()) == ["weight", "bias"]
