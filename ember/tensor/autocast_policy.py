"""Autocast's state and torch's per-op policy: which dtype an op's floating inputs take in an autocast region.

torch keeps, per thread and per device type ("cpu", "cuda"), whether autocast is on and its lower-precision
dtype (bfloat16 on the CPU, float16 on CUDA by default), plus a nesting count and a cache of weight casts;
``ember.amp`` sets them (``autocast``, ``set_autocast_enabled``, ...). An op that autocast covers starts with

    if autocast_policy.ACTIVE and autocast_policy.covers("mm", input):
        return autocast_policy.run("mm", mm, input, mat2)

(``ACTIVE`` counts the regions switched on in any thread: one test while autocast is off; ``covers`` asks the
rest). ``run`` casts the tensors by the op's policy for the device type of its first tensor, as torch 2.13's
``autocast_mode.cpp`` lists them, and calls the op again with nested autocast suspended, as torch runs an
autocast kernel's body with the autocast key excluded (an op torch computes in one kernel, ``mv`` on the CPU,
does not autocast the products it is written with here). Composite ops torch decomposes are not covered: their
parts are.

- ``LOWER``: every eligible tensor (floating, not float64, on that device type) to the autocast dtype (matmul,
  linear, convolutions, the batched products, ...). Casts of float32 leaves that require grad (weights) are
  cached until the outermost region exits, when ``cache_enabled``;
- ``FP32``: eligible tensors to float32 (losses everywhere; on CUDA also exp/log/pow, norms, softmax, sums...);
- ``PROMOTE``: eligible tensors to the widest floating dtype among them (cat, stack; on CUDA also addcmul, ...);
- ``BANNED``: torch's error (CUDA's binary_cross_entropy);
- ``KEEP``: nothing cast, for an op torch computes in one kernel that the device's lists leave out.

Ops given an explicit ``dtype=`` and in-place forms are not cast (their entry points don't ask).
"""
from __future__ import annotations

import threading
from typing import Any

from . import dtypes
from .tensor import Tensor

__all__ = ["ACTIVE", "BANNED", "FP32", "KEEP", "LOWER", "POLICIES", "PROMOTE", "clear_cache", "covers",
           "default_dtype", "run", "set_enabled", "state"]

LOWER, FP32, PROMOTE, BANNED, KEEP = "lower_precision_fp", "fp32", "promote", "banned", "keep"

_LOWER_BOTH = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu",
               "mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm", "linear", "einsum", "vecdot",
               "scaled_dot_product_attention")
_FP32_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy", "kl_div",
                "cosine_embedding_loss", "hinge_embedding_loss", "poisson_nll_loss", "margin_ranking_loss",
                "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
                "binary_cross_entropy_with_logits")

# device type -> op -> policy. ``KEEP``: an op torch computes in one kernel outside the device's lists, run as it
# is with the ops it is written with here left uncast (``mv`` on the CPU stays float32, its product included).
POLICIES: dict[str, dict[str, str]] = {
    "cpu": {
        **dict.fromkeys(_LOWER_BOTH, LOWER),
        **dict.fromkeys(_FP32_LOSSES + (
            "binary_cross_entropy", "ctc_loss", "cdist", "prod", "quantile", "nanquantile", "trace", "grid_sample",
            "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d", "max_unpool2d", "max_unpool3d",
            "reflection_pad", "replication_pad"), FP32),
        **dict.fromkeys(("cat", "stack", "index_copy"), PROMOTE),
        **dict.fromkeys(("mv", "addmv", "addr", "dot", "vdot", "bilinear", "lstm_cell", "gru_cell"), KEEP),
    },
    "cuda": {
        **dict.fromkeys(_LOWER_BOTH + ("addmv", "addr", "mv", "multi_dot", "lstm_cell", "gru_cell", "rnn_tanh_cell",
                                       "rnn_relu_cell"), LOWER),
        **dict.fromkeys(_FP32_LOSSES + (
            "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
            "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm", "rms_norm", "norm",
            "cosine_similarity", "dist", "pdist", "cdist", "renorm", "logsumexp", "interpolate", "softmax",
            "log_softmax", "cumsum", "cumprod", "sum", "prod", "vector_norm", "matrix_norm"), FP32),
        **dict.fromkeys(("cat", "stack", "index_copy", "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot",
                         "vdot", "grid_sample", "index_put", "scatter_add", "tensordot"), PROMOTE),
        "binary_cross_entropy": BANNED,
    },
}

_BANNED_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")

_DEFAULT_DTYPES = {"cpu": dtypes.bfloat16, "cuda": dtypes.float16}


def default_dtype(device_type: str) -> dtypes.dtype:
    """The lower-precision dtype autocast starts with on ``device_type`` (torch's: bfloat16 on the CPU, else
    float16)."""
    return _DEFAULT_DTYPES.get(device_type, dtypes.float16)


class _ThreadState(threading.local):
    """One thread's autocast state (torch's is thread-local)."""

    def __init__(self) -> None:
        self.enabled: dict[str, bool] = {}
        self.dtype: dict[str, dtypes.dtype] = {}
        self.nesting = 0
        self.cache_enabled = True
        self.cache: dict[int, tuple[Tensor, Tensor]] = {}  # id(weight) -> (weight, its cast), kept alive together
        self.inside = False  # running the body of an op ``run`` cast for: nested ops are not cast again


state = _ThreadState()
# (thread, device type) pairs with autocast on, in all threads; changed under ``_LOCK`` by ``set_enabled``
ACTIVE = 0
_LOCK = threading.Lock()


def set_enabled(device_type: str, enabled: bool) -> None:
    """Switch autocast on or off for ``device_type`` in this thread (``ember.set_autocast_enabled``)."""
    global ACTIVE
    was = state.enabled.get(device_type, False)
    if was != enabled:
        with _LOCK:
            ACTIVE += 1 if enabled else -1
    state.enabled[device_type] = enabled


def clear_cache() -> None:
    """Forget this thread's cached weight casts (``ember.clear_autocast_cache``; the outermost region's exit)."""
    state.cache.clear()


def _eligible(t: Any, device_type: str) -> bool:
    return isinstance(t, Tensor) and t.dtype.is_floating_point and t.dtype is not dtypes.float64 \
        and t.device.type == device_type


def _cached_cast(t: Tensor, to: dtypes.dtype) -> Tensor:
    """``t.to(to)``, remembered for a float32 leaf that requires grad (a weight) while the cache is on."""
    if not (state.cache_enabled and t.dtype is dtypes.float32 and t.requires_grad and t.is_leaf):
        return t.to(to)
    found = state.cache.get(id(t))
    if found is None or found[1].dtype is not to:
        found = state.cache[id(t)] = (t, t.to(to))
    return found[1]


def _tensors(values: Any):
    """The tensors among ``values``, looking one level into lists and tuples (cat's and stack's sequences)."""
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, Tensor))


def _target(op: str, device_type: str, tensors: list[Tensor]) -> tuple[str, dtypes.dtype] | None:
    """(policy, dtype) of ``op`` on ``device_type`` in this thread now; None when it casts nothing."""
    policy = POLICIES.get(device_type, {}).get(op)
    if policy is None:
        return None
    if policy == BANNED:
        raise RuntimeError(_BANNED_MESSAGE)
    if policy == KEEP:
        return None
    if policy == FP32:
        return policy, dtypes.float32
    to = state.dtype.get(device_type) or default_dtype(device_type)
    if policy == PROMOTE:  # the widest floating dtype among the eligible tensors, from the autocast dtype up
        for t in tensors:
            if _eligible(t, device_type):
                to = dtypes.promote_types(to, t.dtype)
    return policy, to


def covers(op: str, first: Any) -> bool:
    """Whether autocast applies to op ``op`` now, in this thread, for its first tensor argument ``first`` (or a
    sequence starting with it): on for that device type, ``op`` in its policy, and not inside another covered op.
    Composite ops that are not covered leave the decision to the ops they are written with."""
    if state.inside:
        return False
    if isinstance(first, (list, tuple)):
        first = next((t for t in first if isinstance(t, Tensor)), None)
    if not isinstance(first, Tensor):
        return False
    device_type = first.device.type
    return bool(state.enabled.get(device_type)) and op in POLICIES.get(device_type, ())


def run(op: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, the entry point of op ``op`` (which ``covers`` says autocast applies to), with its
    tensors (and those in list or tuple arguments) cast by ``op``'s policy for the autocast state of their device
    type in this thread, and the ops inside it left uncast."""
    tensors = list(_tensors((*args, *kwargs.values())))
    device_type = tensors[0].device.type
    target = _target(op, device_type, tensors)
    if target is not None:
        policy, to = target

        def one(a: Any) -> Any:
            if not _eligible(a, device_type) or a.dtype is to:
                return a
            return _cached_cast(a, to) if policy == LOWER else a.to(to)

        def cast(v: Any) -> Any:
            if isinstance(v, (list, tuple)) and any(isinstance(a, Tensor) for a in v):
                return (list if isinstance(v, list) else tuple)(one(a) for a in v)
            return one(v)

        args = tuple(cast(a) for a in args)
        kwargs = {k: cast(v) for k, v in kwargs.items()}
    state.inside = True
    try:
        return fn(*args, **kwargs)
    finally:
        state.inside = False
