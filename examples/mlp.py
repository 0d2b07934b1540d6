"""A multilayer perceptron on the flattened 8x8 handwritten digits (about 97% held-out accuracy).

Run: python examples/mlp.py [--epochs 20] [--device cpu|cuda] [--subset N] [--width W]

Same data, split, optimizer and training loop as ``python -m ember.examples.digits`` (the CNN);
only the model differs: Flatten - Linear(64, 128) - ReLU - Dropout - Linear(128, 10).
Data: UCI "Optical Recognition of Handwritten Digits" (Alpaydin & Kaynak, 1998), CC BY 4.0.
"""
from __future__ import annotations

import argparse

from ember import nn
from ember.examples.digits import train

__all__ = ["build_mlp", "main"]


def build_mlp(width: int = 128) -> nn.Module:
    """Flatten - Linear(64, width) - ReLU - Dropout(0.1) - Linear(width, 10)."""
    return nn.Sequential(nn.Flatten(), nn.Linear(64, width), nn.ReLU(), nn.Dropout(0.1), nn.Linear(width, 10))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available, else cpu)")
    parser.add_argument("--out", default="mlp_run")
    parser.add_argument("--subset", type=int, default=None, help="use only this many images (quick runs)")
    parser.add_argument("--width", type=int, default=128, help="hidden units")
    args = parser.parse_args(argv)
    return train(args.epochs, args.batch_size, args.lr, args.device, args.out, subset=args.subset, build=build_mlp,
                 width=args.width)


if __name__ == "__main__":
    main()
