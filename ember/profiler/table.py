"""The text table of ``key_averages().table()``, laid out as torch lays out its own (same headers, widths,
time units and footer), so a profile reads the same whichever library produced it."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .events import compile_time_total

COLUMN_WIDTH = 12
SPACING = "  "


def format_time(time_us: float) -> str:
    """A time in microseconds in the largest unit that keeps it at least 1 (torch's format)."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _percent(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.2f}%" if whole > 0 else "0.00%"


def _truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _sort_key(sort_by: str) -> Callable[[Any], float]:
    """The attribute ``sort_by`` names (torch's ``cuda_*`` and ``device_*`` spellings both work)."""
    def key(event: Any) -> float:
        try:
            return getattr(event, sort_by)
        except AttributeError:
            raise AttributeError(f"table(sort_by={sort_by!r}): not an attribute of {type(event).__name__}; use "
                                 "e.g. 'cpu_time_total', 'self_cpu_time_total', 'cuda_time_total', "
                                 "'self_cuda_time_total', 'cpu_time', 'cuda_time' or 'count'") from None

    return key


def _columns(rows: Sequence[Any], with_cuda: bool, with_shapes: bool, with_stack: bool, name_width: int,
             shapes_width: int, src_width: int) -> list[tuple[str, int, Callable[[Any], str]]]:
    """(header, width, cell) for each column shown."""
    self_cpu_total = sum(e.self_cpu_time_total for e in rows)
    self_cuda_total = sum(e.self_cuda_time_total for e in rows)
    columns = [
        ("Name", name_width, lambda e: _truncate(e.key, name_width)),
        ("Self CPU %", COLUMN_WIDTH, lambda e: _percent(e.self_cpu_time_total, self_cpu_total)),
        ("Self CPU", COLUMN_WIDTH, lambda e: format_time(e.self_cpu_time_total)),
        ("CPU total %", COLUMN_WIDTH, lambda e: _percent(e.cpu_time_total, self_cpu_total)),
        ("CPU total", COLUMN_WIDTH, lambda e: format_time(e.cpu_time_total)),
        ("CPU time avg", COLUMN_WIDTH, lambda e: format_time(e.cpu_time)),
    ]
    if with_cuda:
        columns += [
            ("Self CUDA", COLUMN_WIDTH, lambda e: format_time(e.self_cuda_time_total)),
            ("Self CUDA %", COLUMN_WIDTH, lambda e: _percent(e.self_cuda_time_total, self_cuda_total)),
            ("CUDA total", COLUMN_WIDTH, lambda e: format_time(e.cuda_time_total)),
            ("CUDA time avg", COLUMN_WIDTH, lambda e: format_time(e.cuda_time)),
        ]
    columns.append(("# of Calls", COLUMN_WIDTH, lambda e: str(e.count)))
    if with_shapes:
        columns.append(("Input Shapes", shapes_width, lambda e: _truncate(str(e.input_shapes), shapes_width)))
    if with_stack:
        columns.append(("Source Location", src_width,
                        lambda e: _truncate(e.stack[0] if e.stack else "", src_width)))
    return columns


def build_table(events: Sequence[Any], sort_by: str | None = None, row_limit: int = 100, header: str | None = None,
                top_level_events_only: bool = False, with_shapes: bool = False, with_stack: bool = False,
                max_name_column_width: int = 55, max_shapes_column_width: int = 80,
                max_src_column_width: int = 75) -> str:
    """The table text: header, one line per row (at most ``row_limit`` when positive), and the time totals."""
    if not events:
        return ""
    rows = [e for e in events if not (top_level_events_only and getattr(e, "cpu_parent", None) is not None)]
    all_rows = rows
    if sort_by is not None:
        rows = sorted(rows, key=_sort_key(sort_by), reverse=True)
    if row_limit is not None and row_limit > 0:
        rows = rows[:row_limit]
    name_width = min(max(len(e.key) for e in events) + 4, max_name_column_width)
    shapes_width = min(max(max(len(str(e.input_shapes)) for e in events) + 4, COLUMN_WIDTH), max_shapes_column_width)
    src_width = min(max(max((len(e.stack[0]) for e in events if e.stack), default=0) + 4, COLUMN_WIDTH),
                    max_src_column_width)
    with_cuda = getattr(events, "use_cuda", False) or any(e.cuda_time_total > 0 for e in events)
    columns = _columns(all_rows, with_cuda, with_shapes, with_stack, name_width, shapes_width, src_width)

    def line(cells: list[str]) -> str:
        return "".join(f"{cell:>{width}}" + SPACING for cell, (_, width, _) in zip(cells, columns))

    separator = "".join("-" * width + SPACING for _, width, _ in columns)
    lines = [] if header is None else ["=" * len(separator), header]
    lines += [separator, line([title for title, _, _ in columns]), separator]
    lines += [line([cell(e) for _, _, cell in columns]) for e in rows]
    lines.append(separator)
    lines.append(f"Self CPU time total: {format_time(sum(e.self_cpu_time_total for e in all_rows))}")
    if with_cuda:
        lines.append(f"Self CUDA time total: {format_time(sum(e.self_cuda_time_total for e in all_rows))}")
    compile_total = compile_time_total(all_rows)
    if compile_total > 0:
        lines.append(f"Kernel compile time total: {format_time(compile_total)}")
    return "\n".join(lines) + "\n"
