"""Fit a small polynomial regression with ember's autograd (the README's first command).

Run: python examples/fit_regression.py [--steps 301] [--points 256] [--device cpu|cuda]
"""
import argparse
import time
from typing import Sequence

import ember as torch
from ember.examples.digits import default_device


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=301)
    parser.add_argument("--points", type=int, default=256)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available, else cpu)")
    args = parser.parse_args(argv)
    device = args.device or default_device()
    start = time.perf_counter()
    torch.manual_seed(0)
    x = torch.linspace(-2, 2, args.points, device=device).reshape(-1, 1)
    y = 0.5 * x ** 3 - x + 0.3 + 0.05 * torch.randn(args.points, 1, device=device)
    design = x ** torch.arange(4, device=device)  # columns 1, x, x^2, x^3 by broadcasting
    w = torch.zeros(4, 1, requires_grad=True, device=device)
    lr = 0.05
    losses = []
    for step in range(args.steps):
        loss = ((design @ w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None
        losses.append(loss.item())
        if step % 50 == 0:
            print(f"step {step:4d}  loss {losses[-1]:.5f}")
    coefficients = [round(v, 3) for v in w.detach().reshape(-1).tolist()]
    print("fitted coefficients (1, x, x^2, x^3):", coefficients)
    print(f"done in {time.perf_counter() - start:.1f} s on {device} (the first run compiles kernels; later runs load "
          "them)")
    return {"losses": losses, "coefficients": coefficients}


if __name__ == "__main__":
    main()
