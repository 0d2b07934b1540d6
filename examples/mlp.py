"""A multilayer perceptron on the flattened 8x8 handwritten digits (about 97% held-out accuracy).

Run: python examples/mlp.py [--epochs 20]

Same data, split, optimizer and training loop as ``python -m ember.examples.digits`` (the CNN);
only the model differs: Flatten - Linear(64, 128) - ReLU - Dropout - Linear(128, 10).
Data: UCI "Optical Recognition of Handwritten Digits" (Alpaydin & Kaynak, 1998), CC BY 4.0.
"""
from __future__ import annotations

import argparse

from ember import nn
from ember.examples.digits import train

__all__ = ["build_mlp", "main"]


def build_mlp() -> nn.Module:
    """Flatten - Linear(64, 128) - ReLU - Dropout(0.1) - Linear(128, 10)."""
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 10))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--device", default=None)
    parser.add_argument("--out", default="mlp_run")
    args = parser.parse_args()
    train(args.epochs, args.batch_size, args.lr, args.device, args.out, build=build_mlp)


if __name__ == "__main__":
    main()
