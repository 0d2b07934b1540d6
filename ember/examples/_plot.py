"""Learning curves as a PNG, written in pure Python (zlib + struct): no matplotlib needed.

A ``Canvas`` is an RGB raster with lines, rectangles and a 3x5 pixel font; ``encode_png``
packs it as an 8-bit truecolour PNG; ``save_learning_curves`` draws one panel per series.
"""
from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path
from typing import Sequence

__all__ = ["Canvas", "encode_png", "save_learning_curves"]

Color = tuple[int, int, int]
WHITE, BLACK, GREY = (255, 255, 255), (0, 0, 0), (200, 200, 200)
BLUE, ORANGE = (31, 119, 180), (230, 120, 20)

# 3x5 glyphs, rows top to bottom, '1' = ink.
_FONT = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111", "3": "111001111001111",
    "4": "101101111001001", "5": "111100111001111", "6": "111100111101111", "7": "111001001010010",
    "8": "111101111101111", "9": "111101111001111", ".": "000000000000010", "%": "101001010100101",
    "-": "000000111000000", " ": "000000000000000", "A": "010101111101101", "C": "011100100100011",
    "D": "110101101101110", "E": "111100110100111", "H": "101101111101101", "I": "111010010010111",
    "L": "100100100100111", "N": "110101101101101", "O": "010101101101010", "P": "110101110100100",
    "R": "110101110101101", "S": "011100010001110", "T": "111010010010010", "U": "101101101101111",
    "Y": "101101010010010",
}


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(width: int, height: int, rgb: bytes | bytearray) -> bytes:
    """An 8-bit RGB PNG of ``rgb`` (rows top to bottom, 3 bytes per pixel)."""
    if len(rgb) != width * height * 3:
        raise ValueError(f"expected {width * height * 3} bytes of RGB data, got {len(rgb)}")
    stride = width * 3
    raw = b"".join(b"\x00" + bytes(rgb[y * stride:(y + 1) * stride]) for y in range(height))  # filter 0 per row
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw, 9)) + \
        _chunk(b"IEND", b"")


class Canvas:
    """An RGB raster; drawing outside it is clipped."""

    def __init__(self, width: int, height: int, background: Color = WHITE) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def point(self, x: int, y: int, color: Color) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            i = 3 * (y * self.width + x)
            self.pixels[i:i + 3] = bytes(color)

    def line(self, x0: int, y0: int, x1: int, y1: int, color: Color, thickness: int = 1) -> None:
        """Bresenham's line, widened to ``thickness`` pixels."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            for ox in range(thickness):
                for oy in range(thickness):
                    self.point(x0 + ox - thickness // 2, y0 + oy - thickness // 2, color)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err, x0 = err + dy, x0 + sx
            if e2 <= dx:
                err, y0 = err + dx, y0 + sy

    def text(self, x: int, y: int, text: str, color: Color = BLACK, scale: int = 2) -> None:
        """Upper-case ``text`` in the 3x5 font with its top-left corner at (x, y); unknown characters are blank."""
        for k, ch in enumerate(text.upper()):
            glyph = _FONT.get(ch, _FONT[" "])
            for bit, ink in enumerate(glyph):
                if ink == "1":
                    gx, gy = x + (4 * k + bit % 3) * scale, y + (bit // 3) * scale
                    for ox in range(scale):
                        for oy in range(scale):
                            self.point(gx + ox, gy + oy, color)

    def png(self) -> bytes:
        return encode_png(self.width, self.height, self.pixels)


def _text_width(text: str, scale: int = 2) -> int:
    return (4 * len(text) - 1) * scale


def _label(value: float, step: float) -> str:
    """``value`` with just enough decimals to tell ticks ``step`` apart."""
    decimals = min(3, max(0, 1 - math.floor(math.log10(step)))) if step > 0 else 2
    return f"{value:.{decimals}f}"


def _panel(canvas: Canvas, box: tuple[int, int, int, int], values: Sequence[float], title: str,
           color: Color) -> None:
    """A line chart of ``values`` against epochs 1..n inside ``box`` = (left, top, width, height)."""
    left, top, width, height = box
    x0, y0, x1, y1 = left + 50, top + 24, left + width - 12, top + height - 40  # plot area
    canvas.text(left + (width - _text_width(title)) // 2, top + 4, title)
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        lo, hi = lo - 1, hi + 1
    lo, hi = lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)
    n = len(values)

    def px(i: int) -> int:  # epoch index 0..n-1 -> column
        return x0 + (round((x1 - x0) * i / (n - 1)) if n > 1 else (x1 - x0) // 2)

    def py(v: float) -> int:
        return y1 - round((y1 - y0) * (v - lo) / (hi - lo))

    for k in range(5):  # horizontal grid lines with value labels
        v = lo + (hi - lo) * k / 4
        canvas.line(x0, py(v), x1, py(v), GREY)
        label = _label(v, (hi - lo) / 4)
        canvas.text(x0 - 6 - _text_width(label), py(v) - 5, label)
    step = max(1, -(-n // 8))
    for i in range(0, n, step):  # epoch ticks
        canvas.line(px(i), y1, px(i), y1 + 4, BLACK)
        canvas.text(px(i) - _text_width(str(i + 1)) // 2, y1 + 7, str(i + 1))
    canvas.line(x0, y0, x0, y1, BLACK)
    canvas.line(x0, y1, x1, y1, BLACK)
    canvas.text((x0 + x1 - _text_width("EPOCH")) // 2, y1 + 22, "EPOCH")
    points = [(px(i), py(v)) for i, v in enumerate(values)]
    for (a, b), (c, d) in zip(points, points[1:]):
        canvas.line(a, b, c, d, color, thickness=2)
    for a, b in points:
        canvas.line(a - 2, b, a + 2, b, color, thickness=2)


def save_learning_curves(path: str | Path, losses: Sequence[float], accuracies: Sequence[float],
                         width: int = 720, height: int = 300) -> tuple[int, int]:
    """Write a PNG with train loss (left) and held-out accuracy in % (right) per epoch; returns its size."""
    if not losses or len(losses) != len(accuracies):
        raise ValueError("need one loss and one accuracy per epoch")
    canvas = Canvas(width, height)
    half = width // 2
    _panel(canvas, (0, 0, half, height), list(losses), "TRAIN LOSS", BLUE)
    _panel(canvas, (half, 0, width - half, height), [100 * a for a in accuracies], "HELD-OUT ACCURACY %", ORANGE)
    Path(path).write_bytes(canvas.png())
    return width, height
