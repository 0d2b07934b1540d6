"""Random sampling: ``rand``, ``randn``, ``randint``, ``randperm``, ``normal``, ``bernoulli``,
``multinomial``, the ``*_like`` variants, and the in-place samplers (``uniform_``, ``normal_``, ...).

Every sampler draws from the generator of the result's device: a CPU tensor from
a ``Generator`` (the default one unless ``generator=`` is given) through NumPy
(see ``ember.tensor.random`` for why the streams differ from torch's), a CUDA
tensor on the device from a CUDA generator (Philox kernels, through
``ember.kernels.cuda.random.DeviceDraws``), so CPU and CUDA numbers differ for one
seed, as in torch, and device samples never pass through the host. A generator of
another device type is torch's RuntimeError. ``randperm`` and ``multinomial`` are
the exceptions: they always sample on the host from a CPU generator. Argument
checks follow torch: the same exception types and messages, with the op's name
appended in parentheses where torch names an internal kernel.

The fills below are written once for both devices: they check arguments, then ask a
"draws" object (``_HostDraws`` or ``DeviceDraws``, with the same methods) for the
values and write them with NumPy code that device storage also runs.

The in-place samplers are plain functions of a Tensor (``ember.tensor.methods``
binds them as methods). They write through ``t._array``, which may be a strided
view, so the values land in the storage every view of it sees.

Sampling creates no autograd graph: torch's gradients of ``normal`` and
``bernoulli`` with respect to their tensor parameters are zero.
"""
from __future__ import annotations

import operator
import warnings
from typing import Any, Callable

import numpy as np

from .._cuda_runtime.generators import generator_state
from ..kernels.common.dtypes import FLOAT_KINDS, NARROW_FLOATS, compute_dtype
from . import dtypes
from . import random as _random
from ._dispatch import broadcast_shapes
from .device import CPU, allocate, as_device, factory_device, place
from .memory_format import check_format, empty_like_format, preserve_format
from .tensor import Tensor, _check_inplace, _check_no_internal_overlap
from .out_arg import with_out
from .arguments import tensor_args

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class _Omitted:
    """Marks an argument the caller did not pass, where passing None means something else."""

    def __repr__(self) -> str:
        return "<omitted>"


_OMITTED = _Omitted()


# -- argument handling shared by every sampler ------------------------------------

def _as_int(op: str, name: str, value: Any) -> int:
    """An integer argument; bools and floats are TypeErrors as in torch's argument parser."""
    if isinstance(value, (bool, np.bool_, float, np.floating)):
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(value).__name__}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(value).__name__}") from None


def _as_int64(op: str, name: str, value: Any) -> int:
    """An integer argument that must fit torch's int64 parameter."""
    value = _as_int(op, name, value)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"Overflow when unpacking long long ({op}(): argument '{name}' = {value})")
    return value


def _parse_size(op: str, shape: tuple, size: Any = None) -> tuple[int, ...]:
    """A size given as varargs ints, one tuple/list/Size, or ``size=``, checked as torch does."""
    if size is not None:
        if shape:
            raise TypeError(f"{op}() got the size both positionally and as size=")
        shape = (size,)
    if not shape:
        raise TypeError(f"{op}() missing required argument 'size'")
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    dims = [_as_int(op, "size", d) for d in shape]
    for d in dims:
        if d < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {d}: {dims}")
    return tuple(dims)


def _check_generator(op: str, generator: Any, dev: Any) -> None:
    """``generator`` is None or a Generator of ``dev``'s device type (torch's errors otherwise)."""
    if generator is None:
        return
    if not isinstance(generator, _random.Generator):
        raise TypeError(f"{op}(): argument 'generator' must be torch.Generator, not {type(generator).__name__}")
    if generator.device.type != dev.type:
        raise RuntimeError(f"Expected a '{dev.type}' device type for generator but found '{generator.device.type}'")


def _np_generator(op: str, generator: Any) -> np.random.Generator:
    """The NumPy stream behind a CPU ``generator`` (the default generator when None)."""
    _check_generator(op, generator, CPU)
    return (_random.default_generator if generator is None else generator)._np


def _draws(op: str, generator: Any, dev: Any) -> Any:
    """The random draws for an array on ``dev``: from ``generator``, else from the device's default generator."""
    if dev.type == "cpu":
        return _HostDraws(_np_generator(op, generator))
    _check_generator(op, generator, dev)
    if generator is not None:
        return generator.draws()
    return generator_state(dev.index).draws()


def _is_array(x: Any) -> bool:
    """Whether a parameter is an array (host or device) rather than a number."""
    return isinstance(x, np.ndarray) or getattr(x, "__ember_device_array__", False)


def _resolve_dtype(dtype: Any, default: dtypes.dtype) -> dtypes.dtype:
    return default if dtype is None else dtypes.to_dtype(dtype)


def _finish(array: np.ndarray, requires_grad: bool) -> Tensor:
    """Wrap a freshly sampled array; ``requires_grad`` is checked by Tensor (floating dtypes only)."""
    t = Tensor._make(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _empty_like(op: str, input: Any, dtype: Any, device: Any, memory_format: Any) -> tuple[Any, Any]:
    """(an uninitialised array shaped like ``input`` on the target device, that device), laid out by torch's
    ``empty_like`` rule for ``memory_format``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    dev = input.device if device is None else as_device(device)
    np_dtype = _resolve_dtype(dtype, input.dtype).np
    like = input._array if dev == input.device else allocate((0,), np_dtype, dev)  # the device for NumPy's like=
    if memory_format is not preserve_format:
        check_format(memory_format, input.ndim)
    return empty_like_format(input._array, np_dtype, memory_format, like=like), dev


def _fmt(x: float) -> str:
    """A number as torch's C++ messages print it (``1`` not ``1.0``)."""
    return f"{x:g}"


def _float_digits(np_dtype: np.dtype) -> int:
    """Mantissa bits including the implicit one: the integers a float holds exactly run to 2**digits."""
    return np.finfo(np_dtype).nmant + 1


def _require_float(a: np.ndarray, kernel: str, op: str) -> None:
    if a.dtype.kind not in FLOAT_KINDS:
        name = dtypes.from_numpy_dtype(a.dtype).scalar_type_name
        raise NotImplementedError(f'"{kernel}" not implemented for \'{name}\' ({op})')


def _require_continuous(a: np.ndarray, name: str, type_name: str) -> None:
    if a.dtype.kind not in FLOAT_KINDS:
        raise RuntimeError(
            f"{name} distribution is a continuous probability distribution. "
            f"dtype must be a floating point but you specified {type_name}"
        )


def _unit_uniform(gen: np.random.Generator, shape: tuple[int, ...], np_dtype: np.dtype) -> np.ndarray:
    """Uniform [0, 1) values that stay below 1 after casting to ``np_dtype`` (float16 and bfloat16 included)."""
    if np_dtype in NARROW_FLOATS:
        steps = 2 ** _float_digits(np_dtype)
        return gen.integers(0, steps, shape, dtype=np.int32).astype(np.float32) * np.float32(1.0 / steps)
    return gen.random(shape, dtype=np_dtype)


class _HostDraws:
    """The random draws the fills need, on NumPy arrays from a NumPy generator (twin of ``DeviceDraws``)."""

    __slots__ = ("_gen",)

    def __init__(self, gen: np.random.Generator) -> None:
        self._gen = gen

    def uniform(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return self._gen.random(shape, dtype=dtype)

    def standard_normal(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return self._gen.standard_normal(shape, dtype=dtype)

    def standard_exponential(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return self._gen.standard_exponential(shape, dtype=dtype)

    def geometric(self, p: float, shape: tuple[int, ...]) -> np.ndarray:
        return self._gen.geometric(p, shape)

    def fill_uniform(self, a: np.ndarray, low: float, high: float) -> None:
        work = compute_dtype(a.dtype)
        a[...] = _unit_uniform(self._gen, a.shape, a.dtype) * work.type(high - low) + work.type(low)

    def fill_normal(self, a: np.ndarray, mean: Any, std: Any) -> None:
        work = compute_dtype(a.dtype)
        a[...] = self._gen.standard_normal(a.shape, dtype=work) * np.asarray(std, work) + np.asarray(mean, work)

    def fill_integers(self, a: np.ndarray, low: int, high: int) -> None:
        a[...] = self._gen.integers(low, high, a.shape, dtype=np.int64, endpoint=True)

    def fill_bernoulli(self, a: np.ndarray, p: Any) -> None:
        a[...] = self._gen.random(a.shape) < p


# -- fills: sample into an existing array (the core of both in-place and new-tensor ops) ----

def _fill_uniform(op: str, a: Any, low: float, high: float, draws: Any) -> None:
    _require_float(a, "check_uniform_bounds", op)
    low, high = float(low), float(high)
    info = np.finfo(a.dtype)
    c_name = dtypes.from_numpy_dtype(a.dtype).cpp_type_name
    if not info.min <= low <= info.max:
        raise RuntimeError(f"from is out of bounds for {c_name}")
    if not info.min <= high <= info.max:
        raise RuntimeError(f"to is out of bounds for {c_name}")
    if low > high:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={_fmt(low)} > to={_fmt(high)}")
    if high - low > float(info.max):
        raise RuntimeError(
            f"uniform_ expects to-from <= std::numeric_limits<{dtypes.from_numpy_dtype(a.dtype).scalar_type_name}>"
            f"::max(), but found "
            f"to={_fmt(high)} and from={_fmt(low)} which result in to-from to exceed the limit"
        )
    draws.fill_uniform(a, low, high)


def _fill_normal(op: str, a: Any, mean: Any, std: Any, draws: Any) -> None:
    """Normal samples; ``mean`` and ``std`` are numbers or arrays (on ``a``'s device) broadcastable to ``a``."""
    _require_float(a, "normal_kernel_cpu", op)
    if _is_array(std):
        if not np.all(std >= 0):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif not std >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(std)}")
    draws.fill_normal(a, mean, std)


def _fill_integers(op: str, a: Any, low: int, high: int | None, draws: Any) -> None:
    """Integers in [low, high), or [low, dtype's max] when ``high`` is None, by torch's per-dtype ranges.

    The max of a float dtype is 2**digits, the last integer it holds exactly.
    """
    low = _as_int64(op, "from", low)
    if high is not None:
        high = _as_int64(op, "to", high)
        if low >= high:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    c_name = dtypes.from_numpy_dtype(a.dtype).cpp_type_name
    if a.dtype.kind in FLOAT_KINDS:
        lo_lim, hi_lim = -float(np.finfo(a.dtype).max), float(np.finfo(a.dtype).max)
        top = 2 ** _float_digits(a.dtype)
    else:
        lo_lim, hi_lim = (0, 1) if a.dtype == np.bool_ else (int(np.iinfo(a.dtype).min), int(np.iinfo(a.dtype).max))
        top = hi_lim
    last = top if high is None else high - 1
    if not lo_lim <= low <= hi_lim:
        raise RuntimeError(f"from is out of bounds for {c_name}")
    if not lo_lim <= last <= hi_lim:
        raise RuntimeError(f"to - 1 is out of bounds for {c_name}")
    if a.dtype.kind in FLOAT_KINDS:
        for name, value in (("from", low), ("to - 1", last)):
            if abs(value) > top:
                warnings.warn(
                    f"{name} is out of bounds [-(2^{_float_digits(a.dtype)}), 2^{_float_digits(a.dtype)}]. Due to "
                    f"precision limitations {c_name} can support discrete uniform distribution only within this "
                    "range.", UserWarning, stacklevel=3,
                )
    if last < low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={last + 1}")
    draws.fill_integers(a, low, last)


def _fill_bernoulli(op: str, a: Any, p: Any, draws: Any) -> None:
    """Draw 1 with probability ``p`` (a number, or an array on ``a``'s device that must expand to its shape)."""
    if _is_array(p):
        if not np.all((p >= 0) & (p <= 1)):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        p = _expand(p, a.shape)
    elif not 0 <= p <= 1:
        raise RuntimeError(f"{op} expects p to be in [0, 1], but got p={_fmt(p)}")
    draws.fill_bernoulli(a, p)


def _expand(p: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``p`` broadcast to ``shape`` (never the other way), with torch's expand errors."""
    if p.ndim > len(shape):
        raise RuntimeError(
            f"expand(Tensor{{{list(p.shape)}}}, size={list(shape)}): the number of sizes provided "
            f"({len(shape)}) must be greater or equal to the number of dimensions in the tensor ({p.ndim})"
        )
    lead = len(shape) - p.ndim
    for i in reversed(range(p.ndim)):
        if p.shape[i] not in (1, shape[lead + i]):
            raise RuntimeError(
                f"The expanded size of the tensor ({shape[lead + i]}) must match the existing size ({p.shape[i]}) "
                f"at non-singleton dimension {lead + i}.  Target sizes: {list(shape)}.  Tensor sizes: {list(p.shape)}"
            )
    return np.broadcast_to(p, shape)


def _fill_exponential(op: str, a: Any, lambd: float, draws: Any) -> None:
    _require_continuous(a, "Exponential", dtypes.from_numpy_dtype(a.dtype).scalar_type_name)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_fmt(lambd)}")
    work = compute_dtype(a.dtype)
    a[...] = draws.standard_exponential(a.shape, work) / work.type(lambd)


def _fill_geometric(op: str, a: Any, p: float, draws: Any) -> None:
    """The number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    if a.dtype == np.bool_:
        raise NotImplementedError(f'"geometric_cpu" not implemented for \'Bool\' ({op})')
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_fmt(p)}")
    a[...] = draws.geometric(p, a.shape)


def _fill_log_normal(op: str, a: Any, mean: float, std: float, draws: Any) -> None:
    _require_float(a, "log_normal_cpu", op)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_fmt(std)}")
    work = compute_dtype(a.dtype)
    a[...] = np.exp(draws.standard_normal(a.shape, work) * work.type(std) + work.type(mean))


def _fill_cauchy(op: str, a: Any, median: float, sigma: float, draws: Any) -> None:
    _require_continuous(a, "Cauchy", dtypes.from_numpy_dtype(a.dtype).cpp_type_name)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_fmt(sigma)}")
    work = compute_dtype(a.dtype)
    u = draws.uniform(a.shape, work)
    a[...] = work.type(median) + work.type(sigma) * np.tan(work.type(np.pi) * (u - work.type(0.5)))


def _inplace(op: str, t: Tensor, fill: Callable, generator: Any, *params: Any) -> Tensor:
    """Run ``fill`` on ``t``'s storage as an in-place op: autograd's leaf check and no two elements sharing memory
    (an expanded view would get one draw for many elements), then a version bump."""
    _check_inplace(t, op)
    _check_no_internal_overlap(t)
    fill(op, t._array, *params, _draws(op, generator, t.device))
    t._version.value += 1
    return t


# -- in-place samplers ------------------------------------------------------------------

def uniform_(t: Tensor, from_: float = 0, to: float = 1, *, generator: Any = None) -> Tensor:
    """Fill ``t`` with uniform values in [from_, to)."""
    return _inplace("uniform_", t, _fill_uniform, generator, from_, to)


def normal_(t: Tensor, mean: float = 0, std: float = 1, *, generator: Any = None) -> Tensor:
    """Fill ``t`` with normal values N(mean, std**2)."""
    return _inplace("normal_", t, _fill_normal, generator, mean, std)


def bernoulli_(t: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fill ``t`` with 0/1 draws, 1 with probability ``p`` (a number or a tensor that expands to ``t``)."""
    if isinstance(p, Tensor):
        p = place(p._array, t.device).astype(np.float64)
    return _inplace("bernoulli_", t, _fill_bernoulli, generator, p)


def exponential_(t: Tensor, lambd: float = 1, *, generator: Any = None) -> Tensor:
    """Fill ``t`` with exponential values of rate ``lambd``."""
    return _inplace("exponential_", t, _fill_exponential, generator, lambd)


def random_(t: Tensor, from_: int | None = None, to: Any = _OMITTED, *, generator: Any = None) -> Tensor:
    """Fill ``t`` with integers, following torch's three overloads.

    ``random_(t)``: [0, max of the dtype] (2**digits for floats); ``random_(t, n)``:
    [0, n); ``random_(t, a, b)``: [a, b); ``random_(t, a, None)``: [a, max].
    """
    if to is _OMITTED:
        low, high = (0, None) if from_ is None else (0, from_)
    else:
        low, high = (0 if from_ is None else from_), to
    return _inplace("random_", t, _fill_integers, generator, low, high)


def geometric_(t: Tensor, p: float, *, generator: Any = None) -> Tensor:
    """Fill ``t`` with geometric values (trials to the first success, from 1) of success probability ``p``."""
    return _inplace("geometric_", t, _fill_geometric, generator, p)


def log_normal_(t: Tensor, mean: float = 1, std: float = 2, *, generator: Any = None) -> Tensor:
    """Fill ``t`` with exp(N(mean, std**2)) values."""
    return _inplace("log_normal_", t, _fill_log_normal, generator, mean, std)


def cauchy_(t: Tensor, median: float = 0, sigma: float = 1, *, generator: Any = None) -> Tensor:
    """Fill ``t`` with Cauchy values of location ``median`` and scale ``sigma``."""
    return _inplace("cauchy_", t, _fill_cauchy, generator, median, sigma)


# -- new tensors ----------------------------------------------------------------------

def _sample(op: str, target: tuple[Any, Any], requires_grad: bool, generator: Any, fill: Callable,
            *params: Any) -> Tensor:
    """Fill a new array on its device and wrap it: the body of every out-of-place sampler."""
    array, dev = target
    fill(op, array, *params, _draws(op, generator, dev))
    return _finish(array, requires_grad)


def _new(shape: tuple[int, ...], dtype: dtypes.dtype, device: Any) -> tuple[Any, Any]:
    dev = as_device(device)
    return allocate(shape, dtype.np, dev), dev


@tensor_args
@with_out(dtype_from_out=True)
def rand(*shape: Any, size: Any = None, generator: Any = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """Uniform values in [0, 1), in the default float dtype unless ``dtype`` says otherwise."""
    array = _new(_parse_size("rand", shape, size), _resolve_dtype(dtype, dtypes.get_default_dtype()),
                 factory_device(device))
    return _sample("rand", array, requires_grad, generator, _fill_uniform, 0.0, 1.0)


@tensor_args
@with_out(dtype_from_out=True)
def randn(*shape: Any, size: Any = None, generator: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """Standard normal values, in the default float dtype unless ``dtype`` says otherwise."""
    array = _new(_parse_size("randn", shape, size), _resolve_dtype(dtype, dtypes.get_default_dtype()),
                 factory_device(device))
    return _sample("randn", array, requires_grad, generator, _fill_normal, 0.0, 1.0)


def _low_high(op: str, args: tuple, low: Any, high: Any) -> tuple[Any, Any]:
    """torch's ``(high)`` / ``(low, high)`` overloads, positional or by keyword; low defaults to 0."""
    if len(args) > 2 or (len(args) == 2 and (low is not None or high is not None)):
        raise TypeError(f"{op}() takes (high, ...) or (low, high, ...); got {len(args)} bounds positionally")
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        elif low is None:
            low = args[0]
        else:
            raise TypeError(f"{op}() got multiple values for 'low'")
    if high is None:
        raise TypeError(f"{op}() missing required argument 'high'")
    return (0 if low is None else low), high


@tensor_args
@with_out(dtype_from_out=True)
def randint(*args: Any, size: Any = None, low: Any = None, high: Any = None, generator: Any = None,
            dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Integers in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``; int64 by default."""
    if size is None:
        if not args:
            raise TypeError("randint() missing required argument 'size'")
        size, args = args[-1], args[:-1]
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    low, high = _low_high("randint", args, low, high)
    array = _new(_parse_size("randint", (size,)), _resolve_dtype(dtype, dtypes.int64), factory_device(device))
    return _sample("randint", array, requires_grad, generator, _fill_integers, low, high)


@tensor_args
@with_out(dtype_from_out=True)
def randperm(n: int, *, generator: Any = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of 0..n-1 (int64 by default; float dtypes hold it while exact).

    Sampled on the host from a CPU generator (the default one unless ``generator=``) on every device, then
    copied to ``device``."""
    n = _as_int("randperm", "n", n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dt = _resolve_dtype(dtype, dtypes.int64)
    device = factory_device(device)
    if dt is dtypes.bool:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool' (randperm)")
    if dt.is_floating_point:
        digits = _float_digits(dt.np)
        if n > 2**digits + 1:
            raise RuntimeError(f"n cannot be greater than 2^{digits}+1 for {dt.scalar_type_name} type.")
    elif n > 0 and n - 1 > np.iinfo(dt.np).max:
        raise RuntimeError(f"value cannot be converted to type {dt.np.name}_t without overflow")
    perm = _np_generator("randperm", generator).permutation(n).astype(dt.np)
    return _finish(place(perm, device), requires_grad)


@tensor_args
@with_out(cast="unsafe")
def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Any = None, dtype: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """Normal samples with torch's overloads.

    With a tensor ``mean`` and/or ``std`` the result has their broadcast shape and
    the dtype of ``mean`` (of ``std`` when ``mean`` is a number), as in torch;
    ``size``/``dtype`` are not accepted then. With two numbers ``size`` is
    required and the dtype is the default float unless given.
    """
    tensors = [x for x in (mean, std) if isinstance(x, Tensor)]
    if not tensors:
        if size is None:
            raise TypeError("normal(): with float mean and std a size is required: normal(mean, std, size)")
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"normal(): argument 'size' must be tuple of ints, not {type(size).__name__}")
        # not factory_device: torch's normal is no factory of the default device (it stays on the CPU)
        array = _new(_parse_size("normal", (size,)), _resolve_dtype(dtype, dtypes.get_default_dtype()), device)
        return _sample("normal", array, requires_grad, generator, _fill_normal, mean, std)
    if size is not None or dtype is not None:
        raise TypeError("normal(): size and dtype are only accepted with float mean and std; tensors set them")
    device = tensors[0].device if device is None else as_device(device)
    dt = tensors[0].dtype  # torch samples in mean's dtype (std's when mean is a number)
    shape = broadcast_shapes(*(t._array.shape for t in tensors))
    mean, std = (place(x._array, device) if isinstance(x, Tensor) else x for x in (mean, std))
    target = allocate(shape, dt.np, device), device
    return _sample("normal", target, requires_grad, generator, _fill_normal, mean, std)


@tensor_args
@with_out(cast="unsafe")
def bernoulli(input: Tensor, p: float | None = None, *, generator: Any = None) -> Tensor:
    """0/1 draws shaped and typed like ``input``: 1 with probability ``input`` (or ``p`` when given)."""
    array = _empty_like("bernoulli", input, None, None, preserve_format)
    if p is None:
        _require_float(input._array, "bernoulli_tensor_cpu_p_", "bernoulli")
        p = input._array.astype(np.float64)
    return _sample("bernoulli", array, False, generator, _fill_bernoulli, p)


@tensor_args
@with_out
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator: Any = None) -> Tensor:
    """Category indices drawn from each row of (unnormalised) probabilities ``input``.

    Without replacement a row's draws are distinct: the categories with the
    ``num_samples`` largest ``p / Exp(1)`` keys, the trick torch uses too. Sampled
    on the host from a CPU generator on every device; the indices go to ``input``'s device.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    num_samples = _as_int("multinomial", "num_samples", num_samples)
    gen = _np_generator("multinomial", generator)
    probs = place(input._array, CPU)
    if probs.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if probs.dtype.kind not in FLOAT_KINDS:
        raise RuntimeError(
            "multinomial only supports floating-point dtypes for input, got: "
            f"{dtypes.from_numpy_dtype(probs.dtype).scalar_type_name}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    categories = probs.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if categories > 2**24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    rows = probs.reshape(-1, categories).astype(np.float64)
    if not np.all(np.isfinite(rows) & (rows >= 0)):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if rows.shape[0] and not np.all(rows.sum(axis=1) > 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if replacement:
        out = np.empty((rows.shape[0], num_samples), np.int64)
        for r, row in enumerate(rows):
            cdf = np.cumsum(row)
            picks = np.searchsorted(cdf, gen.random(num_samples) * cdf[-1], side="right")
            out[r] = np.minimum(picks, np.flatnonzero(row)[-1])  # a draw rounded up onto cdf[-1]
    else:
        keys = rows / np.maximum(gen.standard_exponential(rows.shape), np.finfo(np.float64).tiny)
        out = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples].astype(np.int64)
    return _finish(place(out.reshape(probs.shape[:-1] + (num_samples,)), input.device), False)


@tensor_args
def rand_like(input: Tensor, *, generator: Any = None, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, memory_format: Any = preserve_format) -> Tensor:
    """``rand`` with ``input``'s shape, dtype and layout unless overridden."""
    array = _empty_like("rand_like", input, dtype, device, memory_format)
    return _sample("rand_like", array, requires_grad, generator, _fill_uniform, 0.0, 1.0)


@tensor_args
def randn_like(input: Tensor, *, generator: Any = None, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, memory_format: Any = preserve_format) -> Tensor:
    """``randn`` with ``input``'s shape, dtype and layout unless overridden."""
    array = _empty_like("randn_like", input, dtype, device, memory_format)
    return _sample("randn_like", array, requires_grad, generator, _fill_normal, 0.0, 1.0)


@tensor_args
def randint_like(input: Tensor, *args: Any, low: Any = None, high: Any = None, generator: Any = None,
                 dtype: Any = None, device: Any = None, requires_grad: bool = False,
                 memory_format: Any = preserve_format) -> Tensor:
    """``randint`` with ``input``'s shape and dtype: ``randint_like(input, high)`` or ``(input, low, high)``."""
    low, high = _low_high("randint_like", args, low, high)
    array = _empty_like("randint_like", input, dtype, device, memory_format)
    return _sample("randint_like", array, requires_grad, generator, _fill_integers, low, high)


__all__ = [
    "rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial",
    "rand_like", "randn_like", "randint_like",
    "uniform_", "normal_", "bernoulli_", "exponential_", "random_", "geometric_", "log_normal_", "cauchy_",
]
