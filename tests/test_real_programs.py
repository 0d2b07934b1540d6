"""Tutorial-style PyTorch programs (tests/programs/, each written against ``import ember as torch``) run end to end:
each must really learn (loss down, accuracy above chance) and keep torch's observable behaviour (printed model,
checkpoints that resume exactly). Where cheap, the same source runs under real torch (``ember`` replaced by
``torch`` textually) and both runs are compared."""
from __future__ import annotations

import contextlib
import importlib
import io
import math
import re
import types

import pytest


def run(name: str, *args, **kwargs) -> dict:
    """``tests/programs/<name>.py``'s ``main`` under ember, its printing swallowed."""
    module = importlib.import_module(f"programs.{name}")
    with contextlib.redirect_stdout(io.StringIO()):
        return module.main(*args, **kwargs)


def torch_twin(name: str) -> types.ModuleType:
    """The same program with every ``ember`` spelled ``torch``, loaded as a module of real PyTorch code."""
    pytest.importorskip("torch")
    module = importlib.import_module(f"programs.{name}")
    with open(module.__file__) as f:
        source = re.sub(r"\bember\b", "torch", f.read())
    twin = types.ModuleType(f"torch_twin_{name}")
    twin.__file__ = module.__file__
    exec(compile(source, module.__file__, "exec"), twin.__dict__)
    return twin


def run_twin(name: str, *args, **kwargs) -> dict:
    """The torch twin's ``main``, its printing swallowed."""
    with contextlib.redirect_stdout(io.StringIO()):
        return torch_twin(name).main(*args, **kwargs)


def decreased(values: list, factor: float = 1.0) -> bool:
    """The last value is below ``factor`` times the first."""
    return values[-1] < factor * values[0]


# What "it learned" means for each program: checked on ember's run, and on torch's run of the same source where
# the twin test below runs it.
LEARNED = {
    "quickstart": lambda r: r["test_loss"] < r["first_test_loss"] - 0.2 and r["accuracy"] > 0.3,  # chance: 0.1
    "word_language_model": lambda r: min(r["val_ppls"]) < r["start_ppl"] / 2,
    "transformer_lm": lambda r: r["val_losses"][-1] < 0.8 * r["val_losses"][0],
    "vae": lambda r: r["test_losses"][-1] < 0.5 * r["first_test"],
    "custom_dataset": lambda r: r["val_accuracies"][-1] > 0.9 and 0.35 < r["positive_fraction_sampled"] < 0.65,
    "text_classification": lambda r: r["train_accs"][-1] > 0.9 and r["test_accuracy"] > 0.9,
    "gradient_penalty": lambda r: r["gaps"][-1] > r["gaps"][0] + 1.0 and r["penalties"][-1] < r["penalties"][0],
}


@pytest.mark.parametrize("name", sorted(LEARNED))
def test_torch_runs_the_same_source_and_learns_too(name):
    assert LEARNED[name](run_twin(name))


QUICKSTART_REPR = """NeuralNetwork(
  (flatten): Flatten(start_dim=1, end_dim=-1)
  (linear_relu_stack): Sequential(
    (0): Linear(in_features=784, out_features=64, bias=True)
    (1): ReLU()
    (2): Linear(in_features=64, out_features=64, bias=True)
    (3): ReLU()
    (4): Linear(in_features=64, out_features=10, bias=True)
  )
)"""


def test_quickstart_learns_and_reloads_its_state_dict():
    r = run("quickstart")
    assert LEARNED["quickstart"](r)
    assert decreased(r["train_losses"])
    assert r["reload_equal"]
    assert r["model_repr"] == QUICKSTART_REPR


def test_mnist_example_with_accelerator_selection():
    r = run("mnist_main", ["--epochs", "1"])
    assert r["device"] == "cpu"  # no accelerator on a CPU-only machine
    assert r["lrs"] == [pytest.approx(0.7)]


def test_mnist_example_learns_without_accelerator():
    r = run("mnist_main", ["--no-accel", "--no-cuda"])
    assert r["test_loss"] < r["initial_loss"] / 4
    assert r["accuracy"] > 0.8 and r["initial_accuracy"] < 0.3
    assert r["lrs"] == [pytest.approx(0.7), pytest.approx(0.49)]  # StepLR(step_size=1, gamma=0.7)


def test_mnist_example_dry_run_stops_after_one_batch():
    r = run("mnist_main", ["--no-accel", "--epochs", "1", "--dry-run"])
    assert len(r["train_losses"]) == 1


def test_polynomial_fits_decrease_and_the_custom_function_matches_torch():
    r = run("polynomial_fit")
    for key in ("tensors", "function", "nn"):
        assert decreased(r[key], 0.5), key
    assert r["features_shape"] == (500, 3) and r["pred_shape"] == (500,)
    # the LegendrePolynomial3 fit starts from fixed values: no randomness, so torch's trajectory is ember's
    twin = torch_twin("polynomial_fit")
    with contextlib.redirect_stdout(io.StringIO()):
        theirs = twin.fit_with_function()
    assert r["function"] == pytest.approx(theirs, rel=1e-4)


def test_transfer_learning_trains_only_the_new_head():
    r = run("transfer_learning")
    assert r["trainable"] == 8 * 2 + 2  # the new fc only
    assert r["frozen_unchanged"]
    assert r["best_acc"] > 0.8
    train = [loss for phase, loss, _ in r["history"] if phase == "train"]
    assert decreased(train, 0.5)
    assert r["lr"] == pytest.approx(0.05 * 0.1 * 0.1)  # StepLR(step_size=2) over 4 epochs


def test_word_language_model_perplexity_drops():
    r = run("word_language_model")
    assert r["tied"]
    assert LEARNED["word_language_model"](r)
    assert decreased(r["train_losses"], 0.7)
    assert len(r["words"]) == 10


def test_transformer_language_model_learns_the_successor_rule():
    r = run("transformer_lm")
    assert r["masks_equal"]
    assert r["mask_row"] == [0.0, 0.0] + [-math.inf] * 6
    assert r["buffers"] == ["pos_encoder.pe"]
    assert r["state_keys"][0] == "pos_encoder.pe"
    assert LEARNED["transformer_lm"](r)


def test_dcgan_generator_learns_the_bright_centre():
    r = run("dcgan")
    assert 0.015 < r["conv_std"] < 0.025  # weights_init's N(0, 0.02)
    assert r["fake_shape"] == (16, 1, 16, 16)
    assert r["centre"] - r["border"] > 0.2  # real images: a bright square on a dark ground
    assert all(math.isfinite(v) for v in r["G_losses"] + r["D_losses"])


def test_vae_loss_drops_and_samples_are_probabilities():
    r = run("vae")
    assert LEARNED["vae"](r)
    assert decreased(r["train_losses"], 0.6)
    assert r["comparison_shape"] == (16, 1, 28, 28) and r["sample_shape"] == (16, 1, 28, 28)
    low, high = r["sample_range"]
    assert 0.0 <= low < high <= 1.0


def test_custom_dataset_split_sampler_and_collate():
    r = run("custom_dataset")
    assert r["split_sizes"] == (240, 60) and r["split_reproducible"]
    assert r["positive_fraction_in_data"] < 0.25  # WeightedRandomSampler rebalances the classes (LEARNED)
    assert LEARNED["custom_dataset"](r)
    assert r["batch_keys"] == ["label", "lengths", "tokens"]
    assert r["batch_tokens_shape"][0] == 16 and r["batch_tokens_shape"][1] == r["max_length_in_batch"]
    sample = r["sample"]
    assert sorted(sample) == ["label", "tokens"] and str(sample["tokens"].dtype) == "ember.int64"


def test_checkpoint_resume_continues_exactly():
    r = run("checkpoint_resume")
    assert r["resumed"] == r["straight"]  # same losses, bit for bit
    assert r["outputs_equal"]
    assert r["epoch"] == 2 and r["loss_type"] == "Tensor" and r["loss_requires_grad"]
    assert r["lr"] == pytest.approx(0.05 * 0.9 ** 4)
    assert decreased(r["straight"])


def test_checkpoint_resume_matches_torch_behaviour():
    ours, theirs = run("checkpoint_resume"), run_twin("checkpoint_resume")
    for key in ("epoch", "loss_type", "loss_requires_grad", "outputs_equal", "momentum_keys"):
        assert ours[key] == theirs[key], key
    assert ours["lr"] == pytest.approx(theirs["lr"])


def test_gradient_penalty_and_functional_autograd():
    r = run("gradient_penalty")
    assert r["grads_set"]
    assert LEARNED["gradient_penalty"](r)  # the critic separates real from fake, the penalty falls
    errors = r["errors"]
    assert errors.pop("jacobian_shape") == (2, 2, 2) and errors.pop("hessian_shape") == (2, 2, 2, 2)
    for name, error in errors.items():
        assert error < 1e-5, name


def test_snippets_train_and_behave_like_torch():
    r = run("snippets")
    assert r["device"] == "cpu" and r["cudnn_benchmark"] is True
    assert r["batches_per_epoch"] == 150 // 32 and r["batch_sizes"] == [32]  # drop_last
    assert r["accuracy"] > r["accuracy_before"] + 0.2 and r["top2"] > 0.9
    assert r["grad_enabled_in_decorated"] is False and r["grad_enabled_after"] is True
    assert max(r["lrs"]) == pytest.approx(0.05, rel=0.05)  # OneCycleLR peaks near max_lr
    assert r["lrs"][-1] < 0.001
    assert r["n_params"] == 6 * 16 + 16 + 2 * 16 + 16 * 3 + 3
    theirs = run_twin("snippets")
    assert r["printed_model"] == theirs["printed_model"]
    spelled = repr({k: r[k] for k in ("legacy", "tricks")}).replace("ember.", "torch.")
    assert spelled == repr({k: theirs[k] for k in ("legacy", "tricks")})


def test_text_classification_with_embedding_bag_offsets():
    r = run("text_classification")
    assert r["split"] == (228, 12) and r["num_class"] == 3
    assert r["offsets_ok"] and r["text_len"] == 16 * 7  # every synthetic line has 7 tokens
    assert LEARNED["text_classification"](r)
    assert r["guess"] == "Sports"
    assert all(lr in (5, 0.5, 0.05, 0.005) for lr in r["lrs"])  # StepLR(1.0, gamma=0.1) only when val stalls


def test_cifar_blitz_classifier_and_per_class_counts():
    r = run("cifar_blitz")
    assert decreased(r["running_losses"], 0.5)
    assert r["accuracy"] > 0.5  # chance is 0.1
    assert r["total_pred"] == 200 and sum(v > 0 for v in r["per_class"].values()) >= 5
    assert len(r["first_labels"].split()) == 8
