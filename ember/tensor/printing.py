"""Text form of tensors, laid out exactly the way PyTorch prints them.

Users compare ember's output with PyTorch's side by side, so ``repr`` must
produce the same characters: one shared number format per tensor (fixed,
integer-valued or scientific), a common column width, rows wrapped at the
line width, "..." summaries of large tensors, and the same ``dtype=`` /
``requires_grad=`` / ``grad_fn=`` suffixes, with ``ember.`` in place of
``torch.`` in dtype names.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ember.tensor.device import CPU, place
from ember.tensor.dtypes import get_default_dtype

__all__ = ["get_printoptions", "set_printoptions", "tensor_repr"]


@dataclasses.dataclass
class _PrintOptions:
    """Process-wide print settings; the defaults are PyTorch's."""

    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


_OPTIONS = _PrintOptions()

_PROFILES: dict[str, dict[str, Any]] = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}

# Dtypes whose name is never printed for a non-empty tensor, because the
# values alone already imply them (besides the default float dtype).
_IMPLIED_DTYPES = ("int64", "bool")

_PREFIX = "tensor("


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Change how tensors print, with ``torch.set_printoptions``'s semantics.

    A profile ("default", "short", "full") is applied first and explicit
    arguments override it; an unknown profile name is ignored, as in PyTorch.
    ``sci_mode`` is always assigned, so omitting it restores automatic choice.
    """
    if profile is not None:
        for name, value in _PROFILES.get(profile, {}).items():
            setattr(_OPTIONS, name, value)
    if precision is not None:
        _OPTIONS.precision = precision
    if threshold is not None:
        _OPTIONS.threshold = threshold
    if edgeitems is not None:
        _OPTIONS.edgeitems = edgeitems
    if linewidth is not None:
        _OPTIONS.linewidth = linewidth
    _OPTIONS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current options, as keyword arguments ``set_printoptions`` accepts."""
    return dataclasses.asdict(_OPTIONS)


class _ElementFormat:
    """One notation and width for every element, so that columns line up.

    The choice is made from a sample (the elements that will actually be shown)
    and then applied to each element in turn.
    """

    def __init__(self, sample: np.ndarray, is_float: bool) -> None:
        precision = _OPTIONS.precision
        self.is_float = is_float
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        values = sample.reshape(-1)
        if not is_float:
            self.width = max([1, *(len(str(v)) for v in values.tolist())])
            return
        values = values.astype(np.float64)
        shown = values[np.isfinite(values) & (values != 0)]
        if shown.size == 0:
            # Only zeros, nan and inf: printed as "0.", "nan", "inf" whatever
            # the sci_mode option says.
            return
        magnitudes = np.abs(shown)
        smallest, largest = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(shown == np.ceil(shown)))
        if _OPTIONS.sci_mode is None:
            self.sci_mode = largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4
        else:
            self.sci_mode = _OPTIONS.sci_mode
        if self.sci_mode:
            widths = (len(f"{v:.{precision}e}") for v in shown.tolist())
        elif self.int_mode:
            # One extra column for the "." that marks the value as a float.
            widths = (len(f"{v:.0f}") + 1 for v in shown.tolist())
        else:
            widths = (len(f"{v:.{precision}f}") for v in shown.tolist())
        self.width = max(self.width, *widths)

    def __call__(self, value: Any) -> str:
        """The element right-aligned to the shared width."""
        if not self.is_float:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.width}.{_OPTIONS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."
        else:
            text = f"{value:.{_OPTIONS.precision}f}"
        return text.rjust(self.width)


def _shown_sample(array: np.ndarray, summarize: bool) -> np.ndarray:
    """The elements that will be printed: every one, or just the edges of each axis."""
    edge = _OPTIONS.edgeitems
    if not summarize or array.ndim == 0:
        return array
    keep = []
    for size in array.shape:
        if size > 2 * edge:
            keep.append(np.r_[0:edge, size - edge:size])
        else:
            keep.append(np.arange(size))
    return array[np.ix_(*keep)]


def _format_row(row: np.ndarray, indent: int, summarize: bool, fmt: _ElementFormat) -> str:
    """A 1-d slice, wrapped so that each line fits the line width after the indent."""
    edge = _OPTIONS.edgeitems
    per_line = max(1, math.floor((_OPTIONS.linewidth - indent) / (fmt.width + 2)))
    if summarize and not edge:
        items = ["..."]
    elif summarize and row.shape[0] > 2 * edge:
        items = [fmt(v) for v in row[:edge].tolist()] + [" ..."]
        items += [fmt(v) for v in row[-edge:].tolist()]
    else:
        items = [fmt(v) for v in row.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _format_block(array: np.ndarray, indent: int, summarize: bool, fmt: _ElementFormat) -> str:
    """Nested brackets; sub-blocks of an n-d block are separated by n-1 newlines."""
    if array.ndim == 0:
        return fmt(array.item())
    if array.ndim == 1:
        return _format_row(array, indent, summarize, fmt)
    edge = _OPTIONS.edgeitems
    size = array.shape[0]
    if summarize and size > 2 * edge:
        rows: list[int | None] = [*range(edge), None, *range(size - edge, size)]
    else:
        rows = list(range(size))
    parts = ["..." if i is None else _format_block(array[i], indent + 1, summarize, fmt) for i in rows]
    return ("," + "\n" * (array.ndim - 1) + " " * (indent + 1)).join(parts).join("[]")


def _append_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """Close the repr, moving each suffix to a new line when it would overflow.

    PyTorch counts two columns more than the last line holds until the first
    suffix goes onto a line of its own; that slack is kept so wrapping matches.
    """
    pieces = [text]
    line_len = len(text) - text.rfind("\n") - 1
    slack = 2
    for suffix in suffixes:
        if line_len + slack + len(suffix) + 2 > _OPTIONS.linewidth:
            pieces.append(",\n" + " " * indent + suffix)
            line_len = indent + len(suffix)
            slack = 0
        else:
            pieces.append(", " + suffix)
            line_len += len(suffix) + 2
    pieces.append(")")
    return "".join(pieces)


def tensor_repr(t: Any) -> str:
    """What ``repr`` shows for an ember tensor: PyTorch's text with ``ember.`` dtype names."""
    array = place(t._array, CPU)
    dtype_name = t.dtype.name
    default_name = get_default_dtype().name
    suffixes = [] if t.device.type == "cpu" else [f"device='{t.device}'"]
    if array.size == 0:
        # No values to infer the dtype from, so only the default float one is implied.
        body = "[]"
        if array.ndim != 1:
            suffixes.append(f"size={tuple(array.shape)}")
        if dtype_name != default_name:
            suffixes.append(f"dtype=ember.{dtype_name}")
    else:
        if not _OPTIONS.edgeitems:
            suffixes.append(f"size={tuple(array.shape)}")
        if dtype_name not in (default_name, *_IMPLIED_DTYPES):
            suffixes.append(f"dtype=ember.{dtype_name}")
        summarize = array.size > _OPTIONS.threshold
        fmt = _ElementFormat(_shown_sample(array, summarize), bool(t.dtype.is_floating_point))
        body = _format_block(array, len(_PREFIX), summarize, fmt)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name().rpartition('::')[2]}>")  # without torch::autograd::, as torch
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _append_suffixes(_PREFIX + body, suffixes, len(_PREFIX))
