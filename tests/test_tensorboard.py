"""ember.utils.tensorboard.SummaryWriter: event files read back with tensorboard's EventAccumulator, the same
records torch's writer makes, and a clear ImportError without the tensorboard package."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember


def test_import_error_names_the_extra():
    blocker = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "tensorboard" or name.startswith("tensorboard."):
                    raise ModuleNotFoundError(f"No module named {name!r}")
        sys.meta_path.insert(0, Block())
        import ember
        try:
            import ember.utils.tensorboard
        except ImportError as e:
            print("IMPORT-ERROR:", e)
    """)
    done = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert 'IMPORT-ERROR: ember.utils.tensorboard needs the tensorboard package: pip install "ember[tensorboard]"' \
        in done.stdout


@pytest.fixture
def SummaryWriter():  # noqa: N802 - the class under test, skipped cleanly without tensorboard
    pytest.importorskip("tensorboard")
    from ember.utils.tensorboard import SummaryWriter as writer

    return writer


def _read(folder: str):
    """Everything in the event files of ``folder``, read back by tensorboard itself."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(folder, size_guidance={"tensors": 0, "scalars": 0, "images": 0, "histograms": 0})
    accumulator.Reload()
    return accumulator


def test_scalars_round_trip(SummaryWriter, tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for step in range(4):
            writer.add_scalar("loss", ember.tensor(1.0 / (step + 1)), step)
        writer.add_scalar("lr", 0.5, 7, walltime=123.0)
        writer.add_scalar("new", np.float64(2.5), 0, new_style=True)
    events = _read(str(tmp_path))
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [(0, 1.0), (1, 0.5), (2, pytest.approx(1 / 3)),
                                                                  (3, 0.25)]
    assert [(e.wall_time, e.step, e.value) for e in events.Scalars("lr")] == [(123.0, 7, 0.5)]
    assert list(events.Tensors("new")[0].tensor_proto.float_val) == [2.5]
    with pytest.raises(AssertionError, match="one element"), SummaryWriter(tmp_path / "bad") as writer:
        writer.add_scalar("x", ember.ones(2))


def test_add_scalars_writes_one_run_per_tag(SummaryWriter, tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_scalars("run/main", {"a": 1.0, "b": ember.tensor(2.0)}, 3)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["run_main_a", "run_main_b"]
    b = _read(str(tmp_path / "run_main_b")).Scalars("run/main")
    assert [(e.step, e.value) for e in b] == [(3, 2.0)]


def test_histogram_round_trip(SummaryWriter, tmp_path):
    values = ember.tensor([0.5, 1.5, 1.5, 2.5, 9.0])
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("h", values, 0, bins=[0, 1, 2, 3, 10, 20])
        writer.add_histogram("default", ember.randn(200), 1)
        writer.add_histogram_raw("raw", 0, 3, 4, 6, 14, [1, 2, 3], [1, 2, 1], 2)
    events = _read(str(tmp_path))
    h = events.Histograms("h")[0].histogram_value
    assert (h.min, h.max, h.num, h.sum, h.sum_squares) == (0.5, 9.0, 5, 15.0, 92.0)
    assert list(h.bucket_limit) == [0, 1, 2, 3, 10] and list(h.bucket) == [0, 1, 2, 1, 1]  # empty bucket first
    assert events.Histograms("default")[0].histogram_value.num == 200
    assert list(events.Histograms("raw")[0].histogram_value.bucket) == [1, 2, 1]
    with pytest.raises(ValueError, match="no element"), SummaryWriter(tmp_path / "bad") as writer:
        writer.add_histogram("empty", ember.tensor([]))


def test_images_round_trip(SummaryWriter, tmp_path):
    from PIL import Image

    chw = ember.zeros(3, 4, 5)
    chw[0] = 1.0  # pure red
    with SummaryWriter(tmp_path) as writer:
        writer.add_image("red", chw, 0)
        writer.add_image("gray", (np.arange(12, dtype=np.uint8) * 20).reshape(3, 4), 0, dataformats="HW")
        writer.add_images("batch", ember.rand(10, 1, 4, 5), 0)
    events = _read(str(tmp_path))
    red = events.Images("red")[0]
    assert (red.width, red.height) == (5, 4)
    pixels = np.asarray(Image.open(io.BytesIO(red.encoded_image_string)))
    assert pixels.shape == (4, 5, 3) and (pixels == [255, 0, 0]).all()
    gray = np.asarray(Image.open(io.BytesIO(events.Images("gray")[0].encoded_image_string)))
    assert (gray[..., 0] == (np.arange(12) * 20).reshape(3, 4)).all()
    batch = events.Images("batch")[0]
    assert (batch.width, batch.height) == (8 * 5, 2 * 4)  # 8 per row, two rows
    with pytest.raises(AssertionError, match="does not match dataformats"), SummaryWriter(tmp_path / "x") as writer:
        writer.add_image("bad", ember.zeros(4, 5), 0)


def test_text_and_hparams(SummaryWriter, tmp_path):
    from tensorboard.plugins.hparams import metadata

    with SummaryWriter(tmp_path) as writer:
        writer.add_text("notes", "hello **world**", 2)
        writer.add_hparams({"lr": 0.1, "optimizer": "sgd", "skip": None}, {"hp/accuracy": 0.75}, run_name="trial")
    text = _read(str(tmp_path)).Tensors("notes/text_summary")[0]
    assert text.step == 2 and list(text.tensor_proto.string_val) == [b"hello **world**"]
    trial = _read(str(tmp_path / "trial"))
    assert [e.value for e in trial.Scalars("hp/accuracy")] == [0.75]
    start = metadata.parse_session_start_info_plugin_data(
        trial.SummaryMetadata(metadata.SESSION_START_INFO_TAG).plugin_data.content)
    assert start.hparams["lr"].number_value == 0.1 and start.hparams["optimizer"].string_value == "sgd"
    assert "skip" not in start.hparams
    experiment = metadata.parse_experiment_plugin_data(
        trial.SummaryMetadata(metadata.EXPERIMENT_TAG).plugin_data.content)
    assert [m.name.tag for m in experiment.metric_infos] == ["hp/accuracy"]
    with pytest.raises(TypeError, match="should be dictionary"), SummaryWriter(tmp_path / "x") as writer:
        writer.add_hparams([("lr", 1)], {})


def test_flush_close_reopen_and_defaults(SummaryWriter, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_try")
    assert writer.get_logdir().startswith(os.path.join("runs", "")) and writer.get_logdir().endswith("_try")
    writer.add_scalar("x", 1.0, 0)
    writer.flush()  # on disk now, while still open
    assert [e.value for e in _read(writer.get_logdir()).Scalars("x")] == [1.0]
    writer.close()
    writer.close()  # twice is fine
    writer.add_scalar("x", 2.0, 1)  # reopens a fresh event file
    writer.close()
    assert [e.value for e in _read(writer.get_logdir()).Scalars("x")] == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="add_graph is unsupported in ember"):
        writer.add_graph(ember.nn.Linear(2, 2), ember.ones(1, 2))


def test_purge_step_hides_the_crashed_run_from_that_step_on(SummaryWriter, tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for step in range(8):
            writer.add_scalar("x", float(step), step)
    with SummaryWriter(tmp_path, purge_step=5) as writer:  # resumed from the checkpoint of step 5
        writer.add_scalar("x", 100.0, 5)
    assert [(e.step, e.value) for e in _read(str(tmp_path)).Scalars("x")] == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4),
                                                                             (5, 100)]


def test_same_records_as_torch(SummaryWriter, tmp_path, torch_ref):
    """Histogram, image and text records equal torch's for the same data (torch's writer needs tensorboard too)."""
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    rng = np.random.default_rng(0)
    values = rng.normal(size=300)
    picture = rng.random((3, 6, 7)).astype(np.float32)
    for lib_writer, folder in ((SummaryWriter, "ember"), (TorchWriter, "torch")):
        with lib_writer(str(tmp_path / folder)) as writer:
            writer.add_histogram("h", values, 0)
            writer.add_histogram("auto", values, 0, bins="auto", max_bins=7)
            writer.add_image("img", picture, 0)
            writer.add_images("batch", rng.random((3, 3, 2, 2)), 0)
            writer.add_text("t", "same", 0)
            writer.add_scalar("s", 0.25, 1, new_style=True, double_precision=True)
    ours, theirs = _read(str(tmp_path / "ember")), _read(str(tmp_path / "torch"))
    for tag in ("h", "auto"):
        assert ours.Histograms(tag)[0].histogram_value == theirs.Histograms(tag)[0].histogram_value
    assert ours.Images("img")[0].encoded_image_string == theirs.Images("img")[0].encoded_image_string
    assert ours.Images("batch")[0].width == theirs.Images("batch")[0].width
    assert ours.Tensors("t/text_summary")[0].tensor_proto == theirs.Tensors("t/text_summary")[0].tensor_proto
    assert ours.Tensors("s")[0].tensor_proto == theirs.Tensors("s")[0].tensor_proto
