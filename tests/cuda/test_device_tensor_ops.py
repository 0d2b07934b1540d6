"""Every tensor op on CUDA tensors against the same op on the CPU: values, result device, and gradients.

One table, Chainer-style: each row names an op, its inputs (shapes, dtype, which need grad) and a function of
ember tensors. The harness runs it on CPU tensors and on their CUDA copies, compares the results, and for
differentiable rows compares the gradients of ``sum(out * w)`` for a random ``w``.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F

R = np.random.default_rng(0)


def f32(*shape, lo=-2.0, hi=2.0):
    return ("f", shape, lo, hi)


def i64(*shape, hi=3):
    return ("i", shape, 0, hi)


def b8(*shape):
    return ("b", shape, 0, 2)


def _make(spec, rng):
    kind, shape, lo, hi = spec
    if kind == "f":
        return ember.tensor(rng.uniform(lo, hi, shape).astype(np.float64))
    if kind == "i":
        return ember.tensor(rng.integers(lo, hi, shape).astype(np.int64))
    return ember.tensor(rng.integers(0, 2, shape).astype(bool))


# name, input specs, function, differentiable
OPS = [
    # elementwise
    ("neg", [f32(3, 4)], lambda a: -a, True),
    ("exp", [f32(3, 4)], lambda a: a.exp(), True),
    ("log", [f32(3, 4, lo=0.1)], lambda a: a.log(), True),
    ("tanh_sigmoid", [f32(3, 4)], lambda a: a.tanh() + a.sigmoid(), True),
    ("sqrt_rsqrt", [f32(5, lo=0.2)], lambda a: a.sqrt() * a.rsqrt(), True),
    ("pow_scalar", [f32(3, 4, lo=0.1)], lambda a: a ** 2.5, True),
    ("add_broadcast", [f32(3, 1), f32(1, 4)], lambda a, b: a + b, True),
    ("sub_mul_div", [f32(2, 3), f32(3, lo=0.5)], lambda a, b: (a - b) * a / b, True),
    ("scalar_ops", [f32(4)], lambda a: 2 * a + 1 - a / 3, True),
    ("maximum", [f32(3, 4), f32(4)], lambda a, b: ember.maximum(a, b), True),
    ("compare", [f32(3, 4), f32(3, 4)], lambda a, b: (a < b) | (a == b), False),
    ("where", [b8(3, 4), f32(3, 4), f32(4)], lambda c, a, b: ember.where(c, a, b), True),
    ("clamp", [f32(3, 4)], lambda a: a.clamp(-0.5, 0.7), True),
    ("int_arith", [i64(3, 4, hi=9), i64(4, hi=9)], lambda a, b: a * b + a // (b + 1) - a % (b + 1), False),
    ("cast", [f32(3, 4)], lambda a: a.to(ember.float32).to(ember.int64), False),
    ("isnan", [f32(3)], lambda a: (a / 0 * 0).isnan(), False),
    # reductions and scans
    ("sum_all", [f32(3, 4)], lambda a: a.sum(), True),
    ("sum_dims", [f32(2, 3, 4)], lambda a: a.sum((0, 2), keepdim=True), True),
    ("mean_var_std", [f32(4, 5)], lambda a: a.mean(1) + a.var(0).sum() + a.std(), True),
    ("max_dim", [f32(3, 4)], lambda a: a.max(1).values + a.min(0).values.sum(), True),
    ("argmax", [f32(3, 4)], lambda a: a.argmax(1), False),
    ("logsumexp", [f32(3, 4)], lambda a: a.logsumexp(1), True),
    ("prod", [f32(3, 4, lo=0.5)], lambda a: a.prod(1), True),
    ("all_any", [b8(3, 4)], lambda a: ember.stack([a.all(1), a.any(1)]), False),
    ("norm", [f32(3, 4)], lambda a: a.norm() + ember.linalg.vector_norm(a, 1, dim=1).sum(), True),
    ("cumsum", [f32(3, 4)], lambda a: a.cumsum(1) + a.cumprod(0), True),
    # products
    ("matmul", [f32(3, 4), f32(4, 5)], lambda a, b: a @ b, True),
    ("bmm_broadcast", [f32(2, 3, 4), f32(4, 2)], lambda a, b: ember.matmul(a, b), True),
    ("matvec", [f32(3, 4), f32(4)], lambda a, b: a @ b, True),
    ("linear", [f32(2, 4), f32(3, 4), f32(3)], lambda x, w, b: F.linear(x, w, b), True),
    ("einsum", [f32(2, 3), f32(3, 4)], lambda a, b: ember.einsum("ij,jk->ik", a, b), True),
    # views and layout
    ("reshape_permute", [f32(2, 3, 4)], lambda a: a.permute(2, 0, 1).reshape(4, 6) * 1, True),
    ("transpose_contig", [f32(3, 4)], lambda a: a.t().contiguous(), True),
    ("slice_step", [f32(4, 6)], lambda a: a[1:, ::2] * 2, True),
    ("select_negative", [f32(4, 6)], lambda a: a[-1, :4] + a[:, -2], True),
    ("expand", [f32(3, 1)], lambda a: a.expand(3, 4) * 1, True),
    ("unsqueeze_squeeze", [f32(3, 1, 4)], lambda a: a.squeeze(1).unsqueeze(0) * 1, True),
    ("flatten_view", [f32(2, 3, 4)], lambda a: a.flatten(1).view(-1) * 1, True),
    ("flip", [f32(3, 4)], lambda a: a.flip(0, 1), True),
    ("narrow_chunk", [f32(6, 4)], lambda a: a.narrow(0, 1, 3) + a.chunk(2, 0)[1], True),
    ("unfold", [f32(8)], lambda a: a.unfold(0, 3, 2) * 1, True),
    ("diagonal", [f32(4, 4)], lambda a: a.diagonal() * 1, True),
    ("as_strided", [f32(12)], lambda a: a.as_strided((3, 3), (3, 1), 1) * 1, True),
    # joins
    ("cat", [f32(2, 3), f32(1, 3)], lambda a, b: ember.cat([a, b], 0), True),
    ("stack", [f32(2, 3), f32(2, 3)], lambda a, b: ember.stack([a, b], 1), True),
    ("split", [f32(5, 3)], lambda a: a.split(2)[2] * 1, True),
    # indexing
    ("index_select", [f32(4, 3), i64(5, hi=4)], lambda a, i: a.index_select(0, i), True),
    ("gather", [f32(3, 4), i64(3, 2, hi=4)], lambda a, i: a.gather(1, i), True),
    ("advanced_index", [f32(4, 3), i64(5, hi=4)], lambda a, i: a[i], True),
    ("bool_mask", [f32(4, 3), b8(4, 3)], lambda a, m: a[m], True),
    ("masked_fill", [f32(4, 3), b8(4, 3)], lambda a, m: a.masked_fill(m, 0.5), True),
    ("scatter_add", [f32(3, 4), i64(3, 4, hi=4)],
     lambda a, i: ember.zeros(3, 4, dtype=ember.float64, device=a.device).scatter_add(1, i, a), True),
    ("setitem", [f32(4, 3), f32(3)], lambda a, b: _setitem(a, b), True),
    # nn functional
    ("relu_gelu_silu", [f32(3, 4)], lambda a: F.relu(a) + F.gelu(a) + F.silu(a), True),
    ("softmax", [f32(3, 5)], lambda a: F.softmax(a, 1) + F.log_softmax(a, 0), True),
    ("cross_entropy", [f32(4, 5), i64(4, hi=5)], lambda a, t: F.cross_entropy(a, t), True),
    ("mse_l1", [f32(4, 3), f32(4, 3)], lambda a, b: F.mse_loss(a, b) + F.l1_loss(a, b), True),
    ("bce_logits", [f32(4, 3), f32(4, 3, lo=0.0, hi=1.0)], lambda a, b: F.binary_cross_entropy_with_logits(a, b),
     True),
    ("conv2d", [f32(2, 2, 5, 5), f32(3, 2, 3, 3), f32(3)], lambda x, w, b: F.conv2d(x, w, b, padding=1), True),
    ("conv1d_stride", [f32(2, 2, 7), f32(3, 2, 3)], lambda x, w: F.conv1d(x, w, stride=2), True),
    ("unfold_fold", [f32(1, 2, 4, 4)], lambda x: F.fold(F.unfold(x, 2), (4, 4), 2), True),
    ("max_pool2d", [f32(2, 2, 4, 4)], lambda x: F.max_pool2d(x, 2), True),
    ("avg_pool2d", [f32(2, 2, 4, 4)], lambda x: F.avg_pool2d(x, 2), True),
    ("layer_norm", [f32(3, 4), f32(4), f32(4)], lambda x, w, b: F.layer_norm(x, (4,), w, b), True),
    ("batch_norm", [f32(4, 3, 2), f32(3), f32(3)],
     lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), True),
    ("group_norm", [f32(2, 4, 3), f32(4), f32(4)], lambda x, w, b: F.group_norm(x, 2, w, b), True),
    ("embedding", [i64(5, hi=6), f32(6, 3)], lambda i, w: F.embedding(i, w), True),
    ("embedding_bag_sum_max", [i64(6, hi=5), f32(5, 3)],
     lambda i, w: F.embedding_bag(i, w, ember.tensor([0, 2, 2], device=w.device))
     + F.embedding_bag(i, w, ember.tensor([0, 2, 2], device=w.device), mode="max"), True),
    ("lstm", [f32(4, 2, 3)], lambda x: _recurrent(ember.nn.LSTM, x)[0], True),
    ("gru_bidirectional", [f32(4, 2, 3)], lambda x: _recurrent(ember.nn.GRU, x, bidirectional=True)[0], True),
]


def _recurrent(layer, x, **options):
    """A recurrent layer with the same seeded float64 weights on either device, applied to ``x``."""
    ember.manual_seed(0)
    return layer(3, 5, **options).double().to(x.device)(x)


def _setitem(a, b):
    c = a * 1
    c[1] = b
    c[2:, 1] = 0.25
    return c


def _run(fn, specs, device, seed):
    rng = np.random.default_rng(seed)
    host = [_make(s, rng) for s in specs]
    inputs = []
    for t, s in zip(host, specs):
        x = t.to(device)
        if s[0] == "f":
            x = x.detach().requires_grad_()
        inputs.append(x)
    return inputs, fn(*inputs)


def _values(t):
    assert isinstance(t, ember.Tensor)
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("name, specs, fn, differentiable", OPS, ids=[row[0] for row in OPS])
def test_op_matches_cpu(name, specs, fn, differentiable):
    cpu_inputs, cpu_out = _run(fn, specs, "cpu", seed=1)
    cuda_inputs, cuda_out = _run(fn, specs, "cuda", seed=1)
    assert cuda_out.device == ember.device("cuda", 0), name
    assert cuda_out.dtype == cpu_out.dtype and cuda_out.shape == cpu_out.shape
    np.testing.assert_allclose(_values(cuda_out), _values(cpu_out), rtol=1e-10, atol=1e-12)
    if not differentiable:
        return
    w = np.random.default_rng(2).uniform(-1, 1, cpu_out.shape)
    (cpu_out * ember.tensor(w)).sum().backward()
    (cuda_out * ember.tensor(w, device="cuda")).sum().backward()
    for c, g in zip(cpu_inputs, cuda_inputs):
        if not c.requires_grad:
            continue
        assert (c.grad is None) == (g.grad is None)
        if c.grad is not None:
            assert g.grad.device == g.device
            np.testing.assert_allclose(_values(g.grad), _values(c.grad), rtol=1e-10, atol=1e-12)
