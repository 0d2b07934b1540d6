"""Recurrent layers, cells and packed sequences against torch (weights moved through state_dict)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as nn
from ember.tensor.fused.recurrent import scan, scan_reference
from ember.nn.utils import rnn as rnn_utils


def to_ember(t, requires_grad=False):
    x = ember.tensor(t.detach().numpy())
    return x.requires_grad_() if requires_grad else x


def copy_weights(torch_module, ember_module):
    ember_module.load_state_dict({k: to_ember(v) for k, v in torch_module.state_dict().items()})


def assert_close(e, t, tol=1e-10):
    np.testing.assert_allclose(np.asarray(e.detach().numpy()), t.detach().numpy(), rtol=tol, atol=tol)


def assert_grads(ember_module, torch_module, tol=1e-10):
    names = dict(torch_module.named_parameters())
    for name, p in ember_module.named_parameters():
        assert p.grad is not None, name
        assert_close(p.grad, names[name].grad, tol)


def make_pair(torch, kind, kwargs, dtype="float64"):
    t_mod = getattr(torch.nn, kind)(**kwargs)
    e_mod = getattr(nn, kind)(**kwargs)
    if dtype == "float64":
        t_mod, e_mod = t_mod.double(), e_mod.double()
    copy_weights(t_mod, e_mod)
    return t_mod, e_mod


CONFIGS = [
    ("RNN", dict()),
    ("RNN", dict(nonlinearity="relu", num_layers=2)),
    ("RNN", dict(bidirectional=True, bias=False)),
    ("LSTM", dict()),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(batch_first=True, bias=False)),
    ("LSTM", dict(proj_size=3, num_layers=2, bidirectional=True)),
    ("GRU", dict()),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("GRU", dict(bias=False)),
]


def _states(torch, kind, kwargs, batch, seed, unbatched=False):
    """Random initial states for the module (torch tensors requiring grad)."""
    g = torch.Generator().manual_seed(seed)
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    h_size = kwargs.get("proj_size") or 6
    lead = (layers,) if unbatched else (layers, batch)
    h = torch.randn(*lead, h_size, generator=g, dtype=torch.float64, requires_grad=True)
    if kind != "LSTM":
        return h
    c = torch.randn(*lead, 6, generator=g, dtype=torch.float64, requires_grad=True)
    return h, c


def _ember_states(states):
    if isinstance(states, tuple):
        return tuple(to_ember(s, True) for s in states)
    return to_ember(states, True)


def _loss(torch_or_ember_out, hidden):
    """A loss that reaches the output and every final state with different weights."""
    parts = hidden if isinstance(hidden, tuple) else (hidden,)
    total = (torch_or_ember_out * torch_or_ember_out).sum()
    for k, s in enumerate(parts):
        total = total + (s * (k + 2)).sum()
    return total


@pytest.mark.parametrize("kind,extra", CONFIGS)
@pytest.mark.parametrize("with_state", [False, True])
def test_sequence_layers_match_torch(torch_ref, kind, extra, with_state):
    torch = torch_ref
    kwargs = dict(input_size=4, hidden_size=6, **extra)
    t_mod, e_mod = make_pair(torch, kind, kwargs)
    batch_first = extra.get("batch_first", False)
    shape = (3, 5, 4) if batch_first else (5, 3, 4)
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    ex = to_ember(x, True)
    states = _states(torch, kind, kwargs, 3, 1) if with_state else None
    e_states = _ember_states(states) if with_state else None
    t_out, t_hidden = t_mod(x, states)
    e_out, e_hidden = e_mod(ex, e_states)
    assert tuple(e_out.shape) == tuple(t_out.shape)
    assert_close(e_out, t_out)
    for e_s, t_s in zip(e_hidden if kind == "LSTM" else (e_hidden,), t_hidden if kind == "LSTM" else (t_hidden,)):
        assert_close(e_s, t_s)
    _loss(t_out, t_hidden).backward()
    _loss(e_out, e_hidden).backward()
    assert_close(ex.grad, x.grad)
    assert_grads(e_mod, t_mod)
    if with_state:
        for e_s, t_s in zip(e_states if kind == "LSTM" else (e_states,), states if kind == "LSTM" else (states,)):
            assert_close(e_s.grad, t_s.grad)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_unbatched_input(torch_ref, kind):
    torch = torch_ref
    kwargs = dict(input_size=4, hidden_size=6, num_layers=2)
    t_mod, e_mod = make_pair(torch, kind, kwargs)
    x = torch.randn(5, 4, dtype=torch.float64)
    states = _states(torch, kind, kwargs, None, 2, unbatched=True)
    t_out, t_hidden = t_mod(x, states)
    e_out, e_hidden = e_mod(to_ember(x), _ember_states(states))
    assert tuple(e_out.shape) == (5, 6)
    assert_close(e_out, t_out)
    assert_close(e_hidden[0] if kind == "LSTM" else e_hidden, t_hidden[0] if kind == "LSTM" else t_hidden)


@pytest.mark.parametrize("kind,extra", [("LSTM", dict(bidirectional=True, num_layers=2)), ("GRU", dict()),
                                        ("RNN", dict(bidirectional=True)), ("LSTM", dict(proj_size=2))])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequences_match_torch(torch_ref, kind, extra, enforce_sorted):
    torch = torch_ref
    kwargs = dict(input_size=4, hidden_size=6, **extra)
    t_mod, e_mod = make_pair(torch, kind, kwargs)
    lengths = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 3]
    x = torch.randn(5, 4, 4, dtype=torch.float64, requires_grad=True)
    ex = to_ember(x, True)
    states = _states(torch, kind, kwargs, 4, 3)
    e_states = _ember_states(states)
    t_packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted)
    e_packed = rnn_utils.pack_padded_sequence(ex, lengths, enforce_sorted=enforce_sorted)
    t_out, t_hidden = t_mod(t_packed, states)
    e_out, e_hidden = e_mod(e_packed, e_states)
    assert isinstance(e_out, rnn_utils.PackedSequence)
    assert e_out.batch_sizes.tolist() == t_out.batch_sizes.tolist()
    t_pad, t_len = torch.nn.utils.rnn.pad_packed_sequence(t_out, batch_first=True)
    e_pad, e_len = rnn_utils.pad_packed_sequence(e_out, batch_first=True)
    assert e_len.tolist() == t_len.tolist()
    assert_close(e_pad, t_pad)
    _loss(t_pad, t_hidden).backward()
    _loss(e_pad, e_hidden).backward()
    assert_close(ex.grad, x.grad)
    assert_grads(e_mod, t_mod)
    for e_s, t_s in zip(e_states if kind == "LSTM" else (e_states,), states if kind == "LSTM" else (states,)):
        assert_close(e_s.grad, t_s.grad)


def test_float32_lstm_matches_torch(torch_ref):
    torch = torch_ref
    t_mod, e_mod = make_pair(torch, "LSTM", dict(input_size=8, hidden_size=16, num_layers=2), dtype="float32")
    x = torch.randn(7, 3, 8)
    t_out, _ = t_mod(x)
    e_out, _ = e_mod(to_ember(x))
    assert e_out.dtype is ember.float32
    assert_close(e_out, t_out, 1e-5)
    t_out.sum().backward()
    e_out.sum().backward()
    assert_grads(e_mod, t_mod, 1e-4)


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_torch(torch_ref, kind, batched):
    torch = torch_ref
    extra = dict(nonlinearity="relu") if kind == "RNNCell" else {}
    t_cell, e_cell = make_pair(torch, kind, dict(input_size=3, hidden_size=5, **extra))
    lead = (4,) if batched else ()
    x = torch.randn(*lead, 3, dtype=torch.float64, requires_grad=True)
    h = torch.randn(*lead, 5, dtype=torch.float64, requires_grad=True)
    c = torch.randn(*lead, 5, dtype=torch.float64, requires_grad=True)
    ex, eh, ec = to_ember(x, True), to_ember(h, True), to_ember(c, True)
    if kind == "LSTMCell":
        t_res, e_res = t_cell(x, (h, c)), e_cell(ex, (eh, ec))
    else:
        t_res, e_res = (t_cell(x, h),), (e_cell(ex, eh),)
    for e_r, t_r in zip(e_res, t_res):
        assert_close(e_r, t_r)
    sum(((r * (k + 1)) ** 2).sum() for k, r in enumerate(t_res)).backward()
    sum(((r * (k + 1)) ** 2).sum() for k, r in enumerate(e_res)).backward()
    assert_close(ex.grad, x.grad)
    assert_close(eh.grad, h.grad)
    if kind == "LSTMCell":
        assert_close(ec.grad, c.grad)
    assert_grads(e_cell, t_cell)


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_without_state_start_from_zeros(kind):
    cell = getattr(nn, kind)(3, 4).double()
    x = ember.randn(2, 3, dtype=ember.float64)
    zeros = ember.zeros(2, 4, dtype=ember.float64)
    given_zero = cell(x, (zeros, zeros) if kind == "LSTMCell" else zeros)
    default = cell(x)
    for a, b in zip(default if kind == "LSTMCell" else (default,), given_zero if kind == "LSTMCell" else (given_zero,)):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_gradcheck_and_gradgradcheck_of_the_fused_scan(mode):
    """The fused recurrence's gradient by finite differences, and its replayed (differentiable) backward."""
    gates = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1}[mode]
    rng = np.random.default_rng(0)
    batch_sizes = (3, 2, 2, 1)

    def t(*shape):
        return ember.tensor(rng.standard_normal(shape) * 0.5).requires_grad_()

    xw, h0, w_hh = t(sum(batch_sizes), gates * 2), t(3, 2), t(gates * 2, 2)
    b_ih, b_hh = t(gates * 2), t(gates * 2)
    c0 = t(3, 2) if mode == "LSTM" else None
    inputs = [a for a in (xw, h0, c0, w_hh, b_ih, b_hh) if a is not None]

    def fn(*args):
        it = iter(args)
        a_xw, a_h0 = next(it), next(it)
        a_c0 = next(it) if mode == "LSTM" else None
        outs = scan(a_xw, a_h0, a_c0, next(it), next(it), next(it), None, mode, batch_sizes, reverse=True)
        return tuple(o * 1.0 for o in outs)

    assert ember.autograd.gradcheck(fn, inputs)
    assert ember.autograd.gradgradcheck(fn, inputs)


def test_scan_reference_agrees_with_fused_scan_on_packed_batches():
    rng = np.random.default_rng(1)
    batch_sizes = (4, 4, 2, 1)
    xw, bias = ember.tensor(rng.standard_normal((11, 12))), ember.tensor(rng.standard_normal(12))
    h0, c0 = ember.tensor(rng.standard_normal((4, 2))), ember.tensor(rng.standard_normal((4, 3)))
    w_hh, w_hr = ember.tensor(rng.standard_normal((12, 2))), ember.tensor(rng.standard_normal((2, 3)))
    for reverse in (False, True):
        fused = scan(xw, h0, c0, w_hh, bias, bias, w_hr, "LSTM", batch_sizes, reverse)
        ref = scan_reference(xw, h0, c0, w_hh, bias, bias, w_hr, "LSTM", batch_sizes, reverse)
        for a, b in zip(fused, ref):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind,extra", [("LSTM", dict(num_layers=2, bidirectional=True, proj_size=2)),
                                        ("GRU", dict(bias=False)), ("RNN", dict(nonlinearity="relu")),
                                        ("LSTMCell", {}), ("RNNCell", dict(bias=False, nonlinearity="relu"))])
def test_parameters_repr_and_init_follow_torch(torch_ref, kind, extra):
    torch = torch_ref
    t_mod = getattr(torch.nn, kind)(3, 4, **extra)
    e_mod = getattr(nn, kind)(3, 4, **extra)
    assert repr(e_mod) == repr(t_mod)
    t_shapes = [(k, tuple(v.shape)) for k, v in t_mod.state_dict().items()]
    assert [(k, tuple(v.shape)) for k, v in e_mod.state_dict().items()] == t_shapes
    bound = 1 / math.sqrt(4)
    for p in e_mod.parameters():
        values = p.detach().numpy()
        assert values.min() >= -bound and values.max() <= bound
        assert values.std() > 0


def test_flatten_parameters_and_all_weights():
    m = nn.GRU(2, 3, num_layers=2)
    m.flatten_parameters()
    assert [[tuple(p.shape) for p in layer] for layer in m.all_weights] == [
        [(9, 2), (9, 3), (9,), (9,)], [(9, 3), (9, 3), (9,), (9,)]]
    assert m.all_weights[1][0] is m.weight_ih_l1


def test_dropout_between_layers_only_in_training():
    ember.manual_seed(0)
    m = nn.LSTM(3, 8, num_layers=2, dropout=0.5)
    x = ember.randn(4, 2, 3)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    m.train()
    c = m(x)[0]
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())


def test_errors_match_torch():
    lstm = nn.LSTM(3, 4)
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D"):
        lstm(ember.zeros(1, 2, 3, 3))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
        lstm(ember.zeros(2, 2, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 2, 4\), got \[1, 3, 4\]"):
        lstm(ember.zeros(2, 2, 3), (ember.zeros(1, 3, 4), ember.zeros(1, 2, 4)))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx and cx should also be 2-D"):
        lstm(ember.zeros(2, 3), (ember.zeros(1, 3, 4), ember.zeros(1, 3, 4)))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 2, 5\]"):
        nn.GRU(3, 4)(ember.zeros(2, 2, 3), ember.zeros(1, 2, 5))
    with pytest.raises(ValueError, match="does not match weight dtype"):
        lstm(ember.zeros(2, 2, 3, dtype=ember.float64))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="only supported for LSTM"):
        nn.RNNBase("GRU", 3, 4, proj_size=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.GRU(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="LSTMCell: Expected input to be 1D or 2D, got 3D"):
        nn.LSTMCell(3, 4)(ember.zeros(1, 2, 3))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size"):
        nn.GRUCell(3, 4)(ember.zeros(2, 5))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.LSTM(3, 4, dropout=0.2)
    assert any("non-zero dropout expects num_layers greater than 1" in str(w.message) for w in caught)


# ---- nn.utils.rnn ---------------------------------------------------------------------------------------------------

@settings(max_examples=15, deadline=None)
@given(lengths=st.lists(st.integers(1, 5), min_size=1, max_size=4), batch_first=st.booleans(),
       total_extra=st.integers(0, 2))
def test_pack_and_pad_round_trip_against_torch(lengths, batch_first, total_extra):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(len(lengths))
    steps = max(lengths)
    arr = rng.standard_normal((len(lengths), steps, 2) if batch_first else (steps, len(lengths), 2))
    t_packed = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(arr), lengths, batch_first, False)
    e_packed = rnn_utils.pack_padded_sequence(ember.tensor(arr), lengths, batch_first, False)
    np.testing.assert_array_equal(e_packed.data.numpy(), t_packed.data.numpy())
    assert e_packed.batch_sizes.tolist() == t_packed.batch_sizes.tolist()
    assert e_packed.batch_sizes.dtype is ember.int64
    total = steps + total_extra
    t_pad, t_len = torch.nn.utils.rnn.pad_packed_sequence(t_packed, batch_first, -1.0, total)
    e_pad, e_len = rnn_utils.pad_packed_sequence(e_packed, batch_first, -1.0, total)
    np.testing.assert_array_equal(e_pad.numpy(), t_pad.numpy())
    assert e_len.tolist() == t_len.tolist()


@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_and_unpacking(torch_ref, padding_side):
    torch = torch_ref
    arrays = [np.arange(n * 2, dtype=np.float64).reshape(n, 2) + n for n in (2, 4, 1)]
    t_pad = torch.nn.utils.rnn.pad_sequence([torch.tensor(a) for a in arrays], True, 9.0, padding_side)
    seqs = [ember.tensor(a).requires_grad_() for a in arrays]
    e_pad = rnn_utils.pad_sequence(seqs, True, 9.0, padding_side)
    np.testing.assert_array_equal(e_pad.detach().numpy(), t_pad.numpy())
    (e_pad * 2).sum().backward()
    for s in seqs:
        np.testing.assert_array_equal(s.grad.numpy(), np.full(s.shape, 2.0))
    packed = rnn_utils.pack_sequence([s.detach() for s in seqs], enforce_sorted=False)
    for got, want in zip(rnn_utils.unpack_sequence(packed), arrays):
        np.testing.assert_array_equal(got.numpy(), want)
    for got, want in zip(rnn_utils.unpad_sequence(e_pad.detach(), [2, 4, 1], batch_first=True), arrays):
        if padding_side == "right":
            np.testing.assert_array_equal(got.numpy(), want)


def test_packing_errors():
    x = ember.zeros(3, 2, 1)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        rnn_utils.pack_padded_sequence(x, [1, 3])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        rnn_utils.pack_padded_sequence(x, [3, 0])
    packed = rnn_utils.pack_padded_sequence(x, [3, 2])
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        rnn_utils.pad_packed_sequence(packed, total_length=2)
    with pytest.raises(ValueError, match="padding_side"):
        rnn_utils.pad_sequence([x[0]], padding_side="middle")


def test_packed_sequence_casts_and_indices():
    packed = rnn_utils.pack_padded_sequence(ember.zeros(3, 2, 1), [2, 3], enforce_sorted=False)
    assert packed.sorted_indices.tolist() == [1, 0]
    assert packed.unsorted_indices.tolist() == [1, 0]
    doubled = packed.double()
    assert doubled.data.dtype is ember.float64 and doubled.batch_sizes is packed.batch_sizes
    assert packed.float() is packed
