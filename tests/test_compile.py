"""ember.compile: compiled results equal eager ones (values and gradients), guards recompile, what cannot be
captured runs eagerly with a logged reason, and torch.compile's call forms."""
from __future__ import annotations

import copy
import logging
import math
import os
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.compiler import kernel_cache
from ember.compiler.graph import FusedNode


@pytest.fixture(autouse=True)
def _fresh_compiler():
    ember.compiler.reset()
    yield
    ember.compiler.reset()


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy()), rtol=rtol, atol=atol)


def entry_of(compiled, index=0):
    compiled = compiled.__dict__.get("_compiled_call", compiled)
    return compiled.entries[index]


def fused_ops(compiled, index=0):
    """The op names of each fused chain of a compiled function's graph."""
    return [node.chain.op_names for node in entry_of(compiled, index).graph.nodes if isinstance(node, FusedNode)]


def leaves_like(*shapes, dtype=ember.float32, seed=0):
    gen = np.random.default_rng(seed)
    return [ember.tensor(gen.standard_normal(s), dtype=dtype, requires_grad=True) for s in shapes]


def assert_same_step(fn, compiled, *inputs):
    """``compiled(*inputs)`` gives ``fn(*inputs)``'s values and input gradients, over two calls (the capture and a
    replay)."""
    for _ in range(2):
        got = compiled(*inputs)
        got_grads = ember.autograd.grad(got.sum(), inputs, allow_unused=True)
        want = fn(*inputs)
        want_grads = ember.autograd.grad(want.sum(), inputs, allow_unused=True)
        close(got, want)
        for g, w in zip(got_grads, want_grads):
            assert (g is None) == (w is None)
            if g is not None:
                close(g, w)


def gelu_tanh(x):
    return 0.5 * x * (1 + ember.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


# ------------------------------------------------------------------------------------------ elementwise chains
def test_gelu_chain_is_one_kernel_and_matches_eager():
    (x,) = leaves_like((64, 33))
    compiled = ember.compile(gelu_tanh)
    assert_same_step(gelu_tanh, compiled, x)
    assert fused_ops(compiled) == [["mul", "pow", "mul", "add", "mul", "tanh", "add", "mul"]]
    graph = entry_of(compiled).graph
    assert len(graph.nodes) == 1 and "fused_0(x)" in str(graph)


@pytest.mark.parametrize("fn", [
    lambda a, b: (a * b + a.exp()).sin() / (b * b + 1),
    lambda a, b: ember.maximum(a, b) - ember.minimum(a, 0.5 * b) + (a > b) * a.sigmoid(),
    lambda a, b: (a.abs() + 1).log() * b.cos() - a.sqrt().nan_to_num() ** 2,
    lambda a, b: ember.atan2(a, b + 3) + (a - b).relu() * a.rsqrt().clamp_max(10.0).nan_to_num(0.0),
    lambda a, b: (a * 2 + 1) * (b > 0),  # b reaches the result through a comparison only: no gradient for it
])
def test_chains_of_declared_ops(fn):
    a, b = leaves_like((5, 7), (5, 7))
    compiled = ember.compile(fn)
    assert_same_step(fn, compiled, a, b)


def test_broadcasting_scalars_and_dtypes():
    a = ember.randn(4, 6, dtype=ember.float64, requires_grad=True)
    bias = ember.randn(6, requires_grad=True)  # float32 row, broadcast over rows
    scale = ember.tensor(1.5, requires_grad=True)  # 0-d
    col = ember.randn(4, 1, dtype=ember.float64, requires_grad=True)
    mask = ember.randn(4, 6) > 0

    def fn(a, bias, scale, col, mask):
        return ((a * scale + bias) * mask - col).tanh() * 2

    compiled = ember.compile(fn)
    for _ in range(2):
        inputs = (a, bias, scale, col)
        got, want = compiled(*inputs, mask), fn(*inputs, mask)
        assert got.dtype == want.dtype == ember.float64
        close(got, want, rtol=1e-12, atol=1e-12)
        for g, w in zip(ember.autograd.grad(got.sum(), inputs), ember.autograd.grad(want.sum(), inputs)):
            assert g.dtype == w.dtype and g.shape == w.shape
            tol = 1e-10 if g.dtype == ember.float64 else 1e-6  # float32 sums may add in another order
            close(g, w, rtol=tol, atol=tol)
    assert fused_ops(compiled)


def test_strided_and_transposed_inputs():
    base = ember.randn(6, 10, requires_grad=True)

    def fn(x):
        t = x.t()
        return (t[1:] * 2 + t[:-1].exp()) * x[:, ::2].sum()

    compiled = ember.compile(fn)
    assert_same_step(fn, compiled, base)


def test_large_chain_runs_the_parallel_kernel():
    x = ember.randn(300_000, requires_grad=True)
    compiled = ember.compile(gelu_tanh)
    assert_same_step(gelu_tanh, compiled, x)


def test_row_operand_gradients_are_summed_by_the_kernel():
    ember.manual_seed(5)
    layer = nn.Linear(16, 1024)  # 128 x 1024 outputs: the parallel kernel splits the columns
    x = ember.randn(128, 16)

    def fn(x):
        return F.silu(layer(x)) * 2

    compiled = ember.compile(fn)
    for _ in range(2):
        got, want = compiled(x), fn(x)
        close(got, want)
        (gb,) = ember.autograd.grad(got.sum(), [layer.bias])
        (wb,) = ember.autograd.grad(want.sum(), [layer.bias])
        close(gb, wb, rtol=1e-5, atol=1e-4)
    assert fused_ops(compiled) == [["add", "silu", "mul"]]


def test_float64_gradcheck_and_gradgradcheck_through_a_fused_chain():
    def fn(a, b):
        return (a * b).sin() * a.exp() + b / (a * a + 1)

    compiled = ember.compile(fn)
    a, b = leaves_like((3, 4), (3, 4), dtype=ember.float64)
    compiled(a, b)  # the capture; the checks below replay
    assert fused_ops(compiled)
    assert gradcheck(compiled, (a, b))
    assert gradgradcheck(compiled, (a, b))


def test_no_grad_calls_record_nothing():
    (x,) = leaves_like((8, 8))
    compiled = ember.compile(gelu_tanh)
    with ember.no_grad():
        for _ in range(2):
            out = compiled(x)
            assert out.grad_fn is None and not out.requires_grad
    close(out, gelu_tanh(x))


# ------------------------------------------------------------------------------------------------ the blocks
class GeluMLP(nn.Module):
    """A transformer block's MLP: LayerNorm, Linear, GELU, Linear, residual."""

    def __init__(self, width=16, hidden=64):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1, self.fc2 = nn.Linear(width, hidden), nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x)), approximate="tanh"))


class NormResidual(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.norm = nn.LayerNorm(width)

    def forward(self, x, y):
        return self.norm(x + y) * 0.5 + x


def _check_module(module, *inputs):
    compiled = ember.compile(module)
    params = list(module.parameters())
    for _ in range(2):
        got, want = compiled(*inputs), module(*inputs)
        close(got, want)
        wrt = [t for t in (*inputs, *params) if t.requires_grad]
        for g, w in zip(ember.autograd.grad(got.square().sum(), wrt), ember.autograd.grad(want.square().sum(), wrt)):
            close(g, w, rtol=1e-4, atol=1e-5)
    return compiled


def test_gelu_mlp_block():
    ember.manual_seed(0)
    compiled = _check_module(GeluMLP(), ember.randn(4, 5, 16, requires_grad=True))
    # the biases join the chains: bias + gelu, bias + residual
    assert fused_ops(compiled) == [["add", "gelu_tanh"], ["add", "add"]]


def test_layernorm_and_residual():
    ember.manual_seed(1)
    x, y = ember.randn(8, 32, requires_grad=True), ember.randn(8, 32)
    compiled = _check_module(NormResidual(), x, y)
    assert ["mul", "add"] in fused_ops(compiled)


def lstm_cell(x, h, c, w, u, b):
    gates = x @ w + h @ u + b
    i, f, g, o = gates.chunk(4, 1)
    c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
    return ember.sigmoid(o) * ember.tanh(c), c


def test_lstm_cell_step():
    ember.manual_seed(2)
    x, h, c = ember.randn(6, 8), ember.randn(6, 16, requires_grad=True), ember.randn(6, 16, requires_grad=True)
    w, u, b = (ember.randn(*s, requires_grad=True) for s in ((8, 64), (16, 64), (64,)))
    compiled = ember.compile(lstm_cell)
    inputs = (h, c, w, u, b)
    for _ in range(2):
        (gh, gc), (wh, wc) = compiled(x, *inputs), lstm_cell(x, *inputs)
        close(gh, wh)
        close(gc, wc)
        for g, w_ in zip(ember.autograd.grad((gh * gc).sum(), inputs), ember.autograd.grad((wh * wc).sum(), inputs)):
            close(g, w_, rtol=1e-4, atol=1e-5)
    gates = max(fused_ops(compiled), key=len)
    assert gates.count("sigmoid") == 3 and gates.count("tanh") == 2  # the whole cell update is one kernel
    cell = nn.LSTMCell(8, 16)
    compiled_cell = ember.compile(cell)
    for _ in range(2):
        for got, want in zip(compiled_cell(x, (h, c)), cell(x, (h, c))):
            close(got, want)


def test_mlp_training_step_matches_eager():
    ember.manual_seed(3)
    eager = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 10))
    twin = copy.deepcopy(eager)
    compiled = ember.compile(twin)
    x, y = ember.randn(64, 20), ember.randint(0, 10, (64,))
    losses = {}
    for model, params in ((eager, eager.parameters()), (compiled, twin.parameters())):
        opt = ember.optim.SGD(params, lr=0.1, momentum=0.9)
        losses[model] = []
        for _ in range(5):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses[model].append(loss.item())
    np.testing.assert_allclose(losses[compiled], losses[eager], rtol=1e-6)
    assert losses[eager][-1] < losses[eager][0]
    for p, q in zip(eager.parameters(), twin.parameters()):
        close(p, q)
    assert len(entry_of(compiled).graph.fused) == 2  # bias + relu, bias + tanh


def test_dropout_is_replayed_with_the_same_draws():
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.ReLU())
    compiled = ember.compile(model)
    x = ember.randn(16, 8)
    for seed in (0, 1, 2):
        ember.manual_seed(seed)
        got = compiled(x)
        ember.manual_seed(seed)
        close(got, model(x))
    assert entry_of(compiled).run is not None and any(n.random for n in entry_of(compiled).graph.nodes)


# ----------------------------------------------------------------------------------------------------- guards
def test_shape_change_recompiles_unless_dynamic():
    calls = []
    compiled = ember.compile(lambda x: x * 2 + 1, dynamic=False)
    for n in (3, 4, 3):
        calls.append(compiled(ember.ones(n)))
    assert [len(c) for c in calls] == [3, 4, 3]
    assert len(compiled.entries) == 2


def test_dtype_requires_grad_and_grad_mode_changes_recompile(caplog):
    compiled = ember.compile(lambda x: (x * 3).exp())
    x = ember.randn(5)
    compiled(x)
    with caplog.at_level(logging.INFO, logger="ember.compiler"):
        out64 = compiled(x.double())
        xg = x.clone().requires_grad_()
        outg = compiled(xg)
        with ember.no_grad():
            outng = compiled(xg)
    assert out64.dtype == ember.float64 and outg.requires_grad and not outng.requires_grad
    assert len(compiled.entries) == 4
    text = caplog.text
    assert "dtype mismatch: expected float32, actual float64" in text
    assert "requires_grad mismatch" in text and "grad mode: expected True, actual False" in text
    outg.sum().backward()
    close(xg.grad, (3 * (xg * 3).exp()))


def test_module_attribute_and_parameter_changes_recompile():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.scale = 2.0

        def forward(self, x):
            return self.lin(x).relu() * self.scale

    model = Scaled()
    compiled = ember.compile(model)
    x = ember.randn(3, 4)
    close(compiled(x), model(x))
    model.scale = 3.0
    close(compiled(x), model(x))
    model.lin.weight = nn.Parameter(ember.randn(4, 4))
    close(compiled(x), model(x))
    model.eval()
    close(compiled(x), model(x))
    assert len(compiled._compiled_call.entries) == 4


def test_global_variables_are_guarded():
    namespace = {"ember": ember, "factor": 2.0}
    exec("def fn(x):\n    return x * factor + 1", namespace)
    compiled = ember.compile(namespace["fn"])
    x = ember.ones(3)
    assert compiled(x).tolist() == [3.0] * 3
    namespace["factor"] = 5.0
    assert compiled(x).tolist() == [6.0] * 3


def test_globals_of_called_functions_are_guarded():
    namespace = {"ember": ember, "factor": 2.0}
    exec("def helper(x):\n    return x * factor\n\ndef fn(x):\n    return helper(x) + 1", namespace)
    compiled = ember.compile(namespace["fn"])
    x = ember.ones(3)
    assert compiled(x).tolist() == [3.0] * 3
    assert compiled(x).tolist() == [3.0] * 3 and len(compiled.entries) == 1
    namespace["factor"] = 5.0
    assert compiled(x).tolist() == [6.0] * 3


def test_the_same_tensor_twice_is_guarded():
    compiled = ember.compile(lambda a, b: a * 2 + b)
    x, y = ember.ones(3), ember.full((3,), 5.0)
    assert compiled(x, x).tolist() == [3.0] * 3
    assert compiled(x, y).tolist() == [7.0] * 3


def test_recompile_limit_warns_then_runs_eagerly():
    limit = ember._dynamo.config.cache_size_limit
    ember._dynamo.config.cache_size_limit = 2
    try:
        compiled = ember.compile(lambda x: x + 1, dynamic=False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results = [compiled(ember.zeros(n)) for n in range(1, 6)]
        assert [r.tolist() for r in results] == [[1.0] * n for n in range(1, 6)]
        assert len(compiled.entries) == 2
        messages = [str(w.message) for w in caught]
        assert len(messages) == 1 and "recompile_limit (2)" in messages[0] and "size mismatch" in messages[0]
    finally:
        ember._dynamo.config.cache_size_limit = limit


def test_dynamic_shapes_do_not_count_as_recompiles():
    ember._dynamo.config.recompile_limit = 1
    try:
        compiled = ember.compile(gelu_tanh, dynamic=True)
        loaded = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for n in (10, 20, 30):
                x = ember.randn(n)
                close(compiled(x), gelu_tanh(x))
                loaded.append(kernel_cache.loaded_count())
        assert len(compiled.entries) == 3 and all(e.run is not None for e in compiled.entries)
        assert loaded[0] == loaded[1] == loaded[2]  # each shape has its graph; the chain's kernel is shared
    finally:
        ember._dynamo.config.recompile_limit = 8


def test_automatic_dynamic_counts_one_recompile_per_shape_change():
    ember._dynamo.config.recompile_limit = 2
    try:
        compiled = ember.compile(lambda x: x * 2)  # dynamic=None: a new shape costs one recompile, then none
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for n in (1, 2, 3, 4):
                compiled(ember.ones(n))
            assert not caught
            compiled(ember.ones(1, dtype=ember.float64))  # another dtype: a second group, past the limit
            assert len(caught) == 1 and "dtype mismatch" in str(caught[0].message)
    finally:
        ember._dynamo.config.recompile_limit = 8


# -------------------------------------------------------------------------------------------------- fallbacks
def _break_reasons(fn, *args):
    compiled = ember.compile(fn)
    first, second = compiled(*args), compiled(*args)
    entry = compiled.entries[0]
    assert entry.run is None
    return first, second, entry.reasons


@pytest.mark.parametrize("fn, reason", [
    (lambda x: x * 2 if x.sum().item() > 0 else x * 3, "Tensor.item reads tensor values"),
    (lambda x: x * 2 if x.sum() > 0 else x * 3, "Tensor.__bool__ reads tensor values"),
    (lambda x: x.add_(1) * 2, "changed in place outside the recorded ops"),
    (lambda x: x + ember.randn(x.shape), "made outside the recorded ops (by ember.tensor.random_ops.randn)"),
    (lambda x: x * x.isnan(), "made outside the recorded ops"),
    (lambda x: ember.sort(x).values * 2, "not on the capture list"),
])
def test_what_cannot_be_captured_runs_eagerly_with_a_reason(fn, reason, caplog):
    x = ember.randn(6)
    with caplog.at_level(logging.WARNING, logger="ember.compiler"):
        ember.manual_seed(0)
        first, second, reasons = _break_reasons(fn, x.clone())
    assert any(reason in r for r in reasons), reasons
    assert "graph break" in caplog.text and reason in caplog.text
    ember.manual_seed(0)
    if "randn" not in reason:
        close(first, fn(x.clone()))


def test_backward_inside_the_function_breaks():
    w = ember.randn(3, requires_grad=True)

    def step(x):
        loss = (w * x).sum()
        loss.backward()
        return loss

    _, _, reasons = _break_reasons(step, ember.ones(3))
    assert any("backward pass ran inside" in r for r in reasons)
    assert w.grad.tolist() == [2.0, 2.0, 2.0]  # both calls ran their backward


def test_fullgraph_raises_on_a_break():
    compiled = ember.compile(lambda x: x * x.sum().item(), fullgraph=True)
    with pytest.raises(ember.compiler.Unsupported, match="Tensor.item"):
        compiled(ember.ones(2))


def test_a_disabled_function_stays_eager_inside_compiled_code():
    seen = []

    @ember.compiler.disable
    def log_shape(t):
        seen.append(tuple(t.shape))
        return t * 10

    compiled = ember.compile(lambda x: log_shape(x + 1) - 1)
    for n in (2, 2, 2):
        assert compiled(ember.zeros(n)).tolist() == [9.0] * n
    assert seen == [(2,)] * 3 and compiled.entries[0].run is not None


def test_is_compiling_during_capture():
    seen = []

    def fn(x):
        seen.append(ember.compiler.is_compiling())
        return x + 1

    compiled = ember.compile(fn)
    compiled(ember.ones(1))
    compiled(ember.ones(1))
    assert seen == [True] and not ember.compiler.is_compiling()


# ------------------------------------------------------------------------------------------------- call forms
def test_decorator_forms_and_disable():
    @ember.compile
    def plain(x):
        return x * 2

    @ember.compile(backend="aot_eager", dynamic=False)
    def configured(x):
        return x * 3

    def raw(x):
        return x

    assert plain(ember.ones(2)).tolist() == [2.0, 2.0] and configured(ember.ones(2)).tolist() == [3.0, 3.0]
    assert configured.__name__ == "configured" and plain.__wrapped__ is not None
    assert ember.compile(raw, disable=True) is raw and ember.compile(disable=True)(raw) is raw
    model = nn.Linear(2, 2)
    assert ember.compile(model, disable=True) is model


def test_method_decorator_binds():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        @ember.compile
        def forward(self, x):
            return self.lin(x).tanh() * 2

    net = Net()
    x = ember.randn(2, 3)
    net(x)
    close(net(x), (x @ net.lin.weight.t() + net.lin.bias).tanh() * 2)


def test_optimized_module_state_dict_and_attributes():
    torch = pytest.importorskip("torch")
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    compiled = ember.compile(model)
    reference = torch.compile(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)))
    assert list(compiled.state_dict()) == list(reference.state_dict())
    assert isinstance(compiled, nn.Module) and isinstance(compiled, ember.compiler.OptimizedModule)
    assert compiled._orig_mod is model and len(compiled._orig_mod) == 3 and compiled.training
    assert [n for n, _ in compiled.named_parameters()] == [n for n, _ in reference.named_parameters()]
    assert str(compiled).startswith("OptimizedModule(\n  (_orig_mod): Sequential(")
    state = {k: v + 1 for k, v in compiled.state_dict().items()}
    compiled.load_state_dict(state)
    close(model[0].weight, state["_orig_mod.0.weight"])


def test_module_compile_in_place():
    model = GeluMLP(8, 16)
    keys = list(model.state_dict())
    assert model.compile() is None
    x = ember.randn(3, 8)
    first = model(x)
    close(model(x), first)
    assert list(model.state_dict()) == keys
    entries = model.forward.entries
    assert len(entries) == 1 and entries[0].graph.fused
    close(first, type(model).forward(model, x))


def test_deepcopy_compiles_the_copy():
    ember.manual_seed(4)
    model = GeluMLP(8, 16)
    model.compile()
    wrapped = ember.compile(GeluMLP(8, 16))
    x = ember.randn(2, 8)
    for original in (model, wrapped):
        original(x)
        twin = copy.deepcopy(original)
        for p in twin.parameters():
            p.data = p.data * 2
        close(twin(x), copy.deepcopy(twin).forward(x))
        assert not np.allclose(twin(x).detach().numpy(), original(x).detach().numpy())


def test_backend_eager_keeps_guards_without_capture():
    seen = []

    def fn(x):
        seen.append(ember.compiler.is_compiling())
        return x * 2

    compiled = ember.compile(fn, backend="eager")
    compiled(ember.ones(2))
    compiled(ember.ones(2))
    compiled(ember.ones(3))
    assert seen == [False] * 3 and [e.graph for e in compiled.entries] == [None, None]


def test_reset_forgets_every_graph():
    compiled = ember.compile(gelu_tanh)
    compiled(ember.randn(4))
    assert compiled.entries
    ember._dynamo.reset()
    assert not compiled.entries
    compiled(ember.randn(4))
    assert len(compiled.entries) == 1


def test_custom_backend_gets_the_graph():
    graphs = []

    def backend(graph, example_inputs):
        graphs.append(graph)
        return graph.forward

    compiled = ember.compile(lambda x, y: (x * y).exp(), backend=backend)
    x, y = ember.randn(3), ember.randn(3)
    compiled(x, y)
    close(compiled(x, y), (x * y).exp())
    assert len(graphs) == 1 and "fused" not in str(graphs[0])  # a custom backend gets the graph unfused


def test_argument_errors_match_torch():
    with pytest.raises(ember.compiler.InvalidBackend, match="Invalid backend: 'nope'"):
        ember.compile(gelu_tanh, backend="nope")
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        ember.compile(gelu_tanh, mode="fast")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        ember.compile(gelu_tanh, mode="default", options={"max_fusion_size": 4})
    with pytest.raises(RuntimeError, match="Unexpected optimization option nope"):
        ember.compile(gelu_tanh, options={"nope": 1})
    assert ember.compiler.list_backends() == ["inductor"]
    assert ember._dynamo.list_backends(exclude_tags=()) == ["aot_eager", "eager", "inductor"]


def test_max_fusion_size_splits_chains():
    compiled = ember.compile(gelu_tanh, options={"max_fusion_size": 3})
    x = ember.randn(9)
    close(compiled(x), gelu_tanh(x))
    assert all(len(ops) <= 3 for ops in fused_ops(compiled)) and len(fused_ops(compiled)) >= 2


def test_structured_outputs():
    def fn(x):
        return {"a": x * 2, "pair": (x + 1, None), "values": ember.max(x.exp() * 3, 0)}

    compiled = ember.compile(fn)
    x = ember.randn(4, 3)
    for _ in range(2):
        got, want = compiled(x), fn(x)
        close(got["a"], want["a"])
        close(got["pair"][0], want["pair"][0])
        assert got["pair"][1] is None
        assert type(got["values"]) is type(want["values"])
        close(got["values"].values, want["values"].values)


# ------------------------------------------------------------------------------------------------- the report
def test_explain_reports_graphs_ops_chains_and_breaks():
    report = ember._dynamo.explain(gelu_tanh)(ember.randn(5))
    assert report.graph_count == 1 and report.graph_break_count == 0 and report.op_count == 8
    assert report.fused_chains == ["fused_0: mul -> pow -> mul -> add -> mul -> tanh -> add -> mul "
                                   "(8 ops in one kernel)"]
    text = str(report)
    assert "Graph Count: 1" in text and "fused_0[mul, pow" in text
    broken = ember._dynamo.explain(lambda x: x * x.sum().item())(ember.randn(5))
    assert broken.graph_count == 0 and broken.graph_break_count >= 1
    assert "Tensor.item" in broken.break_reasons[0]


def test_kernels_are_files_in_the_kernel_cache():
    compiled = ember.compile(gelu_tanh)
    compiled(ember.randn(7))
    folder = os.path.join(os.environ.get("NUMBA_CACHE_DIR") or ember._runtime.kernel_cache_dir(), "compiled")
    sources = [f for f in os.listdir(folder) if f.startswith("ember_chain_") and f.endswith(".py")]
    assert sources
    text = "".join(open(os.path.join(folder, f)).read() for f in sources)
    assert "def body(" in text and "parallel_kernel" in text
