"""Attention and transformer layers against torch (weights moved through state_dict), plus gradchecks."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as nn
import ember.nn.functional as F

pytestmark = pytest.mark.filterwarnings("ignore:Support for mismatched:UserWarning")


def to_ember(t, requires_grad=False):
    x = ember.tensor(t.detach().numpy())
    return x.requires_grad_() if requires_grad else x


def assert_close(e, t, tol=1e-10):
    np.testing.assert_allclose(np.asarray(e.detach().numpy()), t.detach().numpy(), rtol=tol, atol=tol)


def make_pair(torch, kind, *args, **kwargs):
    t_mod = getattr(torch.nn, kind)(*args, **kwargs).double()
    e_mod = getattr(nn, kind)(*args, **kwargs).double()
    e_mod.load_state_dict({k: to_ember(v) for k, v in t_mod.state_dict().items()})
    return t_mod, e_mod


def assert_param_grads(e_mod, t_mod, tol=1e-10):
    t_params = dict(t_mod.named_parameters())
    for name, p in e_mod.named_parameters():
        assert p.grad is not None, name
        assert_close(p.grad, t_params[name].grad, tol)


# ---- scaled_dot_product_attention -----------------------------------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(batch=st.integers(1, 2), heads=st.integers(1, 3), length=st.integers(1, 4), source=st.integers(1, 5),
       dim=st.integers(1, 4), mask=st.sampled_from(["none", "bool", "float", "causal"]),
       scale=st.sampled_from([None, 0.3]), seed=st.integers(0, 2**16))
def test_sdpa_matches_torch(batch, heads, length, source, dim, mask, scale, seed):
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, length, dim, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(batch, heads, source, dim, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(batch, heads, source, 3, generator=g, dtype=torch.float64, requires_grad=True)
    kwargs_t, kwargs_e = dict(scale=scale), dict(scale=scale)
    if mask == "bool":
        m = torch.rand(length, source, generator=g) > 0.4
        kwargs_t["attn_mask"], kwargs_e["attn_mask"] = m, to_ember(m)
    elif mask == "float":
        m = torch.randn(batch, 1, length, source, generator=g, dtype=torch.float64)
        kwargs_t["attn_mask"], kwargs_e["attn_mask"] = m, to_ember(m)
    elif mask == "causal":
        kwargs_t["is_causal"] = kwargs_e["is_causal"] = True
    eq, ek, ev = to_ember(q, True), to_ember(k, True), to_ember(v, True)
    t_out = torch.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs_t)
    e_out = F.scaled_dot_product_attention(eq, ek, ev, **kwargs_e)
    assert_close(e_out, t_out)
    weights = torch.randn(t_out.shape, generator=g, dtype=torch.float64)
    (t_out * weights).sum().backward()
    (e_out * to_ember(weights)).sum().backward()
    for e_t, t_t in ((eq, q), (ek, k), (ev, v)):
        assert_close(e_t.grad, t_t.grad)


def test_sdpa_fully_masked_rows_give_zeros_and_finite_grads(torch_ref):
    torch = torch_ref
    q = torch.randn(1, 3, 2, dtype=torch.float64)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[1] = False
    t_out = torch.nn.functional.scaled_dot_product_attention(q, q.repeat(1, 2, 1)[:, :4], q.repeat(1, 2, 1)[:, :4],
                                                             attn_mask=mask)
    eq = to_ember(q, True)
    kv = ember.cat([eq, eq], 1)[:, :4]
    e_out = F.scaled_dot_product_attention(eq, kv, kv, attn_mask=to_ember(mask))
    assert_close(e_out, t_out)
    np.testing.assert_array_equal(e_out.detach().numpy()[0, 1], 0.0)
    e_out.sum().backward()
    assert np.isfinite(eq.grad.numpy()).all()


def test_sdpa_grouped_query_attention(torch_ref):
    torch = torch_ref
    q = torch.randn(2, 4, 3, 5, dtype=torch.float64)
    k = torch.randn(2, 2, 6, 5, dtype=torch.float64)
    v = torch.randn(2, 2, 6, 5, dtype=torch.float64)
    t_out = torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    e_out = F.scaled_dot_product_attention(to_ember(q), to_ember(k), to_ember(v), enable_gqa=True)
    assert_close(e_out, t_out)


def test_sdpa_dropout_zeroes_weights_and_rescales():
    ember.manual_seed(0)
    q = ember.zeros(1, 1, 64, 4)
    v = ember.ones(1, 1, 64, 4)
    out = F.scaled_dot_product_attention(q, q, v, dropout_p=0.5).numpy()
    # uniform weights 1/64, half dropped and the rest doubled: each output is (kept / 64) * 2, not all 1
    assert not np.allclose(out, 1.0)
    assert abs(out.mean() - 1.0) < 0.3
    assert np.allclose(F.scaled_dot_product_attention(q, q, v).numpy(), 1.0)


def test_sdpa_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(0)
    q, k, v = (ember.tensor(rng.standard_normal((1, 2, 3, 2))).requires_grad_() for _ in range(3))
    mask = ember.tensor(np.tril(np.ones((2, 3, 3), bool)))

    def fn(a, b, c):
        return F.scaled_dot_product_attention(a, b, c, attn_mask=mask)

    assert ember.autograd.gradcheck(fn, (q, k, v))
    assert ember.autograd.gradgradcheck(fn, (q, k, v))


def test_sdpa_errors():
    q = ember.zeros(1, 2, 3)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(2, 2, dtype=ember.bool), is_causal=True)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, q.double(), q)


# ---- MultiheadAttention ---------------------------------------------------------------------------------------------

MHA_CONFIGS = [
    dict(),
    dict(bias=False),
    dict(add_bias_kv=True, add_zero_attn=True),
    dict(kdim=3, vdim=5),
    dict(batch_first=True),
]


@pytest.mark.parametrize("config", MHA_CONFIGS)
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("masks", ["none", "bool", "float"])
def test_multihead_attention_matches_torch(torch_ref, config, need_weights, average, masks):
    torch = torch_ref
    t_mod, e_mod = make_pair(torch, "MultiheadAttention", 6, 2, **config)
    g = torch.Generator().manual_seed(3)
    batch_first = config.get("batch_first", False)
    kdim, vdim = config.get("kdim", 6), config.get("vdim", 6)

    def seq(length, width):
        shape = (2, length, width) if batch_first else (length, 2, width)
        return torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True)

    q = seq(4, 6)
    k, v = (seq(5, kdim), seq(5, vdim)) if "kdim" in config else (q, q)
    kwargs_t = dict(need_weights=need_weights, average_attn_weights=average)
    src = 5 if "kdim" in config else 4
    if masks == "bool":
        kpm = torch.zeros(2, src, dtype=torch.bool)
        kpm[1, -2:] = True
        am = torch.zeros(4, src, dtype=torch.bool)
        am[0, 1] = True
        kwargs_t.update(key_padding_mask=kpm, attn_mask=am)
    elif masks == "float":
        kwargs_t.update(key_padding_mask=torch.randn(2, src, generator=g, dtype=torch.float64),
                        attn_mask=torch.randn(2 * 2, 4, src, generator=g, dtype=torch.float64))
    kwargs_e = {n: to_ember(t) if isinstance(t, torch.Tensor) else t for n, t in kwargs_t.items()}
    eq = to_ember(q, True)
    ek, ev = (to_ember(k, True), to_ember(v, True)) if "kdim" in config else (eq, eq)
    t_out, t_w = t_mod(q, k, v, **kwargs_t)
    e_out, e_w = e_mod(eq, ek, ev, **kwargs_e)
    assert_close(e_out, t_out)
    if need_weights:
        assert tuple(e_w.shape) == tuple(t_w.shape)
        assert_close(e_w, t_w)
    else:
        assert e_w is None
    (t_out * t_out).sum().backward()
    (e_out * e_out).sum().backward()
    assert_close(eq.grad, q.grad)
    if "kdim" in config:
        assert_close(ek.grad, k.grad)
        assert_close(ev.grad, v.grad)
    assert_param_grads(e_mod, t_mod)


def test_multihead_attention_unbatched_and_causal(torch_ref):
    torch = torch_ref
    t_mod, e_mod = make_pair(torch, "MultiheadAttention", 4, 2)
    x = torch.randn(5, 4, dtype=torch.float64)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    t_out, t_w = t_mod(x, x, x, attn_mask=mask, is_causal=True, need_weights=True)
    e_out, e_w = e_mod(to_ember(x), to_ember(x), to_ember(x), attn_mask=to_ember(mask), is_causal=True)
    assert tuple(e_out.shape) == (5, 4) and tuple(e_w.shape) == (5, 5)
    assert_close(e_out, t_out)
    assert_close(e_w, t_w)
    assert np.all(np.triu(e_w.detach().numpy(), 1) == 0)


def test_multihead_attention_parameters_init_and_repr(torch_ref):
    torch = torch_ref
    for kwargs in (dict(), dict(kdim=3, vdim=5, add_bias_kv=True, bias=False)):
        t_mod, e_mod = torch.nn.MultiheadAttention(8, 4, **kwargs), nn.MultiheadAttention(8, 4, **kwargs)
        assert repr(e_mod) == repr(t_mod)
        assert [(k, tuple(v.shape)) for k, v in e_mod.state_dict().items()] == \
               [(k, tuple(v.shape)) for k, v in t_mod.state_dict().items()]
    mha = nn.MultiheadAttention(8, 4)
    assert isinstance(mha.out_proj, nn.Linear)
    np.testing.assert_array_equal(mha.in_proj_bias.detach().numpy(), 0.0)
    np.testing.assert_array_equal(mha.out_proj.bias.detach().numpy(), 0.0)
    bound = math.sqrt(6.0 / (8 + 24))  # xavier_uniform_ on (3E, E)
    w = mha.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and w.std() > bound / 4


def test_multihead_attention_errors():
    mha = nn.MultiheadAttention(4, 2)
    x = ember.zeros(3, 2, 4)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mha(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is"):
        mha(x, x, x, attn_mask=ember.zeros(3, 4))
    with pytest.raises(AssertionError, match="expected `key` and `value` to be 3-D"):
        mha(x, x[0], x[0])
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(5, 2)
    with pytest.raises(ValueError, match="must be greater than 0"):
        nn.MultiheadAttention(0, 2)


# ---- Transformer layers ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer_matches_torch(torch_ref, norm_first, activation, batch_first):
    torch = torch_ref
    t_mod, e_mod = make_pair(torch, "TransformerEncoderLayer", 8, 2, 16, dropout=0.0, activation=activation,
                             norm_first=norm_first, batch_first=batch_first)
    x = torch.randn(3, 5, 8, dtype=torch.float64, requires_grad=True)
    kpm = torch.zeros(3 if batch_first else 5, 5 if batch_first else 3, dtype=torch.bool)
    kpm[-1, -1] = True
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5 if batch_first else 3, dtype=torch.float64)
    t_out = t_mod(x, src_mask=mask, src_key_padding_mask=kpm)
    ex = to_ember(x, True)
    e_out = e_mod(ex, src_mask=to_ember(mask), src_key_padding_mask=to_ember(kpm))
    assert_close(e_out, t_out)
    (t_out ** 2).sum().backward()
    (e_out ** 2).sum().backward()
    assert_close(ex.grad, x.grad)
    assert_param_grads(e_mod, t_mod)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(torch_ref, norm_first):
    torch = torch_ref
    t_mod, e_mod = make_pair(torch, "TransformerDecoderLayer", 8, 2, 16, dropout=0.0, norm_first=norm_first,
                             activation=torch.nn.functional.gelu)
    e_mod.activation = F.gelu
    tgt = torch.randn(4, 2, 8, dtype=torch.float64, requires_grad=True)
    memory = torch.randn(6, 2, 8, dtype=torch.float64, requires_grad=True)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    mkpm = torch.zeros(2, 6, dtype=torch.bool)
    mkpm[0, 4:] = True
    t_out = t_mod(tgt, memory, tgt_mask=mask, memory_key_padding_mask=mkpm, tgt_is_causal=True)
    et, em = to_ember(tgt, True), to_ember(memory, True)
    e_out = e_mod(et, em, tgt_mask=to_ember(mask), memory_key_padding_mask=to_ember(mkpm), tgt_is_causal=True)
    assert_close(e_out, t_out)
    (t_out ** 2).sum().backward()
    (e_out ** 2).sum().backward()
    assert_close(et.grad, tgt.grad)
    assert_close(em.grad, memory.grad)
    assert_param_grads(e_mod, t_mod)


def test_transformer_matches_torch(torch_ref):
    torch = torch_ref
    t_mod, e_mod = make_pair(torch, "Transformer", 8, 2, 2, 2, 16, dropout=0.0, batch_first=True)
    src = torch.randn(2, 6, 8, dtype=torch.float64, requires_grad=True)
    tgt = torch.randn(2, 4, 8, dtype=torch.float64, requires_grad=True)
    t_mask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    e_mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=ember.float64)
    np.testing.assert_array_equal(e_mask.numpy(), t_mask.numpy())
    skpm = torch.zeros(2, 6, dtype=torch.bool)
    skpm[1, -1] = True
    t_out = t_mod(src, tgt, tgt_mask=t_mask, src_key_padding_mask=skpm, memory_key_padding_mask=skpm)
    es, et = to_ember(src, True), to_ember(tgt, True)
    e_out = e_mod(es, et, tgt_mask=e_mask, src_key_padding_mask=to_ember(skpm),
                  memory_key_padding_mask=to_ember(skpm))
    assert_close(e_out, t_out, 1e-9)
    t_out.sum().backward()
    e_out.sum().backward()
    assert_close(es.grad, src.grad, 1e-9)
    assert_close(et.grad, tgt.grad, 1e-9)
    assert_param_grads(e_mod, t_mod, 1e-9)


def test_encoder_stack_deep_copies_layers_and_applies_norm(torch_ref):
    torch = torch_ref
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    stack = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(8))
    assert len(stack.layers) == 3
    assert stack.layers[0].linear1.weight is not stack.layers[1].linear1.weight
    copied, original = stack.layers[2].linear1.weight, layer.linear1.weight
    np.testing.assert_array_equal(copied.detach().numpy(), original.detach().numpy())
    t_layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).double()
    t_stack = torch.nn.TransformerEncoder(t_layer, 3, norm=torch.nn.LayerNorm(8).double(), enable_nested_tensor=False)
    stack = stack.double()
    stack.load_state_dict({k: to_ember(v) for k, v in t_stack.state_dict().items()})
    x = torch.randn(5, 2, 8, dtype=torch.float64)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    assert_close(stack(to_ember(x), mask=to_ember(mask)), t_stack(x, mask=mask))


def test_transformer_defaults_repr_and_init(torch_ref):
    torch = torch_ref
    t_mod = torch.nn.TransformerEncoderLayer(8, 2)
    e_mod = nn.TransformerEncoderLayer(8, 2)
    assert repr(e_mod) == repr(t_mod)
    assert e_mod.linear1.out_features == 2048 and e_mod.dropout.p == 0.1 and e_mod.norm1.eps == 1e-5
    model = nn.Transformer(8, 2, 1, 1, 16)
    bound = math.sqrt(6.0 / (16 + 8))
    w = model.encoder.layers[0].linear1.weight.detach().numpy()  # xavier_uniform_ over (16, 8)
    assert np.abs(w).max() <= bound and w.std() > bound / 4
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(ember.zeros(3, 2, 8), ember.zeros(3, 1, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(ember.zeros(3, 2, 8), ember.zeros(3, 2, 4))


def test_dropout_in_layers_only_while_training():
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = ember.randn(4, 2, 8)
    layer.eval()
    a, b = layer(x), layer(x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    layer.train()
    assert not np.allclose(layer(x).detach().numpy(), a.detach().numpy())
