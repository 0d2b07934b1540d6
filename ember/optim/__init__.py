"""Optimizers (``torch.optim``): parameter groups, state dicts, fused per-parameter update kernels, lr schedules
and weight averaging (``swa_utils``)."""
from __future__ import annotations

from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad", "Adadelta", "LBFGS",
    "lr_scheduler", "swa_utils",
]
