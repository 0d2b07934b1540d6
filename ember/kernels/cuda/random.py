"""Device random numbers: the Philox4x32-10 counter-based generator (Salmon et al., SC'11; what cuRAND and
torch's CUDA generator use) as CUDA device functions, and fill kernels built on it.

A draw is a pure function of (seed, offset, element index): the 64-bit seed is the Philox key, the counter is
(block index j as two 32-bit words, offset as two words), and one Philox call gives four 32-bit words for the
elements of block j. No state lives on the device, so any grid computes the same numbers. ``offset`` comes from
the host: ``ember.cuda.random.generator_state(i).next_seed_offset()`` hands every call a fresh one (consecutive
calls differ; ``ember.cuda.manual_seed`` replays them). Each call owns a 2**64-block counter range, so calls
never overlap.

Conversions: float32 uniforms use 24 random bits (four per Philox call), float64 uniforms 53 bits (two per
call); normals are Box-Muller pairs (computed in float64); Bernoulli compares 32 random bits with p; integers
in [low, high] take one word modulo the range when it spans at most 2**32 values, else two words (torch's rule,
with its small modulo bias). Uniform values lie in [low, high): a value that rounds up to ``high`` in the output
dtype is replaced by ``low``.

All arithmetic is done in uint64 on values below 2**32 (the 32x32-bit products fit), so there is no overflow,
on a GPU or in Numba's simulator. Kernels fill ``buffer[:n]`` of a flat 1-D device array; ``DeviceDraws`` fills
device storage of any layout (directly when it is contiguous in the kernel's dtype, else through a contiguous
buffer and a copy) and derives the other distributions from device uniforms with device elementwise math.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import cuda

from ..._cuda_context import active
from ..common.dtypes import BFLOAT16, NARROW_FLOATS
from .launch import grid
from .ndarray import is_device_array
from .storage import DeviceStorage

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint64(0x9E3779B9)
_W1 = np.uint64(0xBB67AE85)
_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)
_SHIFT5 = np.uint64(5)
_SHIFT6 = np.uint64(6)
_SHIFT8 = np.uint64(8)
_TWO_POW_26 = 67108864.0
_TWO_POW_M24 = 1.0 / 16777216.0
_TWO_POW_M32 = 1.0 / 4294967296.0
_TWO_POW_M53 = 1.0 / 9007199254740992.0
_TWO_PI = 2.0 * math.pi
_SIGN64 = np.uint64(1 << 63)


@cuda.jit(device=True)
def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Ten Philox4x32 rounds of the counter (c0..c3) under key (k0, k1); all uint64 holding 32-bit words."""
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        n0 = (p1 >> _SHIFT32) ^ c1 ^ k0
        n2 = (p0 >> _SHIFT32) ^ c3 ^ k1
        c1 = p1 & _LOW32
        c3 = p0 & _LOW32
        c0 = n0
        c2 = n2
        k0 = (k0 + _W0) & _LOW32
        k1 = (k1 + _W1) & _LOW32
    return c0, c1, c2, c3


@cuda.jit(device=True)
def _block_words(j, k0, k1, c2, c3):
    """The four random words of block ``j`` of one call."""
    jj = np.uint64(j)
    return philox4x32_10(jj & _LOW32, jj >> _SHIFT32, c2, c3, k0, k1)


@cuda.jit(device=True)
def _u24(w):
    """A float64 in [0, 1) with 24 random bits (exact in float32)."""
    return np.float64(w >> _SHIFT8) * _TWO_POW_M24


@cuda.jit(device=True)
def _u53(wa, wb):
    """A float64 in [0, 1) with 53 random bits from two words."""
    return (np.float64(wa >> _SHIFT5) * _TWO_POW_26 + np.float64(wb >> _SHIFT6)) * _TWO_POW_M53


@cuda.jit(device=True)
def _put_uniform(out, i, n, u, low, span, high):
    if i < n:
        out[i] = low + span * u
        if out[i] >= high:
            out[i] = low


@cuda.jit(device=True)
def _put_normal_pair(out, i, n, u1, u2, mean, std):
    """Box-Muller: two normals from u1 in (0, 1] and u2 in [0, 1), written to out[i] and out[i + 1]."""
    radius = math.sqrt(-2.0 * math.log(u1))
    angle = _TWO_PI * u2
    if i < n:
        out[i] = mean + std * radius * math.cos(angle)
    if i + 1 < n:
        out[i + 1] = mean + std * radius * math.sin(angle)


@cuda.jit
def _bits_kernel(out, n, k0, k1, c2, c3):
    for j in range(cuda.grid(1), (n + 3) // 4, cuda.gridsize(1)):
        w0, w1, w2, w3 = _block_words(j, k0, k1, c2, c3)
        i = 4 * j
        out[i] = w0
        if i + 1 < n:
            out[i + 1] = w1
        if i + 2 < n:
            out[i + 2] = w2
        if i + 3 < n:
            out[i + 3] = w3


@cuda.jit
def _uniform_kernel(out, n, k0, k1, c2, c3, low, span, high, wide):
    per = 2 if wide else 4
    for j in range(cuda.grid(1), (n + per - 1) // per, cuda.gridsize(1)):
        w0, w1, w2, w3 = _block_words(j, k0, k1, c2, c3)
        i = per * j
        if wide:
            _put_uniform(out, i, n, _u53(w0, w1), low, span, high)
            _put_uniform(out, i + 1, n, _u53(w2, w3), low, span, high)
        else:
            _put_uniform(out, i, n, _u24(w0), low, span, high)
            _put_uniform(out, i + 1, n, _u24(w1), low, span, high)
            _put_uniform(out, i + 2, n, _u24(w2), low, span, high)
            _put_uniform(out, i + 3, n, _u24(w3), low, span, high)


@cuda.jit
def _normal_kernel(out, n, k0, k1, c2, c3, mean, std, wide):
    per = 2 if wide else 4
    for j in range(cuda.grid(1), (n + per - 1) // per, cuda.gridsize(1)):
        w0, w1, w2, w3 = _block_words(j, k0, k1, c2, c3)
        i = per * j
        if wide:
            _put_normal_pair(out, i, n, 1.0 - _u53(w0, w1), _u53(w2, w3), mean, std)
        else:
            _put_normal_pair(out, i, n, 1.0 - _u24(w0), _u24(w1), mean, std)
            _put_normal_pair(out, i + 2, n, 1.0 - _u24(w2), _u24(w3), mean, std)


@cuda.jit(device=True)
def _put_bernoulli(out, i, n, w, probs, p_step):
    if i < n:
        out[i] = 1 if np.float64(w) * _TWO_POW_M32 < probs[i * p_step] else 0


@cuda.jit
def _bernoulli_kernel(out, n, k0, k1, c2, c3, probs, p_step):
    for j in range(cuda.grid(1), (n + 3) // 4, cuda.gridsize(1)):
        w0, w1, w2, w3 = _block_words(j, k0, k1, c2, c3)
        i = 4 * j
        _put_bernoulli(out, i, n, w0, probs, p_step)
        _put_bernoulli(out, i + 1, n, w1, probs, p_step)
        _put_bernoulli(out, i + 2, n, w2, probs, p_step)
        _put_bernoulli(out, i + 3, n, w3, probs, p_step)


@cuda.jit(device=True)
def _put_integer(out, i, n, v, low, low_shifted, span):
    """out[i] = low + v mod span (span 0: the full 2**64 range), never overflowing int64.

    A reduced value at or above 2**63 only occurs for ranges wider than 2**63 (so low < 0): it is added as
    (low + 2**63) + (v - 2**63), both terms in [0, 2**63)."""
    if i < n:
        if span != 0:
            v = v % span
        if v >= _SIGN64:
            out[i] = low_shifted + np.int64(v - _SIGN64)
        else:
            out[i] = low + np.int64(v)


@cuda.jit
def _integers_kernel(out, n, k0, k1, c2, c3, low, low_shifted, span, wide):
    per = 2 if wide else 4
    for j in range(cuda.grid(1), (n + per - 1) // per, cuda.gridsize(1)):
        w0, w1, w2, w3 = _block_words(j, k0, k1, c2, c3)
        i = per * j
        if wide:
            _put_integer(out, i, n, (w0 << _SHIFT32) | w1, low, low_shifted, span)
            _put_integer(out, i + 1, n, (w2 << _SHIFT32) | w3, low, low_shifted, span)
        else:
            _put_integer(out, i, n, w0, low, low_shifted, span)
            _put_integer(out, i + 1, n, w1, low, low_shifted, span)
            _put_integer(out, i + 2, n, w2, low, low_shifted, span)
            _put_integer(out, i + 3, n, w3, low, low_shifted, span)


# ------------------------------------------------------------------------------------------------------ launchers
_U64 = (1 << 64) - 1


def _key_counter(seed: int, offset: int) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64]:
    """(k0, k1, c2, c3): the Philox key from the seed and the high counter words from the offset."""
    seed, offset = int(seed) & _U64, int(offset) & _U64
    return (np.uint64(seed & 0xFFFFFFFF), np.uint64(seed >> 32),
            np.uint64(offset & 0xFFFFFFFF), np.uint64(offset >> 32))


def _check(op: str, buffer: Any, n: int, kinds: str) -> None:
    if len(buffer.shape) != 1:
        raise ValueError(f"{op}: expected a flat 1-D device buffer, got shape {tuple(buffer.shape)}")
    if not 0 <= n <= buffer.shape[0]:
        raise ValueError(f"{op}: n={n} is outside [0, {buffer.shape[0]}] (the buffer's length)")
    if np.dtype(buffer.dtype).kind not in kinds:
        raise TypeError(f"{op}: unsupported buffer dtype {np.dtype(buffer.dtype)}")


def _launch(kernel: Any, n: int, per: int, stream: Any, *args: Any) -> None:
    blocks, threads = grid(-(-n // per))
    kernel[blocks, threads, stream](*args)


def random_bits_(buffer: Any, n: int, seed: int, offset: int, stream: Any = 0) -> None:
    """Fill ``buffer[:n]`` (uint32) with random 32-bit words (e.g. dropout's ``bits``)."""
    _check("random_bits_", buffer, n, "u")
    if np.dtype(buffer.dtype) != np.uint32:
        raise TypeError(f"random_bits_: expected a uint32 buffer, got {np.dtype(buffer.dtype)}")
    if n:
        _launch(_bits_kernel, n, 4, stream, buffer, n, *_key_counter(seed, offset))


def uniform_(buffer: Any, n: int, seed: int, offset: int, low: float = 0.0, high: float = 1.0,
             stream: Any = 0) -> None:
    """Fill ``buffer[:n]`` (float32/float64) with uniform values in [low, high)."""
    _check("uniform_", buffer, n, "f")
    if not low <= high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}")
    if not (math.isfinite(low) and math.isfinite(high - low)):
        raise RuntimeError(f"uniform_: from={low} and to={high} must be finite with a finite range")
    if n:
        wide = np.dtype(buffer.dtype).itemsize == 8
        _launch(_uniform_kernel, n, 2 if wide else 4, stream, buffer, n, *_key_counter(seed, offset),
                float(low), float(high) - float(low), float(high), wide)


def normal_(buffer: Any, n: int, seed: int, offset: int, mean: float = 0.0, std: float = 1.0,
            stream: Any = 0) -> None:
    """Fill ``buffer[:n]`` (float32/float64) with normal values of the given mean and standard deviation."""
    _check("normal_", buffer, n, "f")
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if n:
        wide = np.dtype(buffer.dtype).itemsize == 8
        _launch(_normal_kernel, n, 2 if wide else 4, stream, buffer, n, *_key_counter(seed, offset),
                float(mean), float(std), wide)


_P_CACHE: dict[tuple[int, float], Any] = {}  # (device, p): p on that device


def bernoulli_(buffer: Any, n: int, seed: int, offset: int, p: Any = 0.5, stream: Any = 0) -> None:
    """Fill ``buffer[:n]`` (bool, integer or float) with 1 where a draw falls below ``p`` and 0 elsewhere.

    ``p`` is a probability in [0, 1] or a flat float device array of ``n`` per-element probabilities (already
    checked by the caller to lie in [0, 1]).
    """
    _check("bernoulli_", buffer, n, "biuf")
    if isinstance(p, (int, float, np.number)):
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        probs = _P_CACHE.get((active.index, p))
        if probs is None:
            if len(_P_CACHE) >= 64:
                _P_CACHE.clear()
            probs = _P_CACHE[(active.index, p)] = cuda.to_device(np.array([p], dtype=np.float64))
        step = 0
    else:
        _check("bernoulli_ (p)", p, n, "f")
        probs, step = p, 1
    if n:
        _launch(_bernoulli_kernel, n, 4, stream, buffer, n, *_key_counter(seed, offset), probs, step)


def integers_(buffer: Any, n: int, seed: int, offset: int, low: int, high: int, stream: Any = 0) -> None:
    """Fill ``buffer[:n]`` (int64) with integers drawn from [low, high] (both ends included, int64 values)."""
    _check("integers_", buffer, n, "i")
    if np.dtype(buffer.dtype) != np.int64:
        raise TypeError(f"integers_: expected an int64 buffer, got {np.dtype(buffer.dtype)}")
    if not -(1 << 63) <= low <= high < (1 << 63):
        raise RuntimeError(f"integers_: expected int64 bounds with low <= high, got low={low}, high={high}")
    if n:
        span = high - low + 1
        wide = span > 1 << 32
        _launch(_integers_kernel, n, 2 if wide else 4, stream, buffer, n, *_key_counter(seed, offset), np.int64(low),
                np.int64(low + (1 << 63) if low < 0 else 0), np.uint64(span & _U64), wide)


# ------------------------------------------------------------------------------------------- device storage draws
class DeviceDraws:
    """The random draws sampling ops need, on device storage, from one CUDA generator.

    ``state`` hands out (seed, offset) pairs (``ember.cuda.random.CudaGeneratorState``): every kernel launch
    takes a fresh offset, so its numbers are new and reseeding replays them. The ``fill_*`` methods write into
    storage of any layout; the others return new contiguous storage. The host twin is
    ``ember.tensor.random_ops._HostDraws``.
    """

    __slots__ = ("_state",)

    def __init__(self, state: Any) -> None:
        self._state = state

    def _new(self, shape: tuple[int, ...], dtype: Any, fill: Any, *args: Any) -> DeviceStorage:
        if np.dtype(dtype) == BFLOAT16:  # drawn in float32, rounded once (the kernels write NumPy dtypes only)
            return self._new(shape, np.float32, fill, *args).astype(BFLOAT16)
        out = DeviceStorage.empty(shape, dtype)
        fill(out.buffer, out.size, *self._state.next_seed_offset(), *args)
        return out

    def _write(self, a: DeviceStorage, dtype: Any, fill: Any, *args: Any) -> None:
        """Fill ``a`` in place when it is contiguous in ``dtype``, else through a new buffer and a copy."""
        if a.is_contiguous and a.dtype == np.dtype(dtype) and a.dtype != BFLOAT16:
            fill(a.buffer[a.offset:a.offset + a.size], a.size, *self._state.next_seed_offset(), *args)
        else:
            a[...] = self._new(a.shape, dtype, fill, *args)

    def bits(self, n: int) -> DeviceStorage:
        """``n`` uint32 words of random bits (dropout masks)."""
        return self._new((n,), np.uint32, random_bits_)

    def uniform(self, shape: tuple[int, ...], dtype: Any) -> DeviceStorage:
        """Uniform values in [0, 1) of a float dtype."""
        return self._new(shape, dtype, uniform_, 0.0, 1.0)

    def standard_normal(self, shape: tuple[int, ...], dtype: Any) -> DeviceStorage:
        return self._new(shape, dtype, normal_, 0.0, 1.0)

    def standard_exponential(self, shape: tuple[int, ...], dtype: Any) -> DeviceStorage:
        """-log(1 - u): 1 - u lies in (0, 1], so every value is finite."""
        return -np.log1p(-self.uniform(shape, dtype))

    def geometric(self, p: float, shape: tuple[int, ...]) -> DeviceStorage:
        """Trials to the first success (1, 2, ...) as float64: ceil(log(1 - u) / log(1 - p)), at least 1."""
        return np.maximum(np.ceil(np.log1p(-self.uniform(shape, np.float64)) / math.log1p(-p)), 1.0)

    def fill_uniform(self, a: DeviceStorage, low: float, high: float) -> None:
        if a.dtype in NARROW_FLOATS:  # as on the host: steps of 2**-digits, so that no draw rounds up to 1
            steps = 2.0 ** (np.finfo(a.dtype).nmant + 1)
            unit = np.floor(self.uniform(a.shape, np.float32) * np.float32(steps)) * np.float32(1.0 / steps)
            a[...] = unit * np.float32(high - low) + np.float32(low)
            return
        self._write(a, a.dtype, uniform_, low, high)

    def fill_normal(self, a: DeviceStorage, mean: Any, std: Any) -> None:
        """Normal values; ``mean`` and ``std`` are numbers or device storage broadcastable to ``a``."""
        if is_device_array(mean) or is_device_array(std):
            a[...] = self.standard_normal(a.shape, a.dtype) * _cast(std, a.dtype) + _cast(mean, a.dtype)
        else:
            self._write(a, a.dtype, normal_, mean, std)

    def fill_integers(self, a: DeviceStorage, low: int, high: int) -> None:
        """Integers in [low, high], both included."""
        self._write(a, np.int64, integers_, low, high)

    def fill_bernoulli(self, a: DeviceStorage, p: Any) -> None:
        """1 with probability ``p``: a number, or device storage of ``a``'s shape (a broadcast view is fine)."""
        if is_device_array(p):
            probs = p.contiguous().astype(np.float64, copy=False).reshape(-1)
            p = probs.buffer[probs.offset:probs.offset + probs.size]
        self._write(a, a.dtype, bernoulli_, p)


def _cast(x: Any, dtype: Any) -> Any:
    """Device storage in ``dtype`` (numbers as they are)."""
    return x.astype(dtype, copy=False) if is_device_array(x) else x


__all__ = ["philox4x32_10", "random_bits_", "uniform_", "normal_", "bernoulli_", "integers_", "DeviceDraws"]
