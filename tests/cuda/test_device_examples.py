"""The shipped examples run with ``--device cuda`` (on small sizes: the simulator runs every kernel thread as
Python): their models train on the device and what they save loads on the CPU."""
from __future__ import annotations

import math
import runpy
from pathlib import Path

import numpy as np

import ember
from ember.examples import digits

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example(name: str) -> dict:
    return runpy.run_path(str(EXAMPLES / f"{name}.py"))


def _on_cuda(model: ember.nn.Module) -> bool:
    return all(p.is_cuda for p in model.parameters())


def test_digits_cnn_trains_on_cuda_and_its_checkpoint_loads_on_the_cpu(tmp_path):
    result = digits.main(["--epochs", "1", "--subset", "30", "--batch-size", "12", "--width", "2",
                          "--device", "cuda", "--out", str(tmp_path)])
    assert _on_cuda(result["model"]) and math.isfinite(result["history"]["loss"][0])
    state = ember.load(result["checkpoint"], map_location="cpu")
    cpu_model = digits.build_model(2)
    cpu_model.load_state_dict(state["model"])
    x_test, y_test = result["x_test"].cpu(), result["y_test"].cpu()
    assert digits.evaluate(cpu_model, x_test, y_test) == result["history"]["accuracy"][0]
    assert result["curves"].read_bytes()[:4] == b"\x89PNG"


def test_mlp_example_trains_on_cuda(tmp_path):
    result = _example("mlp")["main"](["--epochs", "1", "--subset", "30", "--batch-size", "12", "--width", "4",
                                      "--device", "cuda", "--out", str(tmp_path)])
    assert _on_cuda(result["model"]) and math.isfinite(result["history"]["loss"][0])


def test_fit_regression_converges_on_cuda():
    result = _example("fit_regression")["main"](["--steps", "6", "--points", "16", "--device", "cuda"])
    losses = result["losses"]
    assert all(b < a for a, b in zip(losses, losses[1:]))  # gradient descent on a convex loss


def test_char_lstm_trains_and_samples_on_cuda():
    result = _example("char_lstm")["main"](["--steps", "2", "--hidden", "4", "--embed", "2", "--seq-len", "3",
                                            "--batch-size", "2", "--sample-length", "2", "--device", "cuda"])
    assert _on_cuda(result["model"]) and all(np.isfinite(result["losses"]))
    assert result["sample"].startswith("The lamp ") and len(result["sample"]) == len("The lamp ") + 2


def test_tiny_transformer_trains_on_cuda():
    result = _example("tiny_transformer")["main"](["--steps", "1", "--d-model", "4", "--heads", "2", "--layers", "1",
                                                   "--feedforward", "4", "--batch-size", "2", "--held-out", "2",
                                                   "--device", "cuda"])
    assert _on_cuda(result["model"]) and np.isfinite(result["losses"][0])
    assert 0.0 <= result["accuracy"] <= 1.0
