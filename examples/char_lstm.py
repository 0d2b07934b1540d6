"""A character-level LSTM language model: learns a short text, then writes some of its own.

Run: python examples/char_lstm.py [--steps 401] [--device cpu|cuda] [--hidden 128]
(about half a minute; the first run also compiles kernels). A quick run, e.g. on the CUDA simulator:
``--steps 3 --hidden 8 --embed 4 --seq-len 6 --batch-size 2 --sample-length 4``.
"""
from __future__ import annotations

import argparse
import time
from typing import Sequence

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
from ember.examples.digits import default_device

TEXT = """\
The lamp keeper climbs the stair at dusk and lights the lamp above the harbour.
The boats come home when they see the lamp, and the lamp keeper counts the boats.
When every boat is home, the lamp keeper sits by the window and drinks his tea.
In the morning the boats go out again, and the lamp keeper sleeps until dusk.
The sea is grey in winter and green in summer, but the lamp is always gold.
The children of the harbour wave to the lamp keeper, and he waves back to them.
One night a storm came in from the sea, and the lamp keeper kept the lamp burning.
He counted the boats again and again, until every boat was home and safe.
"""


class CharModel(nn.Module):
    """Embedding -> LSTM -> Linear over the vocabulary (logits for the next character)."""

    def __init__(self, vocab: int, embed: int = 32, hidden: int = 128) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens, state=None):
        out, state = self.lstm(self.embed(tokens), state)
        return self.head(out), state


def batches(data, seq_len: int, batch: int):
    """Random windows of the text: inputs and the same windows shifted by one character."""
    starts = torch.randint(0, len(data) - seq_len - 1, (batch,), device=data.device)
    offsets = starts.reshape(-1, 1) + torch.arange(seq_len + 1, device=data.device)
    windows = data[offsets]
    return windows[:, :-1], windows[:, 1:]


def sample(model, chars, index, prompt: str, length: int, device: str = "cpu") -> str:
    """Feed ``prompt``, then draw ``length`` characters one at a time from the model's distribution."""
    with torch.no_grad():
        tokens = torch.tensor([[index[c] for c in prompt]], device=device)
        logits, state = model(tokens)
        out = []
        for _ in range(length):
            probs = F.softmax(logits[0, -1] / 0.8, dim=-1)
            nxt = torch.multinomial(probs, 1)
            out.append(chars[nxt.item()])
            logits, state = model(nxt.reshape(1, 1), state)
    return prompt + "".join(out)


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=401)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available, else cpu)")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--embed", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=48)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sample-length", type=int, default=160)
    args = parser.parse_args(argv)
    device = args.device or default_device()
    start = time.perf_counter()
    torch.manual_seed(0)
    chars = sorted(set(TEXT))
    index = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([index[c] for c in TEXT], device=device)
    model = CharModel(len(chars), args.embed, args.hidden).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    losses = []
    for step in range(args.steps):
        inputs, targets = batches(data, args.seq_len, args.batch_size)
        logits, _ = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, len(chars)), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        if step % 50 == 0:
            print(f"step {step:4d}  loss {losses[-1]:.3f}")
    text = sample(model, chars, index, "The lamp ", args.sample_length, device)
    print("sample:", text.replace("\n", " / "))
    print(f"done in {time.perf_counter() - start:.1f} s on {device}")
    return {"losses": losses, "sample": text, "model": model}


if __name__ == "__main__":
    main()
