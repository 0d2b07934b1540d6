"""A small Transformer encoder learns to reverse sequences of digits.

Every output position must find its mirror position in the input, which only attention can do
(the model sees positions through a learned embedding). It reaches ~100% held-out accuracy.

Run: python examples/tiny_transformer.py [--steps 401] [--device cpu|cuda] [--d-model 64]
(well under a minute; the first run also compiles kernels). A quick run, e.g. on the CUDA simulator:
``--steps 3 --d-model 8 --heads 2 --layers 1 --feedforward 8 --batch-size 4 --held-out 4``.
"""
from __future__ import annotations

import argparse
import time
from typing import Sequence

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
from ember.examples.digits import default_device

VOCAB, LENGTH = 10, 8


class Reverser(nn.Module):
    """Token + position embeddings -> TransformerEncoder -> per-position logits over the vocabulary."""

    def __init__(self, d_model: int = 64, heads: int = 4, layers: int = 2, feedforward: int = 128) -> None:
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, d_model)
        self.positions = nn.Parameter(torch.randn(LENGTH, d_model) * 0.1)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=feedforward, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, VOCAB)

    def forward(self, x):
        return self.head(self.encoder(self.tokens(x) + self.positions))


def batch(size: int, device: str = "cpu"):
    """Random digit sequences and their reversals."""
    x = torch.randint(0, VOCAB, (size, LENGTH), device=device)
    return x, x.flip(1)


def accuracy(model, x, y) -> float:
    with torch.no_grad():
        return (model(x).argmax(-1) == y).float().mean().item()


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=401)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available, else cpu)")
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--feedforward", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--held-out", type=int, default=512)
    args = parser.parse_args(argv)
    device = args.device or default_device()
    start = time.perf_counter()
    torch.manual_seed(0)
    model = Reverser(args.d_model, args.heads, args.layers, args.feedforward).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    held_out = batch(args.held_out, device)
    losses = []
    for step in range(args.steps):
        x, y = batch(args.batch_size, device)
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 50 == 0:
            print(f"step {step:4d}  loss {losses[-1]:.4f}  held-out accuracy {accuracy(model, *held_out):.3f}")
    x, y = held_out
    final = accuracy(model, x, y)
    print("input   ", x[0].tolist())
    print("reversed", model(x[:1]).argmax(-1)[0].tolist())
    print(f"held-out accuracy {final:.3f}; done in {time.perf_counter() - start:.1f} s on {device}")
    return {"losses": losses, "accuracy": final, "model": model}


if __name__ == "__main__":
    main()
