"""A one-line text progress bar (so the examples need no tqdm)."""
from __future__ import annotations

import sys
import time
from typing import TextIO

from .. import _runtime

__all__ = ["ProgressBar"]


class ProgressBar:
    """``[#######.......]  12/45  loss 0.4312  3.1 it/s``, redrawn in place with a carriage return.

    Redrawing only makes sense on a terminal: written to a file or pipe (a log, CI), only the closing line of
    each bar appears, unless ``live=True``. While Numba compiles kernels (a first run, with an empty kernel cache)
    the bar says so: redrawn with the note on a terminal, as one line per bar otherwise.
    """

    COMPILING = "compiling kernels (first run only)"

    def __init__(self, total: int, prefix: str = "", width: int = 24, stream: TextIO | None = None,
                 live: bool | None = None) -> None:
        self.total, self.prefix, self.width = max(int(total), 0), prefix, width
        self.stream = stream if stream is not None else sys.stdout
        self.live = live if live is not None else bool(getattr(self.stream, "isatty", lambda: False)())
        self.count = 0
        self.note = ""
        self._compiling = False
        self._said_compiling = False
        self._start = time.perf_counter()
        _runtime.watch_compiles(self._on_compile)

    def _on_compile(self, started: bool) -> None:
        self._compiling = started
        if self.live:
            self.stream.write("\r" + self.render())
            self.stream.flush()
        elif started and not self._said_compiling:
            self._said_compiling = True
            self.stream.write(f"{self.prefix}{self.COMPILING}...\n")
            self.stream.flush()

    def update(self, steps: int = 1, note: str = "") -> None:
        """Advance by ``steps`` and redraw, with ``note`` (e.g. the running loss) after the counter."""
        self.count = min(self.count + steps, self.total)
        self.note = note or self.note
        if self.live:
            self.stream.write("\r" + self.render())
            self.stream.flush()

    def render(self) -> str:
        filled = self.width * self.count // self.total if self.total else self.width
        rate = self.count / max(time.perf_counter() - self._start, 1e-9)
        bar = "#" * filled + "." * (self.width - filled)
        width = len(str(self.total))
        text = f"{self.prefix}[{bar}] {self.count:>{width}}/{self.total}"
        note = self.COMPILING if self._compiling else self.note
        return f"{text}  {note}  {rate:.1f} it/s" if note else f"{text}  {rate:.1f} it/s"

    def close(self, summary: str = "") -> None:
        """Finish the line, replacing the bar by ``summary`` when given."""
        _runtime.unwatch_compiles(self._on_compile)
        line = f"{self.prefix}{summary}" if summary else self.render()
        self.stream.write(("\r" + line.ljust(len(self.render())) if self.live else line) + "\n")
        self.stream.flush()
