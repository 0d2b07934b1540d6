"""View ops against NumPy, storage sharing, errors, and gradients."""
from __future__ import annotations

import numpy as np
import pytest

import ember

A = np.arange(24.0).reshape(2, 3, 4)


def T(a=A):
    return ember.tensor(np.array(a, dtype=np.float64))


CASES = {
    "view": (lambda t: t.view(4, 6), lambda a: a.reshape(4, 6)),
    "view_infer": (lambda t: t.view(-1, 3), lambda a: a.reshape(-1, 3)),
    "reshape": (lambda t: t.reshape(6, -1), lambda a: a.reshape(6, -1)),
    "reshape_noncontig": (lambda t: t.transpose(0, 2).reshape(-1), lambda a: a.transpose(2, 1, 0).reshape(-1)),
    "flatten": (lambda t: t.flatten(1), lambda a: a.reshape(2, 12)),
    "flatten_all": (lambda t: ember.flatten(t), lambda a: a.reshape(-1)),
    "unflatten": (lambda t: t.unflatten(2, (2, 2)), lambda a: a.reshape(2, 3, 2, 2)),
    "squeeze": (lambda t: t.unsqueeze(1).squeeze(1), lambda a: a),
    "squeeze_all": (lambda t: t.view(1, 2, 1, 12).squeeze(), lambda a: a.reshape(2, 12)),
    "unsqueeze": (lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
    "permute": (lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    "transpose": (lambda t: t.transpose(0, -1), lambda a: np.swapaxes(a, 0, -1)),
    "t": (lambda t: t.select(0, 1).t(), lambda a: a[1].T),
    "T": (lambda t: t.select(0, 0).T, lambda a: a[0].T),
    "mT": (lambda t: t.mT, lambda a: np.swapaxes(a, -1, -2)),
    "expand": (lambda t: t.select(1, 0).unsqueeze(0).expand(3, -1, -1), lambda a: np.broadcast_to(a[:, 0], (3, 2, 4))),
    "narrow": (lambda t: t.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
    "narrow_neg": (lambda t: t.narrow(-1, -3, 2), lambda a: a[:, :, 1:3]),
    "select": (lambda t: t.select(1, -1), lambda a: a[:, -1]),
    "movedim": (lambda t: t.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
    "movedim_multi": (lambda t: ember.movedim(t, (0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1), (2, 0))),
    "diagonal": (lambda t: t.diagonal(), lambda a: np.diagonal(a)),
    "diagonal_off1": (lambda t: t.diagonal(1, 1, 2), lambda a: np.diagonal(a, 1, 1, 2)),
    "diagonal_offm1": (lambda t: t.diagonal(-1, 1, 2), lambda a: np.diagonal(a, -1, 1, 2)),
    "diagonal_big": (lambda t: t.diagonal(7, 1, 2), lambda a: np.diagonal(a, 7, 1, 2)),
    "unfold": (lambda t: t.unfold(2, 2, 1), lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, axis=2)),
    "unfold_step": (lambda t: t.unfold(2, 2, 2), lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, axis=2)[:, :, ::2]),
    "as_strided": (lambda t: t.as_strided((3, 3), (1, 2), 1),
                   lambda a: np.lib.stride_tricks.as_strided(a.reshape(-1)[1:], (3, 3), (8, 16))),
    "contiguous": (lambda t: t.transpose(0, 1).contiguous(), lambda a: np.swapaxes(a, 0, 1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_view_values(name):
    fn, ref = CASES[name]
    out = fn(T())
    expected = ref(A)
    assert tuple(out.shape) == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)
    assert out.dtype is ember.float64


def test_split_chunk_unbind():
    t = T()
    parts = t.split(3, dim=2)
    assert [tuple(p.shape) for p in parts] == [(2, 3, 3), (2, 3, 1)]
    for p, r in zip(parts, np.split(A, [3], axis=2)):
        np.testing.assert_array_equal(p.numpy(), r)
    parts = ember.split(t, [1, 2], dim=1)
    for p, r in zip(parts, np.split(A, [1], axis=1)):
        np.testing.assert_array_equal(p.numpy(), r)
    with pytest.raises(RuntimeError):
        ember.split(t, [1, 1], dim=1)
    ch = t.chunk(3, dim=2)
    assert [p.shape[2] for p in ch] == [2, 2]  # torch: ceil(4/3)=2 -> two chunks
    ch = ember.chunk(t, 2, dim=1)
    assert [p.shape[1] for p in ch] == [2, 1]
    ub = t.unbind(1)
    assert len(ub) == 3
    for i, u in enumerate(ub):
        np.testing.assert_array_equal(u.numpy(), A[:, i])


def test_views_share_storage_both_ways():
    base = T()
    v = base.transpose(0, 2).narrow(0, 1, 2)
    assert v._array.base is not None or np.shares_memory(v._array, base._array)
    v.mul_(0.0)  # writes through the view
    assert base.numpy()[:, :, 1:3].sum() == 0 and base.numpy()[:, :, 0].sum() != 0
    base.fill_(5.0)  # writes through the base
    assert np.all(v.numpy() == 5.0)
    for fn in (lambda t: t.view(-1), lambda t: t.select(0, 1), lambda t: t.diagonal(0, 1, 2),
               lambda t: t.unfold(2, 2, 1), lambda t: t.unbind(0)[1], lambda t: t.split(2, 2)[1],
               lambda t: t.as_strided((2,), (5,), 3), lambda t: t.expand(2, 2, 3, 4), lambda t: t.movedim(0, 2)):
        b = T()
        w = fn(b)
        b.add_(1.0)
        ref = fn(T() + 1.0)
        np.testing.assert_array_equal(w.numpy(), ref.numpy())
        assert w._version_value == b._version_value


def test_contiguous_returns_self_or_copy():
    t = T()
    assert t.contiguous() is t
    tt = t.transpose(0, 1)
    assert not tt.is_contiguous()
    c = tt.contiguous()
    assert c.is_contiguous() and c.stride() == (8, 4, 1)
    c.add_(1.0)
    assert t.numpy()[0, 0, 0] == 0.0  # copy, not a view


def test_strides_match_torch_semantics():
    t = T()
    assert t.stride() == (12, 4, 1)
    assert t.transpose(0, 2).stride() == (1, 4, 12)
    assert t.narrow(2, 1, 2).storage_offset() == 1
    assert t.expand(5, 2, 3, 4).stride() == (0, 12, 4, 1)
    assert t.unfold(2, 2, 1).stride() == (12, 4, 1, 1)
    assert t.diagonal(1, 1, 2).stride() == (12, 5)


def test_view_errors():
    t = T()
    with pytest.raises(RuntimeError):
        t.transpose(0, 1).view(-1)
    with pytest.raises(RuntimeError):
        t.view(5, 5)
    with pytest.raises(RuntimeError):
        t.view(-1, -1)
    with pytest.raises(IndexError):
        t.transpose(0, 3)
    with pytest.raises(IndexError):
        t.select(-4, 0)
    with pytest.raises(IndexError):
        t.select(0, 2)
    with pytest.raises(IndexError):
        t.unsqueeze(5)
    with pytest.raises(IndexError):
        t.squeeze(3)
    with pytest.raises(RuntimeError):
        t.permute(0, 0, 1)
    with pytest.raises(RuntimeError):
        t.expand(3, 3, 4)
    with pytest.raises(RuntimeError):
        t.narrow(2, 3, 2)
    with pytest.raises(RuntimeError):
        t.unfold(2, 5, 1)


def test_zero_dim_and_empty_views():
    s = ember.tensor(3.0)
    assert s.view(1).shape == ember.Size((1,))
    assert s.unsqueeze(0).shape == ember.Size((1,))
    assert s.reshape(1, 1).squeeze().shape == ember.Size(())
    assert s.t().shape == ember.Size(())
    assert s.flatten().shape == ember.Size((1,))
    e = ember.tensor(np.zeros((0, 3)))
    assert e.view(3, 0).shape == ember.Size((3, 0))
    assert e.transpose(0, 1).shape == ember.Size((3, 0))
    assert e.reshape(-1, 3).shape == ember.Size((0, 3))
    with pytest.raises(RuntimeError):
        e.view(-1, 0)


GRAD_VIEWS = {
    "view": lambda t: t.view(4, 6), "reshape_nc": lambda t: t.transpose(0, 2).reshape(-1),
    "flatten": lambda t: t.flatten(), "unflatten": lambda t: t.unflatten(2, (2, 2)),
    "squeeze": lambda t: t.unsqueeze(0).squeeze(0), "permute": lambda t: t.permute(2, 0, 1),
    "transpose": lambda t: t.transpose(0, 1), "mT": lambda t: t.mT,
    "expand": lambda t: t.unsqueeze(0).expand(3, 2, 3, 4), "narrow": lambda t: t.narrow(1, 1, 2),
    "select": lambda t: t.select(2, 1), "unbind": lambda t: t.unbind(1)[2] * 2 + t.unbind(1)[0],
    "split": lambda t: t.split(3, 2)[1], "chunk": lambda t: t.chunk(2, 1)[0],
    "movedim": lambda t: t.movedim(0, 2), "diagonal": lambda t: t.diagonal(1, 1, 2),
    "unfold": lambda t: t.unfold(2, 2, 1), "as_strided": lambda t: t.as_strided((3, 3), (1, 2), 1),
    "contiguous": lambda t: t.transpose(0, 1).contiguous(), "view_of_view": lambda t: t.t().select(0, 1) if t.dim() == 2 else t.select(0, 1).t().narrow(0, 1, 2),
}


@pytest.mark.parametrize("name", sorted(GRAD_VIEWS))
def test_view_gradcheck(name):
    x = ember.tensor(np.random.default_rng(0).standard_normal((2, 3, 4)), requires_grad=True)
    fn = GRAD_VIEWS[name]
    assert ember.autograd.gradcheck(lambda t: fn(t) * 1.0, (x,))


def test_view_grad_accumulates_overlap():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.unfold(0, 2, 1).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 1.0]
    y = ember.tensor([1.0, 2.0], requires_grad=True)
    y.expand(3, 2).sum().backward()
    assert y.grad.tolist() == [3.0, 3.0]


def test_split_of_empty_dim_gives_one_empty_piece():
    """Regression (fuzz): split(x, 2, dim) over a dim of size 0 returned no pieces; torch returns one empty piece."""
    pieces = ember.split(ember.zeros(1, 0, 3), 2, 1)
    assert len(pieces) == 1 and tuple(pieces[0].shape) == (1, 0, 3)


# ---- argument checks agreeing with torch (issue 8) -------------------------------------------------------------------
def test_zero_dim_views_check_their_dims():
    s = ember.tensor(1.5)
    for call in (lambda: s.transpose(0, 1), lambda: s.flatten(0, -2), lambda: s.movedim(1, 0)):
        with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\]"):
            call()
    assert s.transpose(0, -1).item() == 1.5 and s.movedim(0, 0).shape == () and s.flatten().shape == (1,)


@pytest.mark.parametrize("name, arg", [("permute", "dims"), ("expand", "size"), ("repeat", "repeats")])
def test_size_methods_need_an_argument(name, arg):
    x = ember.ones(3)
    with pytest.raises(TypeError, match=f'{name}\\(\\) missing 1 required positional arguments: "{arg}"'):
        getattr(x, name)()
    assert getattr(ember.tensor(2.0), name)(()).shape == ()


def test_narrow_checks_in_torchs_order():
    x = ember.ones(1)
    with pytest.raises(RuntimeError, match="narrow\\(\\): length must be non-negative"):
        x.narrow(-2, -4, -1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.narrow(-2, -4, 1)
    with pytest.raises(IndexError, match=r"start out of range \(expected to be in range of \[-3, 3\], but got -4\)"):
        ember.ones(3).narrow(0, -4, 1)
    with pytest.raises(RuntimeError, match="narrow\\(\\) cannot be applied to a 0-dim tensor"):
        ember.tensor(1.0).narrow(0, 0, 1)
    assert ember.arange(3).narrow(0, -2, 2).tolist() == [1, 2]


def test_as_strided_negative_size_is_a_runtime_error():
    with pytest.raises(RuntimeError, match=r"as_strided: Storage size calculation overflowed with sizes=\[-1\]"):
        ember.tensor(1.0).as_strided((-1,), (3,), 0)


def test_writing_through_an_expanded_tensor_reaches_every_alias():
    base = ember.tensor([[3, 10]])
    x = base.expand(3, 2)
    x[-1] = 0
    assert base.tolist() == [[0, 0]] and x.tolist() == [[0, 0]] * 3
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single"):
        x[:, 0] = 5
