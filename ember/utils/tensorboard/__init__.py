"""``ember.utils.tensorboard``: ``torch.utils.tensorboard``'s ``SummaryWriter``, writing real TensorBoard event
files through the ``tensorboard`` package, an optional extra: ``pip install "ember[tensorboard]"``."""
try:
    from tensorboard.summary.writer.event_file_writer import EventFileWriter  # noqa: F401
except ImportError as error:
    raise ImportError('ember.utils.tensorboard needs the tensorboard package: pip install "ember[tensorboard]" '
                      "(or pip install tensorboard)") from error

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "SummaryWriter"]
