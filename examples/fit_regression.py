"""Fit a small polynomial regression with ember's autograd (the README's first command).

Run: python examples/fit_regression.py
"""
import time

import ember as torch


def main() -> None:
    start = time.perf_counter()
    torch.manual_seed(0)
    x = torch.linspace(-2, 2, 256).reshape(-1, 1)
    y = 0.5 * x ** 3 - x + 0.3 + 0.05 * torch.randn(256, 1)
    design = x ** torch.arange(4)  # columns 1, x, x^2, x^3 by broadcasting
    w = torch.zeros(4, 1, requires_grad=True)
    lr = 0.05
    for step in range(301):
        loss = ((design @ w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None
        if step % 50 == 0:
            print(f"step {step:4d}  loss {loss.item():.5f}")
    print("fitted coefficients (1, x, x^2, x^3):", [round(v, 3) for v in w.detach().reshape(-1).tolist()])
    print(f"done in {time.perf_counter() - start:.1f} s (the first run compiles kernels; later runs load them)")


if __name__ == "__main__":
    main()
