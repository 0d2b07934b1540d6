"""``SummaryWriter``: torch.utils.tensorboard's writer of TensorBoard event files, on tensorboard's own
``EventFileWriter`` (which queues events and writes them from a background thread)."""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import Any, Sequence

from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary as _summary


class FileWriter:
    """Writes ``Event`` and ``Summary`` protos to one event file in ``log_dir``."""

    def __init__(self, log_dir: str | os.PathLike, max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str = "") -> None:
        self.event_writer = EventFileWriter(os.fspath(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        """The folder the event file is in."""
        return self.event_writer.get_logdir()

    def add_event(self, event: Event, step: int | None = None, walltime: float | None = None) -> None:
        """Queue ``event``, stamped with ``walltime`` (default now) and ``step`` when given."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary: Summary, global_step: int | None = None, walltime: float | None = None) -> None:
        """Queue ``summary`` as an event."""
        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self) -> None:
        """Write every queued event to disk."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self.event_writer.close()


def default_log_dir(comment: str = "") -> str:
    """torch's default: ``runs/<Mon>DD_HH-MM-SS_<hostname><comment>``."""
    return os.path.join("runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_" + socket.gethostname() + comment)


class SummaryWriter:
    """Log scalars, histograms, images, text and hyperparameters for TensorBoard, as ``torch.utils.tensorboard``.

    ``log_dir`` defaults to ``runs/<date>_<host><comment>``. Events are queued and written by tensorboard's writer
    thread every ``flush_secs`` or ``max_queue`` events; ``flush()`` writes them now, ``close()`` (or leaving a
    ``with`` block) flushes and closes, and a later call reopens a new event file. ``purge_step`` marks the events
    from that step on as replaced (for a resumed run). Values may be ember tensors, NumPy arrays or numbers.
    """

    def __init__(self, log_dir: str | os.PathLike | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: float = 120, filename_suffix: str = "") -> None:
        self.log_dir = os.fspath(log_dir) if log_dir else default_log_dir(comment)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self._get_file_writer()

    def _new_writer(self, log_dir: str) -> FileWriter:
        return FileWriter(log_dir, self.max_queue, self.flush_secs, self.filename_suffix)

    def _get_file_writer(self) -> FileWriter:
        """The main event file's writer, opened again after ``close``."""
        if self.file_writer is None or self.all_writers is None:
            self.file_writer = self._new_writer(self.log_dir)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        """The folder event files are written to."""
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None,
                   walltime: float | None = None, new_style: bool = False, double_precision: bool = False) -> None:
        """One value of the series ``tag`` (a number, or a tensor/array with one element)."""
        self._get_file_writer().add_summary(_summary.scalar(tag, scalar_value, new_style, double_precision),
                                            global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any], global_step: int | None = None,
                    walltime: float | None = None) -> None:
        """Several series on one chart: each ``tag`` goes to its own run folder ``<log_dir>/<main_tag>_<tag>``,
        recorded under ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        log_dir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            folder = log_dir + "/" + main_tag.replace("/", "_") + "_" + tag
            writer = self.all_writers.get(folder)
            if writer is None:
                writer = self.all_writers[folder] = self._new_writer(folder)
            writer.add_summary(_summary.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None, bins: Any = "tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:
        """A histogram of ``values``; ``bins`` is ``"tensorflow"`` (TensorFlow's exponential buckets) or anything
        ``numpy.histogram`` takes (``"auto"``, ``"fd"``, a count, edges)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = _summary.tensorflow_bins()
        self._get_file_writer().add_summary(_summary.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: int, sum: float,  # noqa: A002
                          sum_squares: float, bucket_limits: Sequence[float], bucket_counts: Sequence[float],
                          global_step: int | None = None, walltime: float | None = None) -> None:
        """A histogram from precomputed statistics (``bucket_limits`` are right edges, one per count)."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        proto = _summary.histogram_proto(min, max, num, sum, sum_squares, bucket_limits, bucket_counts)
        self._get_file_writer().add_summary(Summary(value=[Summary.Value(tag=tag, histo=proto)]), global_step,
                                            walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                  dataformats: str = "CHW") -> None:
        """An image (PNG): uint8 values as they are, float values in [0, 1]; ``dataformats`` names the axes
        (CHW, HWC, HW, ...). Needs pillow, which tensorboard installs."""
        self._get_file_writer().add_summary(_summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                   dataformats: str = "NCHW") -> None:
        """A batch of images tiled into one picture, 8 per row."""
        self._get_file_writer().add_summary(_summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """A string (Markdown) for TensorBoard's text tab."""
        self._get_file_writer().add_summary(_summary.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None,
                    run_name: str | None = None, global_step: int | None = None) -> None:
        """One run's hyperparameters and metric values for the HParams tab, written to ``<log_dir>/<run_name>``
        (default: the current time)."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        records = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        run_dir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=run_dir) as run:
            for record in records:
                run.file_writer.add_summary(record, global_step)
            for tag, value in metric_dict.items():
                run.add_scalar(tag, value, global_step)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Unsupported in ember: torch draws the graph from a ``torch.jit.trace`` of the model, and ember has no
        tracer. Raises RuntimeError."""
        raise RuntimeError("SummaryWriter.add_graph is unsupported in ember: torch builds the graph with "
                           "torch.jit.trace, which ember does not have; log scalars, histograms, images or text")

    def flush(self) -> None:
        """Write every queued event of every event file to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        """Flush and close the event files (closing twice does nothing)."""
        for writer in (self.all_writers or {}).values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> "SummaryWriter":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


__all__ = ["FileWriter", "SummaryWriter"]
