"""Embeddings, embedding bags and one_hot: values and weight gradients against torch, error types, modules."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


def _weights(torch, shape=(6, 3), seed=0):
    w = np.random.default_rng(seed).standard_normal(shape)
    return ember.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)


def _check(torch, ours, theirs, inputs, seed=1):
    """Values equal and the gradients of a weighted sum equal for each (ember, torch) input pair."""
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = np.random.default_rng(seed).standard_normal(tuple(theirs.shape))
    (ours * ember.tensor(g)).sum().backward()
    (theirs * torch.tensor(g)).sum().backward()
    for a, b in inputs:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-12)


INDICES = np.array([[0, 2, 2], [5, 1, 2]])


# ----------------------------------------------------------------------------- embedding
@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 2}, {"padding_idx": -1}, {"scale_grad_by_freq": True},
                                    {"padding_idx": 1, "scale_grad_by_freq": True}])
def test_embedding_matches_torch(torch_ref, kwargs):
    w, tw = _weights(torch_ref)
    _check(torch_ref, F.embedding(ember.tensor(INDICES), w, **kwargs),
           torch_ref.nn.functional.embedding(torch_ref.tensor(INDICES), tw, **kwargs), [(w, tw)])


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_embedding_max_norm_renormalises_rows_in_place(torch_ref, norm_type):
    w, tw = _weights(torch_ref)
    version = w._version.value
    _check(torch_ref, F.embedding(ember.tensor(INDICES), w, max_norm=0.8, norm_type=norm_type),
           torch_ref.nn.functional.embedding(torch_ref.tensor(INDICES), tw, max_norm=0.8, norm_type=norm_type),
           [(w, tw)])
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-12)
    assert w._version.value > version
    assert np.abs(w.detach().numpy()[3]).max() > 0  # unused row 3 untouched: matches torch's above


@settings(max_examples=15, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=3), num=st.integers(1, 6), seed=st.integers(0, 99))
def test_embedding_matches_numpy(shape, num, seed):
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((num, 2))
    idx = rng.integers(0, num, size=shape)
    w = ember.tensor(table, requires_grad=True)
    out = F.embedding(ember.tensor(idx, dtype=ember.int32), w)
    np.testing.assert_array_equal(out.detach().numpy(), table[idx])
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], np.bincount(idx.reshape(-1), minlength=num))


def test_embedding_gradcheck_and_gradgradcheck():
    """(padding_idx and scale_grad_by_freq change the gradient on purpose, so they are checked against torch.)"""
    w = ember.tensor(np.random.default_rng(3).standard_normal((4, 2)), requires_grad=True)
    f = lambda w: F.embedding(ember.tensor([[0, 3], [3, 1]]), w)  # noqa: E731
    assert gradcheck(f, (w,))
    assert gradgradcheck(f, (w,))


@pytest.mark.parametrize("call,error,match", [
    (lambda w: F.embedding(ember.tensor([6]), w), IndexError, "index out of range"),
    (lambda w: F.embedding(ember.tensor([-1]), w), IndexError, "index out of range"),
    (lambda w: F.embedding(ember.tensor([1.0]), w), RuntimeError, "Long, Int"),
    (lambda w: F.embedding(ember.tensor([1]), w[0]), RuntimeError, "must be 2-D"),
    (lambda w: F.embedding(ember.tensor([1]), w, padding_idx=6), AssertionError, "Padding_idx"),
])
def test_embedding_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(ember.zeros(6, 3))


# ----------------------------------------------------------------------------- embedding_bag
BAG_INPUT = np.array([1, 2, 4, 5, 4, 3, 2, 0])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("offsets,include_last", [([0, 2, 2, 5], False), ([0, 3, 3, 8], True), ([0], False)])
def test_embedding_bag_matches_torch(torch_ref, mode, padding_idx, offsets, include_last):
    w, tw = _weights(torch_ref)
    kwargs = dict(mode=mode, padding_idx=padding_idx, include_last_offset=include_last)
    _check(torch_ref, F.embedding_bag(ember.tensor(BAG_INPUT), w, ember.tensor(offsets), **kwargs),
           torch_ref.nn.functional.embedding_bag(torch_ref.tensor(BAG_INPUT), tw, torch_ref.tensor(offsets),
                                                 **kwargs), [(w, tw)])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_float16_matches_torch(torch_ref, mode):
    """float16 weights (max mode's kernel compares them widened to float32, which is exact)."""
    w = np.random.default_rng(3).standard_normal((6, 3)).astype(np.float16)
    ours = F.embedding_bag(ember.tensor(BAG_INPUT), ember.tensor(w), ember.tensor([0, 2, 5]), mode=mode)
    theirs = torch_ref.nn.functional.embedding_bag(torch_ref.tensor(BAG_INPUT), torch_ref.tensor(w),
                                                   torch_ref.tensor([0, 2, 5]), mode=mode)
    assert ours.dtype == ember.float16
    np.testing.assert_allclose(ours.numpy().astype(np.float64), theirs.numpy().astype(np.float64), rtol=1e-3)


def test_embedding_bag_2d_input_and_per_sample_weights(torch_ref):
    w, tw = _weights(torch_ref)
    p = np.random.default_rng(5).standard_normal(INDICES.shape)
    pw, tpw = ember.tensor(p, requires_grad=True), torch_ref.tensor(p, requires_grad=True)
    _check(torch_ref, F.embedding_bag(ember.tensor(INDICES), w, mode="sum", per_sample_weights=pw, padding_idx=0),
           torch_ref.nn.functional.embedding_bag(torch_ref.tensor(INDICES), tw, mode="sum", per_sample_weights=tpw,
                                                 padding_idx=0), [(w, tw), (pw, tpw)])


def test_embedding_bag_max_norm(torch_ref):
    w, tw = _weights(torch_ref)
    kwargs = dict(mode="mean", max_norm=1.0)
    _check(torch_ref, F.embedding_bag(ember.tensor(INDICES), w, **kwargs),
           torch_ref.nn.functional.embedding_bag(torch_ref.tensor(INDICES), tw, **kwargs), [(w, tw)])
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("mode,expected", [("sum", [1, 1, 1, 0, 0, 1]), ("mean", [1 / 3, 1 / 3, 1 / 3, 0, 0, 1 / 3])])
def test_embedding_bag_scale_grad_by_freq(mode, expected):
    """Each row's gradient is divided by how often its index occurs (torch 2.13's CPU kernel misplaces some
    counts for this input, so the reference is written out)."""
    w = ember.ones(6, 1, requires_grad=True)
    F.embedding_bag(ember.tensor(INDICES), w, mode=mode, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(w.grad.numpy()[:, 0], expected, rtol=1e-6)


def test_embedding_bag_empty_bags_are_zero():
    out = F.embedding_bag(ember.tensor([3, 3, 3]), ember.ones(5, 2), ember.tensor([0, 0, 3]), mode="max",
                          padding_idx=3)
    assert out.numpy().tolist() == [[0, 0], [0, 0], [0, 0]]


def test_embedding_bag_gradcheck():
    w = ember.tensor(np.random.default_rng(4).standard_normal((6, 2)), requires_grad=True)
    for mode in ("sum", "mean", "max"):
        assert gradcheck(lambda w: F.embedding_bag(ember.tensor(BAG_INPUT), w, ember.tensor([0, 3, 3]), mode=mode),
                         (w,))


def test_torch_level_embedding_functions(torch_ref):
    w, tw = _weights(torch_ref)
    ours = ember.embedding(w, ember.tensor(INDICES), 2)
    theirs = torch_ref.embedding(tw, torch_ref.tensor(INDICES), 2)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    bag, offset2bag, sizes, _ = ember.embedding_bag(w, ember.tensor(BAG_INPUT), ember.tensor([0, 2, 2, 5]), False, 1)
    ref = torch_ref.embedding_bag(tw, torch_ref.tensor(BAG_INPUT), torch_ref.tensor([0, 2, 2, 5]), False, 1)
    np.testing.assert_allclose(bag.detach().numpy(), ref[0].detach().numpy(), rtol=1e-12)
    assert sizes.tolist() == [2, 0, 3, 3] and offset2bag.tolist() == [0, 0, 2, 2, 2, 3, 3, 3]


@pytest.mark.parametrize("call,error,match", [
    (lambda w: F.embedding_bag(ember.tensor([1, 2]), w, ember.tensor([1])), RuntimeError, r"offsets\[0\]"),
    (lambda w: F.embedding_bag(ember.tensor([1, 2]), w, ember.tensor([0, 3])), RuntimeError, "greater than"),
    (lambda w: F.embedding_bag(ember.tensor([1, 2]), w), ValueError, "offsets has to be a 1D Tensor"),
    (lambda w: F.embedding_bag(ember.tensor([[1, 2]]), w, ember.tensor([0])), ValueError, "has to be None"),
    (lambda w: F.embedding_bag(ember.tensor([1, 2]), w, ember.tensor([0]), mode="min"), ValueError, "mode"),
    (lambda w: F.embedding_bag(ember.tensor([1, 2]), w, ember.tensor([0]), mode="max", scale_grad_by_freq=True),
     ValueError, "frequency"),
    (lambda w: F.embedding_bag(ember.tensor([1, 2]), w, ember.tensor([0]), per_sample_weights=ember.ones(2)),
     NotImplementedError, "only supported for mode='sum'"),
    (lambda w: F.embedding_bag(ember.tensor([1, 2]), w, ember.tensor([0]), per_sample_weights=ember.ones(3)),
     ValueError, "same shape"),
    (lambda w: F.embedding_bag(ember.tensor([1, 9]), w, ember.tensor([0])), IndexError, "out of range"),
])
def test_embedding_bag_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(ember.zeros(6, 3))


# ----------------------------------------------------------------------------- one_hot
def test_one_hot_matches_torch(torch_ref):
    values = np.array([[1, 0], [3, 2]])
    for classes in (-1, 6):
        ours = F.one_hot(ember.tensor(values), classes)
        theirs = torch_ref.nn.functional.one_hot(torch_ref.tensor(values), classes)
        assert ours.dtype is ember.int64
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert tuple(F.one_hot(ember.tensor(2), 4).shape) == (4,)
    assert tuple(F.one_hot(ember.zeros(0, dtype=ember.int64), 3).shape) == (0, 3)


@pytest.mark.parametrize("values,classes,match", [
    (ember.tensor([1, 2], dtype=ember.int32), -1, "LongTensor"),
    (ember.tensor([1, -2]), -1, "non-negative"),
    (ember.tensor([1, 7]), 3, "smaller than num_classes"),
    (ember.zeros(0, dtype=ember.int64), -1, "empty tensor"),
])
def test_one_hot_errors(values, classes, match):
    with pytest.raises(RuntimeError, match=match):
        F.one_hot(values, classes)


# ----------------------------------------------------------------------------- modules
def test_embedding_module(torch_ref):
    ours = nn.Embedding(6, 3, padding_idx=-2, max_norm=2.0)
    theirs = torch_ref.nn.Embedding(6, 3, padding_idx=-2, max_norm=2.0)
    assert repr(ours) == repr(theirs) and ours.padding_idx == 4
    assert not ours.weight.detach().numpy()[4].any() and ours.weight.detach().numpy().std() > 0.2
    ours.load_state_dict({"weight": ember.tensor(theirs.weight.detach().numpy())})
    idx = np.array([[4, 1], [2, 1]])
    out, ref = ours(ember.tensor(idx)), theirs(torch_ref.tensor(idx))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6)  # renorm rounds in float32
    out.sum().backward(), ref.sum().backward()
    np.testing.assert_array_equal(ours.weight.grad.numpy(), theirs.weight.grad.numpy())


def test_embedding_from_pretrained():
    table = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    frozen = nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad
    assert frozen(ember.tensor([1])).numpy().tolist() == [[3.0, 4.0]]
    trainable = nn.EmbeddingBag.from_pretrained(table, freeze=False, mode="sum")
    assert trainable.weight.requires_grad
    assert trainable(ember.tensor([[0, 1]])).tolist() == [[4.0, 6.0]]
    with pytest.raises(AssertionError, match="2-dimensional"):
        nn.Embedding.from_pretrained(ember.ones(3))
    with pytest.raises(AssertionError, match="Shape of weight"):
        nn.Embedding(3, 2, _weight=ember.ones(2, 2))


def test_embedding_bag_module(torch_ref):
    ours, theirs = nn.EmbeddingBag(6, 3, mode="max", padding_idx=0), torch_ref.nn.EmbeddingBag(6, 3, mode="max",
                                                                                                  padding_idx=0)
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({"weight": ember.tensor(theirs.weight.detach().numpy())})
    out = ours(ember.tensor(BAG_INPUT), ember.tensor([0, 4]))
    ref = theirs(torch_ref.tensor(BAG_INPUT), torch_ref.tensor([0, 4]))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6)


def test_embedding_with_no_rows_refuses_any_index():
    with pytest.raises(RuntimeError, match="embedding\\(\\): index_select\\(\\): self indexing axis dim should be "
                                           "positive"):
        F.embedding(ember.tensor(0, dtype=ember.int32), ember.ones(0, 1))
    assert F.embedding(ember.zeros(0, dtype=ember.int64), ember.ones(0, 3)).shape == (0, 3)
