"""``assert_close`` and the deprecated ``assert_allclose``: torch.testing's comparisons of tensors, NumPy arrays,
numbers and (nested) sequences and mappings of them, with torch's default tolerances, error types and messages.

A comparison runs in two passes, as torch's does: first the inputs are paired up (structure errors such as
sequences of different lengths, unsupported types or a lone ``rtol`` surface here, whatever the values), then
each pair is compared and the first failure raises. ``msg`` replaces only the second kind of message.
"""
from __future__ import annotations

import cmath
import collections.abc
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Union

import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor import dtypes
from ..tensor.closeness import isclose
from ..tensor.creation import as_tensor, tensor
from ..tensor.tensor import Tensor

Msg = Union[str, Callable[[str], str], None]
Check = Callable[[], None]

# torch's default (rtol, atol) by dtype name; any other dtype (integers, bool) compares exactly
_TOLERANCES = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}
# the looser table of the deprecated assert_allclose
_LEGACY_TOLERANCES = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}
# Python numbers take the tolerances of the dtype torch stores them in
_NUMBER_DTYPE = {int: "int64", float: "float64", complex: "complex128"}
_BOOLEANS = (bool, np.bool_)
_NUMBERS = (int, float, complex, np.number)


class _Failure(Exception):
    """A failed comparison: the exception type torch raises for it, its text, and the path to the failing item."""

    def __init__(self, kind: type[Exception], text: str, path: tuple = ()) -> None:
        super().__init__(text)
        self.kind, self.text, self.path = kind, text, path

    def to_error(self, msg: Msg = None) -> Exception:
        """The user-facing exception: ``msg`` (a string) replaces the text, a callable rewrites it."""
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.text
        if self.path:
            text += "\n\nThe failure occurred for item " + "".join(f"[{key!r}]" for key in self.path)
        return self.kind(msg(text) if callable(msg) else text)


@dataclass(frozen=True)
class _Options:
    allow_subclasses: bool
    rtol: float | None
    atol: float | None
    equal_nan: bool
    check_device: bool
    check_dtype: bool
    check_stride: bool


def _tolerances(dtype_names: Iterable[str], options: _Options, path: tuple,
                table: dict[str, tuple[float, float]] = _TOLERANCES) -> tuple[float, float]:
    """The user's (rtol, atol) when both are given, else the loosest defaults of the compared dtypes."""
    if (options.rtol is None) != (options.atol is None):
        missing = "rtol" if options.rtol is None else "atol"
        raise _Failure(ValueError, f"Both 'rtol' and 'atol' must be either specified or omitted, "
                                   f"but got no {missing}.", path)
    if options.rtol is not None:
        return options.rtol, options.atol
    rtols, atols = zip(*(table.get(name, (0.0, 0.0)) for name in dtype_names))
    return max(rtols), max(atols)


def _sorted(keys: Iterable[Any]) -> list:
    keys = list(keys)
    try:
        return sorted(keys)
    except TypeError:  # keys of mixed types keep their order
        return keys


def _is_sequence(x: Any) -> bool:
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _pair_up(actual: Any, expected: Any, path: tuple, options: _Options) -> list[Check]:
    """The first pass: walk both inputs together and return one check per leaf pair."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Failure(AssertionError,
                           f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path)
        return [check for i in range(len(actual)) for check in _pair_up(actual[i], expected[i], (*path, i), options)]
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            missing, extra = _sorted(expected_keys - actual_keys), _sorted(actual_keys - expected_keys)
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                                           f"Missing keys in the actual mapping: {missing}\n"
                                           f"Additional keys in the actual mapping: {extra}", path)
        return [check for key in _sorted(actual_keys)
                for check in _pair_up(actual[key], expected[key], (*path, key), options)]
    return [_leaf_check(actual, expected, path, options)]


def _leaf_check(actual: Any, expected: Any, path: tuple, options: _Options) -> Check:
    if actual is None or expected is None:
        return lambda: _compare_none(actual, expected, path)
    if isinstance(actual, _BOOLEANS) and isinstance(expected, _BOOLEANS):
        return lambda: _compare_booleans(bool(actual), bool(expected), path)
    if isinstance(actual, _NUMBERS) and isinstance(expected, _NUMBERS):
        return _number_check(actual, expected, path, options)
    pair = _tensor_pair(actual, expected, options.allow_subclasses)
    if pair is None:
        raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} "
                                  f"and {type(expected)}.", path)
    rtol, atol = _tolerances((pair[0].dtype.name, pair[1].dtype.name), options, path)
    return lambda: _compare_tensors(*pair, rtol, atol, options, path)


def _compare_none(actual: Any, expected: Any, path: tuple) -> None:
    if actual is not None or expected is not None:
        raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}", path)


def _compare_booleans(actual: bool, expected: bool, path: tuple) -> None:
    if actual is not expected:
        raise _Failure(AssertionError, f"Booleans mismatch: {actual} is not {expected}", path)


def _number_check(actual: Any, expected: Any, path: tuple, options: _Options) -> Check:
    actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
    if isinstance(actual, bool) or isinstance(expected, bool):
        raise _Failure(RuntimeError, f"assert_close cannot compare the boolean {actual!r} with the number "
                                     f"{expected!r}: a bool compares only with a bool", path)
    rtol, atol = _tolerances((_NUMBER_DTYPE[type(x)] for x in (actual, expected)), options, path)
    return lambda: _compare_numbers(actual, expected, rtol, atol, options, path)


def _is_nan(x: Any) -> bool:
    return not isinstance(x, int) and cmath.isnan(x)


def _compare_numbers(actual: Any, expected: Any, rtol: float, atol: float, options: _Options, path: tuple) -> None:
    if options.check_dtype and type(actual) is not type(expected):
        raise _Failure(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.", path)
    if actual == expected or (options.equal_nan and _is_nan(actual) and _is_nan(expected)):
        return
    difference = abs(actual - expected)
    if (isinstance(difference, int) or cmath.isfinite(difference)) and difference <= atol + rtol * abs(expected):
        return
    raise _Failure(AssertionError, _scalar_mismatch(actual, expected, rtol, atol), path)


def _tensor_pair(actual: Any, expected: Any, allow_subclasses: bool) -> tuple[Tensor, Tensor] | None:
    """Both inputs as tensors, or None when they are not a tensor-like pair (types unrelated, or not convertible)."""
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if not related or (not allow_subclasses and type(actual) is not type(expected)):
        return None
    try:
        return tuple(x if isinstance(x, Tensor) else as_tensor(x) for x in (actual, expected))
    except Exception:  # noqa: BLE001 - anything as_tensor refuses is simply not a tensor-like
        return None


def _attribute_mismatch(name: str, actual: Any, expected: Any, path: tuple) -> _Failure:
    return _Failure(AssertionError, f"The values for attribute '{name}' do not match: {actual} != {expected}.", path)


def _compare_tensors(actual: Tensor, expected: Tensor, rtol: float, atol: float, options: _Options,
                     path: tuple) -> None:
    if actual.shape != expected.shape:
        raise _attribute_mismatch("shape", actual.shape, expected.shape, path)
    if options.check_stride and actual.stride() != expected.stride():
        raise _attribute_mismatch("stride()", actual.stride(), expected.stride(), path)
    if options.check_device and actual.device != expected.device:
        raise _attribute_mismatch("device", actual.device, expected.device, path)
    if options.check_dtype and actual.dtype is not expected.dtype:
        raise _attribute_mismatch("dtype", actual.dtype, expected.dtype, path)
    with no_grad():
        actual, expected = actual.detach(), expected.detach()
        if actual.device != expected.device:
            actual, expected = actual.cpu(), expected.cpu()
        if actual.dtype is not expected.dtype:
            common = dtypes.promote_types(actual.dtype, expected.dtype)
            actual, expected = actual.to(common), expected.to(common)
        matches = isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=options.equal_nan)
        if bool(matches.all().item()):
            return
        if actual.dim() == 0:
            text = _scalar_mismatch(actual.item(), expected.item(), rtol, atol)
        else:
            text = _tensor_mismatch(actual, expected, matches, rtol, atol)
    raise _Failure(AssertionError, text, path)


def _mismatch_text(what: str, summary: str, abs_diff: Any, abs_at: tuple | None, atol: float,
                   rel_diff: Any, rel_at: tuple | None, rtol: float) -> str:
    exact = rtol == 0 and atol == 0
    lines = [f"{what} are not {'equal' if exact else 'close'}!", "", summary]
    for kind, diff, at, tol in (("absolute", abs_diff, abs_at, atol), ("relative", rel_diff, rel_at, rtol)):
        if at is None:
            line = f"{kind.title()} difference: {diff}"
        else:
            line = f"Greatest {kind} difference: {diff} at index {at}"
        lines.append(line if exact else f"{line} (up to {tol} allowed)")
    return "\n".join(lines)


def _scalar_mismatch(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_text("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff, None,
                          rtol)


def _greatest(values: Tensor, shape: tuple) -> tuple[Any, tuple]:
    """The largest element (a NaN wins, as in torch.max) and its index in ``shape``."""
    array = values.cpu().numpy()
    flat = int(np.argmax(array))
    return array[flat].item(), tuple(int(i) for i in np.unravel_index(flat, shape))


def _tensor_mismatch(actual: Tensor, expected: Tensor, matches: Tensor, rtol: float, atol: float) -> str:
    total = matches.numel()
    mismatched = total - int(matches.sum().item())
    summary = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    shape = tuple(matches.shape)
    actual, expected, matches = actual.flatten(), expected.flatten(), matches.flatten()
    if not actual.dtype.is_floating_point and not actual.dtype.is_complex:
        actual, expected = actual.to(dtypes.int64), expected.to(dtypes.int64)  # no wraparound in the differences
    abs_diff = (actual - expected).abs().masked_fill(matches, 0)  # only mismatched elements count
    rel_diff = (abs_diff / expected.abs()).masked_fill(matches, 0)
    return _mismatch_text("Tensor-likes", summary, *_greatest(abs_diff, shape), atol, *_greatest(rel_diff, shape), rtol)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: Msg = None) -> None:
    """Raise unless ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Tensors, NumPy arrays (compared as tensors), Python and NumPy numbers, and sequences and mappings of them
    (recursively) are compared with ``|actual - expected| <= atol + rtol * |expected|``, by default with the
    loosest tolerances of the two dtypes (float16 1e-3/1e-5, float32 1.3e-6/1e-5, float64 1e-7/1e-7, integers and
    bool exactly). Shape always, and device, dtype and (with ``check_stride``) strides are checked first; with
    ``check_device=False`` or ``check_dtype=False`` values are compared on the CPU in the promoted dtype. Every
    ember tensor is strided, so ``check_layout`` never finds a difference. ``msg`` replaces a value or attribute
    mismatch's message, or rewrites it when callable. Raises AssertionError on a mismatch, TypeError for inputs
    it cannot compare, ValueError when only one of ``rtol``/``atol`` is given.
    """
    __tracebackhide__ = True
    options = _Options(allow_subclasses, rtol, atol, equal_nan, check_device, check_dtype, check_stride)
    try:
        checks = _pair_up(actual, expected, (), options)
    except _Failure as failure:
        raise failure.to_error() from None
    for check in checks:
        try:
            check()
        except _Failure as failure:
            raise failure.to_error(msg) from None


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
                    equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated (as in torch): ``assert_close`` with the old defaults: non-tensors are made tensors (``expected``
    in ``actual``'s dtype), dtypes may differ, NaNs are equal, tolerances float16 1e-3/1e-3, float32 1e-4/1e-5,
    float64 1e-5/1e-8."""
    __tracebackhide__ = True
    warnings.warn("`ember.testing.assert_allclose()` is deprecated (as in torch since 1.12) and will be removed in "
                  "a future release. Please use `ember.testing.assert_close()` instead.", FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        no_tolerances = _Options(True, None, None, equal_nan, True, False, False)
        rtol, atol = _tolerances((actual.dtype.name, expected.dtype.name), no_tolerances, (), _LEGACY_TOLERANCES)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True, check_dtype=False,
                 check_stride=False, msg=msg or None)


__all__ = ["assert_close", "assert_allclose"]
