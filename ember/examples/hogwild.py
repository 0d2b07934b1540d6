"""Hogwild training: several processes train one shared model on the digits data, each with its own optimizer.

Run::

    python -m ember.examples.hogwild [--processes 2] [--epochs 8] [--start-method fork|spawn|forkserver]
        [--batch-size 32] [--lr 0.002] [--subset N] [--width W] [--serial] [--timeout S]

As PyTorch's ``mnist_hogwild`` example: the model's parameters are moved into shared memory
(``model.share_memory()``), every process gets the same model (inherited with ``fork``, sent as shared-memory
handles with ``spawn`` and ``forkserver``), builds its own Adam optimizer over the shared parameters and updates
them in place without locks (Recht et al., 2011, "HOGWILD!"). Each process trains on its own shard of the training
set, so together they do one serial run's work per epoch. The held-out accuracy of the shared model is printed
at the end; ``--serial`` also trains the same model in one process, for comparison (with the defaults both reach
about 98%).
"""
from __future__ import annotations

import argparse
import time
from typing import Any, Sequence

import ember
import ember.multiprocessing as mp
from ember import nn
from ember.utils.data import DataLoader, TensorDataset

from .digits import build_model, evaluate, load_digits, split_indices

__all__ = ["prepared_data", "train_shard", "train_serial", "train", "main"]


def prepared_data(subset: int | None = None, seed: int = 0) -> tuple[Any, Any, Any, Any]:
    """Standardised (train images, train labels, held-out images, held-out labels) as tensors."""
    images, labels = load_digits()
    if subset is not None:
        images, labels = images[:subset], labels[:subset]
    train_idx, test_idx = split_indices(len(labels), seed=seed)
    mean, std = images[train_idx].mean(), images[train_idx].std()
    images = (images - mean) / std
    return (ember.tensor(images[train_idx]), ember.tensor(labels[train_idx]), ember.tensor(images[test_idx]),
            ember.tensor(labels[test_idx]))


def _fit(model: nn.Module, images: Any, labels: Any, epochs: int, batch_size: int, lr: float) -> None:
    """``epochs`` of Adam over (images, labels) in shuffled mini-batches, updating ``model``'s weights in place."""
    loader = DataLoader(TensorDataset(images, labels), batch_size=batch_size, shuffle=True)
    optimizer = ember.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for _ in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss_fn(model(xb), yb).backward()
            optimizer.step()


def train_shard(rank: int, processes: int, model: nn.Module, images: Any, labels: Any, epochs: int,
                batch_size: int, lr: float, seed: int) -> None:
    """One hogwild process: its shard (every ``processes``-th sample from ``rank``) with its own optimizer,
    updating the shared weights. One thread each: the processes are the parallelism."""
    ember.set_num_threads(1)
    ember.manual_seed(seed + 1 + rank)
    _fit(model, images[rank::processes], labels[rank::processes], epochs, batch_size, lr)


def train_serial(epochs: int, batch_size: int, lr: float, width: int, seed: int, data: tuple) -> float:
    """The same model trained in this process alone; its held-out accuracy."""
    ember.manual_seed(seed)
    model = build_model(width)
    x_train, y_train, x_test, y_test = data
    _fit(model, x_train, y_train, epochs, batch_size, lr)
    return evaluate(model, x_test, y_test)


def train(processes: int = 2, epochs: int = 8, batch_size: int = 32, lr: float = 2e-3, width: int = 16,
          start_method: str = "fork", subset: int | None = None, seed: int = 0, serial: bool = False,
          timeout: float = 600.0, verbose: bool = True) -> dict:
    """Hogwild-train ``build_model(width)`` in ``processes`` processes; the accuracies and the times."""
    data = prepared_data(subset, seed)
    x_train, y_train, x_test, y_test = data
    ember.manual_seed(seed)
    model = build_model(width)
    model.share_memory()
    x_train.share_memory_()  # sent to spawned processes as handles, not pickled copies
    y_train.share_memory_()
    if verbose:
        print(f"hogwild: {processes} processes ({start_method}), {len(y_train)} train / {len(y_test)} held-out images")
    start = time.perf_counter()
    group = mp.start_processes(train_shard, args=(processes, model, x_train, y_train, epochs, batch_size, lr, seed),
                               nprocs=processes, join=False, start_method=start_method)
    deadline = start + timeout
    while not group.join(timeout=max(0.0, deadline - time.perf_counter())):
        if time.perf_counter() >= deadline:
            for process in group.processes:
                process.kill()
                process.join()
            raise TimeoutError(f"hogwild training did not finish within {timeout} s")
    result = {"accuracy": evaluate(model, x_test, y_test), "seconds": time.perf_counter() - start, "model": model}
    if verbose:
        print(f"shared model: held-out accuracy {100 * result['accuracy']:.2f}% in {result['seconds']:.1f} s")
    if serial:
        start = time.perf_counter()
        result["serial_accuracy"] = train_serial(epochs, batch_size, lr, width, seed, data)
        result["serial_seconds"] = time.perf_counter() - start
        if verbose:
            print(f"serial model: held-out accuracy {100 * result['serial_accuracy']:.2f}% in "
                  f"{result['serial_seconds']:.1f} s")
    return result


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m ember.examples.hogwild", description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--width", type=int, default=16, help="channels of the first conv (model size)")
    parser.add_argument("--start-method", default="fork", choices=mp.get_all_start_methods())
    parser.add_argument("--subset", type=int, default=None, help="use only this many images (quick runs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--serial", action="store_true", help="also train the model serially, for comparison")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before the processes are stopped")
    args = parser.parse_args(argv)
    return train(args.processes, args.epochs, args.batch_size, args.lr, args.width, args.start_method, args.subset,
                 args.seed, args.serial, args.timeout)


if __name__ == "__main__":
    main()
