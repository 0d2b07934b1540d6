"""A small Transformer encoder learns to reverse sequences of digits.

Every output position must find its mirror position in the input, which only attention can do
(the model sees positions through a learned embedding). It reaches ~100% held-out accuracy.

Run: python examples/tiny_transformer.py   (well under a minute; the first run also compiles kernels)

On a busy machine with few cores, run it with ``OPENBLAS_NUM_THREADS=1``: BLAS threads competing
for cores make small matrix products many times slower.
"""
from __future__ import annotations

import time

import ember as torch
import ember.nn as nn
import ember.nn.functional as F

VOCAB, LENGTH = 10, 8


class Reverser(nn.Module):
    """Token + position embeddings -> TransformerEncoder -> per-position logits over the vocabulary."""

    def __init__(self, d_model: int = 64, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, d_model)
        self.positions = nn.Parameter(torch.randn(LENGTH, d_model) * 0.1)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=128, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, VOCAB)

    def forward(self, x):
        return self.head(self.encoder(self.tokens(x) + self.positions))


def batch(size: int):
    """Random digit sequences and their reversals."""
    x = torch.randint(0, VOCAB, (size, LENGTH))
    return x, x.flip(1)


def accuracy(model, x, y) -> float:
    with torch.no_grad():
        return (model(x).argmax(-1) == y).float().mean().item()


def main() -> None:
    start = time.perf_counter()
    torch.manual_seed(0)
    model = Reverser()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    held_out = batch(512)
    for step in range(401):
        x, y = batch(64)
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"step {step:4d}  loss {loss.item():.4f}  held-out accuracy {accuracy(model, *held_out):.3f}")
    x, y = held_out
    print("input   ", x[0].tolist())
    print("reversed", model(x[:1]).argmax(-1)[0].tolist())
    print(f"done in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
