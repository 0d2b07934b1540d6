"""The digits CNN trained with DistributedDataParallel on N processes.

Run::

    python -m ember.distributed.run --nproc-per-node 2 examples/ddp_digits.py [--epochs 8] [--subset N]
    python examples/ddp_digits.py                     # one process, for comparison

Each rank loads the same data and split (``ember.examples.digits``), visits its own share of the training set
through ``DistributedSampler`` and takes ``batch-size / world size`` images per step, so the global batch and the
learning rate are those of one process. DDP averages the gradients, so N processes learn what one does; rank 0
prints each epoch's held-out accuracy.
"""
from __future__ import annotations

import argparse
import os
import socket
from typing import Sequence

import numpy as np

import ember
import ember.distributed as dist
from ember import nn
from ember.examples.digits import build_model, evaluate, load_digits, split_indices
from ember.nn.parallel import DistributedDataParallel
from ember.utils.data import DataLoader, TensorDataset
from ember.utils.data.distributed import DistributedSampler


def _join_group() -> None:
    """Form the group the launcher described (RANK, WORLD_SIZE, MASTER_*), or a group of one without it."""
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo")


def train(epochs: int, batch_size: int, lr: float, subset: int | None, width: int, seed: int = 0) -> float:
    """Train on this rank's share; return the final held-out accuracy (the same on every rank)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    images, labels = load_digits()
    if subset is not None:
        keep = np.random.default_rng(seed + 1).permutation(len(labels))[:subset]
        images, labels = images[keep], labels[keep]
    train_idx, test_idx = split_indices(len(labels), seed=seed)
    images = (images - images[train_idx].mean()) / images[train_idx].std()
    train_set = TensorDataset(ember.tensor(images[train_idx]), ember.tensor(labels[train_idx]))
    x_test, y_test = ember.tensor(images[test_idx]), ember.tensor(labels[test_idx])
    sampler = DistributedSampler(train_set, seed=seed)
    loader = DataLoader(train_set, batch_size=max(1, batch_size // world), sampler=sampler)

    ember.manual_seed(seed + rank)  # different starts on purpose: DDP broadcasts rank 0's parameters
    model = DistributedDataParallel(build_model(width))
    optimizer = ember.optim.Adam(model.parameters(), lr=lr)
    scheduler = ember.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    accuracy = 0.0
    for epoch in range(1, epochs + 1):
        sampler.set_epoch(epoch)
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss_fn(model(xb), yb).backward()
            optimizer.step()
        scheduler.step()
        accuracy = evaluate(model.module, x_test, y_test)
        if rank == 0:
            print(f"epoch {epoch}/{epochs}: held-out accuracy {100 * accuracy:.2f}% ({world} processes)", flush=True)
    return accuracy


def main(argv: Sequence[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32, help="global batch (split over the processes)")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--subset", type=int, default=None, help="use only this many images (quick runs)")
    parser.add_argument("--width", type=int, default=16, help="channels of the first conv")
    args = parser.parse_args(argv)
    _join_group()
    try:
        accuracy = train(args.epochs, args.batch_size, args.lr, args.subset, args.width)
        if dist.get_rank() == 0:
            print(f"final held-out accuracy {100 * accuracy:.2f}%", flush=True)
    finally:
        dist.destroy_process_group()
    return accuracy


if __name__ == "__main__":
    main()
