"""The shipped examples: digits data, a short CNN training run end to end, its checkpoint and its PNG."""
from __future__ import annotations

import io
import runpy
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.examples import digits
from ember.examples._plot import Canvas, encode_png
from ember.examples._progress import ProgressBar

EPOCHS = 3


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One short training run through the command line entry point (600 images, 3 epochs)."""
    out = tmp_path_factory.mktemp("digits_run")
    result = digits.main(["--epochs", str(EPOCHS), "--subset", "600", "--batch-size", "32", "--lr", "0.002",
                          "--device", "cpu", "--out", str(out)])
    return result


def _png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """(type, payload) of every chunk, checking each CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, payload = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + payload) & 0xFFFFFFFF, kind
        chunks.append((kind, payload))
        pos += 12 + length
    return chunks


def test_digits_data_is_the_uci_set():
    images, labels = digits.load_digits()
    assert images.shape == (1797, 1, 8, 8) and images.dtype == np.float32
    assert images.min() == 0 and images.max() == 16
    assert labels.dtype == np.int64 and sorted(set(labels.tolist())) == list(range(10))
    assert 170 <= np.bincount(labels).min() and np.bincount(labels).max() <= 190  # ~180 of each digit
    assert (digits.DATA_FILE.parent / "README.md").read_text().count("CC BY 4.0") >= 1


def test_split_is_fixed_and_disjoint():
    train, held_out = digits.split_indices(100, held_out=0.2, seed=0)
    again, _ = digits.split_indices(100, held_out=0.2, seed=0)
    assert len(held_out) == 20 and len(train) == 80
    assert not set(train.tolist()) & set(held_out.tolist())
    np.testing.assert_array_equal(train, again)


def test_training_learns(run):
    loss, accuracy = run["history"]["loss"], run["history"]["accuracy"]
    assert len(loss) == len(accuracy) == EPOCHS
    assert loss[-1] < 0.7 * loss[0]
    assert accuracy[-1] >= 0.6  # chance is 0.1


def test_checkpoint_restores_the_model(run):
    state = ember.load(run["checkpoint"])
    assert state["epoch"] == EPOCHS
    fresh = digits.build_model()
    fresh.load_state_dict(state["model"])
    optimizer = ember.optim.Adam(fresh.parameters(), lr=1.0)
    optimizer.load_state_dict(state["optimizer"])
    assert optimizer.param_groups[0]["lr"] == state["optimizer"]["param_groups"][0]["lr"] != 1.0
    assert len(optimizer.state) == len(list(fresh.parameters()))  # Adam's moments came back too
    fresh.eval()
    run["model"].eval()
    with ember.no_grad():
        ours, theirs = fresh(run["x_test"]), run["model"](run["x_test"])
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert digits.evaluate(fresh, run["x_test"], run["y_test"]) == pytest.approx(run["history"]["accuracy"][-1])


def test_checkpoint_loads_in_torch(run):
    """The main job's checkpoint is a torch checkpoint: torch.load reads it (weights only), and the same network
    built in torch from its state_dict gives ember's logits."""
    torch = pytest.importorskip("torch")
    state = torch.load(run["checkpoint"], weights_only=True)
    assert state["epoch"] == EPOCHS and set(state["optimizer"]) == {"state", "param_groups"}
    width = 16
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, width, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(width, 2 * width, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Dropout(0.25),
        torch.nn.Linear(2 * width * 4 * 4, 4 * width), torch.nn.ReLU(), torch.nn.Linear(4 * width, 10)).eval()
    net.load_state_dict(state["model"])
    torch.optim.Adam(net.parameters()).load_state_dict(state["optimizer"])
    run["model"].eval()
    with ember.no_grad():
        ours = run["model"](run["x_test"]).numpy()
    with torch.no_grad():
        theirs = net(torch.from_numpy(run["x_test"].numpy())).numpy()
    np.testing.assert_allclose(theirs, ours, rtol=1e-4, atol=1e-5)


def test_learning_curves_png(run):
    chunks = _png_chunks(Path(run["curves"]).read_bytes())
    assert [kind for kind, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    width, height, depth, color, *_ = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (width, height, depth, color) == (720, 300, 8, 2)
    raw = zlib.decompress(chunks[1][1])
    assert len(raw) == height * (1 + 3 * width)
    assert len(set(raw)) > 3  # more than a blank page: axes, text and curves were drawn


def test_png_encoder_round_trip():
    canvas = Canvas(5, 3, background=(10, 20, 30))
    canvas.line(0, 0, 4, 2, (255, 0, 0))
    chunks = _png_chunks(canvas.png())
    rows = zlib.decompress(chunks[1][1])
    pixels = np.frombuffer(rows, np.uint8).reshape(3, 1 + 15)[:, 1:].reshape(3, 5, 3)
    assert pixels[0, 0].tolist() == [255, 0, 0] and pixels[2, 4].tolist() == [255, 0, 0]
    assert pixels[2, 0].tolist() == [10, 20, 30]
    with pytest.raises(ValueError):
        encode_png(2, 2, b"\x00" * 11)


def test_progress_bar_renders_counts():
    stream = io.StringIO()
    bar = ProgressBar(4, prefix="epoch 1 ", width=8, stream=stream, live=True)
    bar.update(note="loss 1.0")
    bar.update()
    assert "[####....]" in stream.getvalue() and " 2/4" in stream.getvalue() and "loss 1.0" in stream.getvalue()
    bar.close("done")
    assert stream.getvalue().endswith("\n") and "epoch 1 done" in stream.getvalue()
    quiet = io.StringIO()  # not a terminal: no redraws, only the closing line
    bar = ProgressBar(4, prefix="epoch 2 ", stream=quiet)
    bar.update(note="loss 1.0")
    bar.close("done")
    assert quiet.getvalue() == "epoch 2 done\n"


def test_progress_bar_says_when_kernels_compile():
    import numba

    fresh = numba.njit(lambda x: x * 3 + 1)  # not cached: calling it compiles
    seen: list[str] = []

    class Recording(io.StringIO):
        def write(self, text: str) -> int:
            seen.append(text)
            return super().write(text)

    stream = Recording()
    bar = ProgressBar(2, prefix="epoch 1 ", stream=stream, live=True)
    assert fresh(2) == 7
    bar.update(note="loss 0.5")
    assert any(ProgressBar.COMPILING in text for text in seen)  # drawn while compiling
    assert ProgressBar.COMPILING not in bar.render() and "loss 0.5" in bar.render()  # gone when done
    bar.close()
    quiet = io.StringIO()  # not a terminal: one line saying so
    bar = ProgressBar(2, prefix="epoch 2 ", stream=quiet)
    assert numba.njit(lambda x: x - 5)(7) == 2
    bar.close("done")
    assert quiet.getvalue() == f"epoch 2 {ProgressBar.COMPILING}...\nepoch 2 done\n"
    after = io.StringIO()  # a closed bar no longer listens
    bar = ProgressBar(2, stream=after)
    bar.close("done")
    assert numba.njit(lambda x: x + 9)(1) == 10 and after.getvalue() == "done\n"


def test_mlp_example_learns(tmp_path):
    script = Path(__file__).resolve().parents[1] / "examples" / "mlp.py"
    build_mlp = runpy.run_path(str(script))["build_mlp"]
    result = digits.train(epochs=3, subset=400, out=tmp_path, verbose=False, build=build_mlp)
    assert result["history"]["loss"][-1] < result["history"]["loss"][0]
    assert result["history"]["accuracy"][-1] >= 0.4
