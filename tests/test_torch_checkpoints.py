"""Checkpoints exchanged with real PyTorch (issue 18, "torch's file format, both ways"): what ember.save writes,
torch.load(weights_only=True) reads, and what torch.save writes (zip and legacy formats), ember.load reads, with the
same values, dtypes, layouts and sharing; optimizer and scheduler state, whole modules, user types."""
from __future__ import annotations

import collections
import dataclasses
import io
import math
import pickle
import zipfile

import numpy as np
import pytest

import ember
import ember.nn
import ember.optim
from ember import serialization
from ember.tensor import dtypes as ember_dtypes

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:Detected pickle protocol:UserWarning",
                                        "ignore:Detected call of `lr_scheduler.step\\(\\)`:UserWarning")

FORMATS = {"zip": {}, "legacy": {"_use_new_zipfile_serialization": False}}
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


@dataclasses.dataclass
class TrainConfig:
    """A user type a checkpoint carries (allowed through add_safe_globals / safe_globals)."""
    lr: float
    layers: list
    name: str = "run"


@pytest.fixture(autouse=True)
def no_safe_globals():
    serialization.clear_safe_globals()
    yield
    serialization.clear_safe_globals()
    torch.serialization.clear_safe_globals()


def ember_to_torch(obj, weights_only=True, load_kwargs=None, **save_kwargs):
    buf = io.BytesIO()
    ember.save(obj, buf, **save_kwargs)
    buf.seek(0)
    return torch.load(buf, weights_only=weights_only, **(load_kwargs or {}))


def torch_to_ember(obj, load_kwargs=None, **save_kwargs):
    buf = io.BytesIO()
    torch.save(obj, buf, **save_kwargs)
    buf.seek(0)
    return ember.load(buf, **(load_kwargs or {}))


def assert_same(e, t):
    """An ember tensor and a torch tensor with the same type, dtype, layout, flags and values."""
    assert isinstance(e, ember.nn.Parameter) == isinstance(t, torch.nn.Parameter)
    assert str(t.dtype) == f"torch.{e.dtype.name}"
    assert tuple(e.shape) == tuple(t.shape) and tuple(e.stride()) == tuple(t.stride())
    assert e.storage_offset() == t.storage_offset() and e.requires_grad == t.requires_grad
    np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())


def ember_storage(t):
    return t.data_ptr() - t.storage_offset() * t.element_size()


def values(dtype: str) -> np.ndarray:
    raw = np.array([[-3.5, 0.0, 5.25, 1.0], [7.0, -1.0, 2.0, 100.0], [0.5, 3.0, -8.0, 0.0]])
    if dtype == "bool":
        return raw > 0
    if dtype == "uint8":
        return np.abs(raw).astype(np.uint8)
    return raw.astype(dtype)


def test_the_dtype_list_is_every_ember_dtype():
    """bfloat16 (no NumPy dtype torch.from_numpy takes) has a test of its own below."""
    assert DTYPES == [d.name for d in ember_dtypes.ALL_DTYPES if d.name != "bfloat16"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_bfloat16_both_ways(fmt):
    t = torch.tensor([[1.5, -2.25, 3.0e-3], [7.0, 0.0, -1.0e4]], dtype=torch.bfloat16)
    e = torch_to_ember(t, **FORMATS[fmt])
    assert e.dtype == ember.bfloat16 and e.float().tolist() == t.float().tolist()
    back = ember_to_torch(e.t(), **FORMATS[fmt])
    assert back.dtype == torch.bfloat16 and back.stride() == (1, 3) and torch.equal(back, t.t())


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_both_ways(fmt, dtype):
    arr = values(dtype)
    e = ember.from_numpy(arr.copy())
    assert_same(e, ember_to_torch(e, **FORMATS[fmt]))
    t = torch.from_numpy(arr.copy())
    assert_same(torch_to_ember(t, **FORMATS[fmt]), t)
    # a non-contiguous view of each dtype keeps its layout
    assert_same(e.t()[1:], ember_to_torch(e.t()[1:], **FORMATS[fmt]))
    assert_same(torch_to_ember(t.t()[1:], **FORMATS[fmt]), t.t()[1:])


def test_a_torch_dtype_ember_lacks_is_named():
    for dt in (torch.complex64, torch.complex128):
        with pytest.raises(RuntimeError, match=f"dtype torch.{str(dt)[6:]}, which ember does not have"):
            torch_to_ember(torch.ones(2, dtype=dt))
    assert repr(torch_to_ember(torch.complex64)) == "torch.complex64 (a dtype ember does not have)"


def _views(base):
    return {"base": base, "t": base.t(), "sliced": base[1:, ::2], "row": base[1], "col": base[:, 2],
            "flat": base.reshape(-1)[3:9], "again": base}


@pytest.mark.parametrize("fmt", FORMATS)
def test_shared_storage_and_views_ember_to_torch(fmt):
    base = ember.arange(12.0, dtype=ember.float64).reshape(3, 4)
    obj = _views(base)
    obj["other"] = ember.zeros(3, dtype=ember.float64)
    buf = io.BytesIO()
    ember.save(obj, buf, **FORMATS[fmt])
    if fmt == "zip":  # one storage record for the base and its views, one for the unrelated tensor
        records = [n for n in zipfile.ZipFile(io.BytesIO(buf.getvalue())).namelist() if "/data/" in n]
        assert sorted(records) == ["archive/data/0", "archive/data/1"]
    buf.seek(0)
    back = torch.load(buf, weights_only=True)
    for k in _views(base):
        assert_same(obj[k], back[k])
    assert back["again"] is back["base"]
    assert len({back[k].untyped_storage().data_ptr() for k in _views(base)}) == 1
    back["base"][1, 2] = -1.0  # write through one, read through the others
    assert back["t"][2, 1] == -1.0 and back["sliced"][0, 1] == -1.0 and back["row"][2] == -1.0
    assert back["col"][1] == -1.0 and back["flat"][3] == -1.0 and back["other"].tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("fmt", FORMATS)
def test_shared_storage_and_views_torch_to_ember(fmt):
    base = torch.arange(12.0, dtype=torch.float64).reshape(3, 4)
    obj = _views(base)
    obj["other"] = torch.zeros(3, dtype=torch.float64)
    back = torch_to_ember(obj, **FORMATS[fmt])
    for k in _views(base):
        assert_same(back[k], obj[k])
    assert back["again"] is back["base"]
    assert len({ember_storage(back[k]) for k in _views(base)}) == 1
    assert ember_storage(back["other"]) != ember_storage(back["base"])
    back["base"][1, 2] = -1.0
    assert back["t"][2, 1].item() == -1.0 and back["sliced"][0, 1].item() == -1.0 and back["row"][2].item() == -1.0
    assert back["col"][1].item() == -1.0 and back["flat"][3].item() == -1.0
    assert back["other"].tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_view_saved_alone_keeps_its_offset_into_the_whole_storage(fmt):
    t_base = torch.arange(12.0).reshape(3, 4)
    back = torch_to_ember(t_base[1:, ::2], **FORMATS[fmt])
    assert back.storage_offset() == 4 and back.stride() == (4, 2) and back.tolist() == [[4.0, 6.0], [8.0, 10.0]]
    e_base = ember.arange(12.0).reshape(3, 4)
    back = ember_to_torch(e_base[1:, ::2], **FORMATS[fmt])
    assert back.storage_offset() == 4 and back.stride() == (4, 2) and back.tolist() == [[4.0, 6.0], [8.0, 10.0]]
    assert back.untyped_storage().nbytes() == 48  # the storage is saved whole, as torch saves it


def test_big_endian_files_load_as_torch_reads_them():
    """A file written on a big-endian machine (its byteorder record says "big"): ember swaps the bytes, as torch."""
    buf = io.BytesIO()
    torch.save({"i": torch.arange(4, dtype=torch.int32), "f": torch.tensor([1.5, -2.0], dtype=torch.float64)}, buf)
    swapped = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as src, zipfile.ZipFile(swapped, "w") as dst:
        for info in src.infolist():
            body = src.read(info)
            if info.filename.endswith("/byteorder"):
                body = b"big"
            elif "/data/" in info.filename:  # storage 0 is "i"'s, storage 1 is "f"'s
                body = np.frombuffer(body, np.int32 if info.filename.endswith("/0") else np.float64).byteswap()
            dst.writestr(info.filename, bytes(body))
    for load in (torch.load, ember.load):
        swapped.seek(0)
        back = load(swapped)
        assert back["i"].tolist() == [0, 1, 2, 3] and back["f"].tolist() == [1.5, -2.0]


@pytest.mark.parametrize("fmt", FORMATS)
def test_requires_grad_and_parameters_both_ways(fmt):
    e = {"p": ember.nn.Parameter(ember.randn(2, 3)), "frozen": ember.nn.Parameter(ember.randn(2), requires_grad=False),
         "leaf": ember.ones(3, requires_grad=True), "plain": ember.arange(4.0)}
    back = ember_to_torch(e, **FORMATS[fmt])
    for k in e:
        assert_same(e[k], back[k])
    assert type(back["leaf"]) is torch.Tensor and back["leaf"].grad_fn is None
    t = {"p": torch.nn.Parameter(torch.randn(2, 3)), "frozen": torch.nn.Parameter(torch.randn(2), requires_grad=False),
         "leaf": torch.ones(3, requires_grad=True), "plain": torch.arange(4.0)}
    back = torch_to_ember(t, **FORMATS[fmt])
    for k in t:
        assert_same(back[k], t[k])
    assert type(back["leaf"]) is ember.Tensor and back["leaf"].grad_fn is None and back["leaf"].is_leaf


def _torch_mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))


def _ember_mlp():
    return ember.nn.Sequential(ember.nn.Linear(3, 8), ember.nn.Tanh(), ember.nn.Linear(8, 2))


X = np.random.default_rng(1).standard_normal((16, 3)).astype(np.float32)
Y = np.random.default_rng(2).standard_normal((16, 2)).astype(np.float32)


def _outputs_match(e_model, t_model, x=X, atol=1e-6):
    with torch.no_grad():
        expected = t_model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(e_model(ember.from_numpy(x)).detach().numpy(), expected, rtol=1e-5, atol=atol)


@pytest.mark.parametrize("fmt", FORMATS)
def test_state_dicts_with_metadata_both_ways(fmt):
    t_model = _torch_mlp()
    sd = t_model.state_dict()
    back = torch_to_ember(sd, **FORMATS[fmt])
    assert type(back) is collections.OrderedDict and list(back) == list(sd)
    assert back._metadata == sd._metadata == collections.OrderedDict(
        [("", {"version": 1}), ("0", {"version": 1}), ("1", {"version": 1}), ("2", {"version": 1})])
    for k in sd:
        assert_same(back[k], sd[k])
    e_model = _ember_mlp()
    e_model.load_state_dict(back)
    _outputs_match(e_model, t_model)

    e_sd = e_model.state_dict()
    to_torch = ember_to_torch(e_sd, **FORMATS[fmt])
    assert type(to_torch) is collections.OrderedDict and to_torch._metadata == e_sd._metadata
    fresh = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    fresh.load_state_dict(to_torch)
    _outputs_match(e_model, fresh)


def _python_values(lib):
    return [None, True, False, 0, -7, 2**70, -2**65, 1.5, -0.0, math.inf, -math.inf, 1e-310, "naïve ✓", "",
            b"\x00\xff", (1, (2, [3])), {"nested": {"k": [1, {2: "two"}]}, (1, "t"): "tuple key"}, 3 + 4j, {1, 2},
            collections.OrderedDict([("b", 1), ("a", 2)]), lib.Size([2, 3]), lib.Size([]), lib.float16, lib.int64,
            lib.bool, lib.device("cpu"), lib.device("cuda", 1), lib.device("cuda:0")]


def _same_values(got, want, lib):
    assert got == want and [type(v).__name__ for v in got] == [type(v).__name__ for v in want]
    assert math.copysign(1, got[8]) == -1
    assert type(got[19]) is collections.OrderedDict and list(got[19]) == ["b", "a"]
    assert type(got[20]) is lib.Size and got[22] is lib.float16 and type(got[25]) is lib.device


@pytest.mark.parametrize("fmt", FORMATS)
def test_python_values_dtypes_devices_and_sizes_both_ways(fmt):
    _same_values(ember_to_torch(_python_values(ember), **FORMATS[fmt]), _python_values(torch), torch)
    _same_values(torch_to_ember(_python_values(torch), **FORMATS[fmt]), _python_values(ember), ember)
    assert math.isnan(torch_to_ember(float("nan"), **FORMATS[fmt]))
    assert math.isnan(ember_to_torch(float("nan"), **FORMATS[fmt]))


def _set_grads(params, grads):
    for p, g in zip(params, grads):
        p.grad = g


def _model_of(opt):
    """A torch module holding an optimizer's parameters (for comparing them with an ember model's)."""
    holder = torch.nn.Module()
    holder.params = torch.nn.ParameterList(opt.param_groups[0]["params"])
    return holder


def _optimizer_pair(kind):
    """A torch model and optimizer after two steps, and the ember model with the same weights."""
    t_model = _torch_mlp()
    t_opt = (torch.optim.Adam(t_model.parameters(), lr=0.05, betas=(0.8, 0.99), weight_decay=0.01) if kind == "adam"
             else torch.optim.SGD(t_model.parameters(), lr=0.1, momentum=0.9, nesterov=True))
    for _ in range(2):
        t_opt.zero_grad()
        torch.nn.functional.mse_loss(t_model(torch.from_numpy(X)), torch.from_numpy(Y)).backward()
        t_opt.step()
    e_model = _ember_mlp()
    e_model.load_state_dict(torch_to_ember(t_model.state_dict()))
    return t_model, t_opt, e_model


def _ember_optimizer(kind, params):
    return (ember.optim.Adam(params, lr=0.5, betas=(0.5, 0.5)) if kind == "adam"
            else ember.optim.SGD(params, lr=0.5, momentum=0.1, nesterov=True))


def _same_next_step(t_model, t_opt, e_model, e_opt):
    """One more step of both from the same weights and gradients gives the same weights."""
    grads = [np.full(p.shape, 0.01 * (i + 1), np.float32) for i, p in enumerate(t_model.parameters())]
    _set_grads(list(t_model.parameters()), [torch.from_numpy(g) for g in grads])
    _set_grads(list(e_model.parameters()), [ember.from_numpy(g) for g in grads])
    t_opt.step()
    e_opt.step()
    for e, t in zip(e_model.parameters(), t_model.parameters()):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kind", ["adam", "sgd"])
def test_optimizer_state_dict_torch_to_ember(kind):
    t_model, t_opt, e_model = _optimizer_pair(kind)
    sd = t_opt.state_dict()
    back = torch_to_ember(sd)
    assert back["param_groups"] == sd["param_groups"] and set(back["state"]) == set(sd["state"]) == {0, 1, 2, 3}
    for i, state in sd["state"].items():
        assert set(back["state"][i]) == set(state)
        for k, v in state.items():
            assert_same(back["state"][i][k], v)
    e_opt = _ember_optimizer(kind, e_model.parameters())
    e_opt.load_state_dict(back)
    assert e_opt.param_groups[0]["lr"] == t_opt.param_groups[0]["lr"]
    _same_next_step(t_model, t_opt, e_model, e_opt)


@pytest.mark.parametrize("kind", ["adam", "sgd"])
def test_optimizer_state_dict_ember_to_torch(kind):
    t_model, t_opt, e_model = _optimizer_pair(kind)
    e_opt = _ember_optimizer(kind, e_model.parameters())
    e_opt.load_state_dict(torch_to_ember(t_opt.state_dict()))
    _same_next_step(t_model, t_opt, e_model, e_opt)  # both moved on: ember's state now goes back to torch
    sd = e_opt.state_dict()
    back = ember_to_torch(sd)
    assert back["param_groups"] == sd["param_groups"]
    for i, state in sd["state"].items():
        for k, v in state.items():
            assert_same(v, back["state"][i][k])
    fresh = _optimizer_pair(kind)[1]
    with torch.no_grad():
        for p, e in zip(fresh.param_groups[0]["params"], e_model.parameters()):
            p.copy_(torch.from_numpy(e.detach().numpy()))
    fresh.load_state_dict(back)
    _same_next_step(_model_of(fresh), fresh, e_model, e_opt)


def test_scheduler_state_dicts_both_ways():
    t_model = _torch_mlp()
    t_opt = torch.optim.SGD(t_model.parameters(), lr=0.1)
    t_sched = torch.optim.lr_scheduler.StepLR(t_opt, step_size=2, gamma=0.5)
    for _ in range(3):
        t_opt.step()
        t_sched.step()
    sd = t_sched.state_dict()
    back = torch_to_ember(sd)
    assert back == sd
    e_opt = ember.optim.SGD(_ember_mlp().parameters(), lr=0.1)
    e_sched = ember.optim.lr_scheduler.StepLR(e_opt, step_size=5, gamma=0.9)
    e_opt.load_state_dict(torch_to_ember(t_opt.state_dict()))
    e_sched.load_state_dict(back)
    for _ in range(3):
        t_opt.step()
        t_sched.step()
        e_opt.step()
        e_sched.step()
        assert e_opt.param_groups[0]["lr"] == pytest.approx(t_opt.param_groups[0]["lr"], rel=1e-12)
        assert e_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr(), rel=1e-12)
    assert ember_to_torch(e_sched.state_dict()) == e_sched.state_dict() == t_sched.state_dict()


def test_ember_resumes_a_torch_checkpoint_with_the_same_next_losses(tmp_path):
    """Model + Adam + StepLR saved by torch mid-training: ember resumes and sees torch's next losses."""
    t_model = _torch_mlp()
    t_opt = torch.optim.Adam(t_model.parameters(), lr=0.05)
    t_sched = torch.optim.lr_scheduler.StepLR(t_opt, step_size=2, gamma=0.5)
    x, y = torch.from_numpy(X), torch.from_numpy(Y)

    def torch_step():
        t_opt.zero_grad()
        loss = torch.nn.functional.mse_loss(t_model(x), y)
        loss.backward()
        t_opt.step()
        t_sched.step()
        return loss.item()

    for _ in range(3):
        torch_step()
    path = tmp_path / "resume.pt"
    torch.save({"model": t_model.state_dict(), "optimizer": t_opt.state_dict(), "scheduler": t_sched.state_dict(),
                "epoch": 3}, path)
    torch_losses = [torch_step() for _ in range(4)]

    ckpt = ember.load(path)
    assert ckpt["epoch"] == 3
    e_model = _ember_mlp()
    e_opt = ember.optim.Adam(e_model.parameters(), lr=1.0)
    e_sched = ember.optim.lr_scheduler.StepLR(e_opt, step_size=2, gamma=0.5)
    e_model.load_state_dict(ckpt["model"])
    e_opt.load_state_dict(ckpt["optimizer"])
    e_sched.load_state_dict(ckpt["scheduler"])
    ex, ey = ember.from_numpy(X), ember.from_numpy(Y)
    ember_losses = []
    for _ in range(4):
        e_opt.zero_grad()
        loss = ember.nn.functional.mse_loss(e_model(ex), ey)
        loss.backward()
        e_opt.step()
        e_sched.step()
        ember_losses.append(loss.item())
    np.testing.assert_allclose(ember_losses, torch_losses, rtol=0, atol=1e-6)
    assert e_opt.param_groups[0]["lr"] == t_opt.param_groups[0]["lr"] == 0.05 * 0.5 ** 3
    _outputs_match(e_model, t_model, atol=1e-5)


def _relocated(data: bytes, location: str) -> bytes:
    """A checkpoint (ember.save of one tensor, protocol 2) whose storage says it was saved on ``location``."""
    old, new = b"X\x03\x00\x00\x00cpu", b"X" + len(location).to_bytes(4, "little") + location.encode()
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = src.read(info)
            if info.filename.endswith("data.pkl"):
                assert body.count(old) == 1
                body = body.replace(old, new)
            dst.writestr(info.filename, body)
    return out.getvalue()


def test_map_location_forms(tmp_path):
    base = torch.arange(6.0)
    path = tmp_path / "t.pt"
    torch.save({"a": base, "b": base[2:]}, path)
    seen = []
    for loc in (None, "cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda s, where: s, lambda s, where: None,
                lambda s, where: seen.append(where)):
        back = ember.load(path, map_location=loc)
        assert back["a"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and back["b"].storage_offset() == 2
        back["a"][3] = 30.0  # the storage is placed once: the views still share it
        assert back["b"][1].item() == 30.0
    assert seen == ["cpu"]  # the callable sees each storage once, with the location it was saved from
    moved = ember.load(path, map_location=lambda s, where: s * 2)
    assert moved["a"].tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0] and moved["b"].tolist() == [4.0, 6.0, 8.0, 10.0]

    buf = io.BytesIO()
    ember.save(ember.arange(3.0), buf)
    on_gpu = tmp_path / "gpu.pt"
    on_gpu.write_bytes(_relocated(buf.getvalue(), "cuda:0"))
    assert torch.load(on_gpu, map_location="cpu").tolist() == [0.0, 1.0, 2.0]  # torch reads the crafted file
    where = []
    for loc in ("cpu", ember.device("cpu"), {"cuda:0": "cpu"}, lambda s, saved: where.append(saved) or s):
        assert ember.load(on_gpu, map_location=loc).tolist() == [0.0, 1.0, 2.0]
    assert where == ["cuda:0"]
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
            ember.load(on_gpu)
        with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
            ember.load(path, map_location={"cpu": "cuda:0"})


def _record_offsets(path):
    """Where each record's bytes start in a zip checkpoint."""
    with zipfile.ZipFile(path) as zf, open(path, "rb") as fh:
        found = {}
        for info in zf.infolist():
            fh.seek(info.header_offset + 26)
            name_len, extra_len = np.frombuffer(fh.read(4), "<u2")
            found[info.filename] = info.header_offset + 30 + int(name_len) + int(extra_len)
        return found


def test_ember_files_have_torchs_records_and_alignment(tmp_path):
    e_path, t_path = tmp_path / "ckpt.pt", tmp_path / "ref.pt"
    ember.save({"a": ember.arange(5.0), "b": ember.ones(3, dtype=ember.int64)}, e_path)
    torch.save({"a": torch.arange(5.0), "b": torch.ones(3, dtype=torch.int64)}, t_path)
    e_names = zipfile.ZipFile(e_path).namelist()
    assert sorted(e_names) == sorted(n.replace("ref/", "ckpt/") for n in zipfile.ZipFile(t_path).namelist())
    assert e_names[0] == "ckpt/data.pkl"
    with zipfile.ZipFile(e_path) as zf:
        assert zf.read("ckpt/byteorder") == b"little" and zf.read("ckpt/version") == b"3\n"
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
    assert all(offset % 64 == 0 for offset in _record_offsets(e_path).values())


def test_mmap_both_ways(tmp_path):
    e_path, t_path, legacy = tmp_path / "e.pt", tmp_path / "t.pt", tmp_path / "legacy.pt"
    ember.save({"w": ember.arange(20.0).reshape(4, 5), "i": ember.arange(3)}, e_path)
    back = torch.load(e_path, mmap=True, weights_only=True)  # torch maps ember's aligned records
    assert back["w"].tolist() == np.arange(20.0).reshape(4, 5).tolist() and back["i"].tolist() == [0, 1, 2]
    torch.save({"w": torch.arange(20.0).reshape(4, 5)[:, 1:]}, t_path)
    mapped = ember.load(t_path, mmap=True)["w"]
    assert mapped.tolist() == np.arange(20.0).reshape(4, 5)[:, 1:].tolist() and mapped.stride() == (5, 1)
    mapped[0, 0] = 99.0  # copy-on-write: the file keeps its bytes
    assert ember.load(t_path)["w"][0, 0].item() == 1.0
    torch.save({"w": torch.ones(2)}, legacy, _use_new_zipfile_serialization=False)
    for load in (torch.load, ember.load):
        with pytest.raises(RuntimeError, match="mmap can only be used with files saved with"):
            load(legacy, mmap=True)
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        ember.load(io.BytesIO(e_path.read_bytes()), mmap=True)


@pytest.mark.parametrize("fmt", FORMATS)
def test_file_objects_and_bytesio_both_ways(tmp_path, fmt):
    path = tmp_path / "f.pt"
    with open(path, "wb") as fh:
        ember.save({"w": ember.arange(4.0)}, fh, **FORMATS[fmt])
    with open(path, "rb") as fh:
        assert torch.load(fh)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    with open(path, "wb") as fh:
        torch.save({"w": torch.arange(4.0)}, fh, **FORMATS[fmt])
    with open(path, "rb") as fh:
        assert ember.load(fh)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    for target in (str(path), path):
        ember.save([ember.ones(2)], target, **FORMATS[fmt])
        assert torch.load(target)[0].tolist() == [1.0, 1.0]
        torch.save([torch.zeros(2)], target, **FORMATS[fmt])
        assert ember.load(target)[0].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_pickle_protocols_both_ways(fmt, protocol):
    obj = {"w": ember.arange(3.0), "size": ember.Size([2]), "name": "x"}
    buf = io.BytesIO()
    ember.save(obj, buf, pickle_protocol=protocol, **FORMATS[fmt])
    if fmt == "zip":
        pkl = zipfile.ZipFile(io.BytesIO(buf.getvalue())).read("archive/data.pkl")
        assert pkl[:2] == bytes([0x80, protocol])
    buf.seek(0)
    # torch's weights-only reader takes protocol 2 only (FRAME opcodes come with 4 and 5), as for its own files
    back = torch.load(buf, weights_only=protocol == 2)
    assert back["w"].tolist() == [0.0, 1.0, 2.0] and back["size"] == torch.Size([2]) and back["name"] == "x"
    buf.seek(0)
    assert ember.load(buf)["w"].tolist() == [0.0, 1.0, 2.0]
    back = torch_to_ember({"w": torch.arange(3.0), "size": torch.Size([2])}, pickle_protocol=protocol,
                          **FORMATS[fmt])
    assert back["w"].tolist() == [0.0, 1.0, 2.0] and back["size"] == ember.Size([2])
    assert type(back["size"]) is ember.Size


def test_bad_pickle_protocols_are_refused():
    for protocol in (0, 1, pickle.HIGHEST_PROTOCOL + 1, "2"):
        with pytest.raises(ValueError, match="pickle_protocol must be an int from 2"):
            ember.save(1, io.BytesIO(), pickle_protocol=protocol)


def test_pickle_module_both_ways():
    back = ember_to_torch({"w": ember.ones(2)}, weights_only=False, load_kwargs={"pickle_module": pickle},
                          pickle_module=pickle)
    assert back["w"].tolist() == [1.0, 1.0]
    assert torch_to_ember({"w": torch.ones(2)}, pickle_module=pickle,
                          load_kwargs={"pickle_module": pickle})["w"].tolist() == [1.0, 1.0]
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf)
    messages = []
    for load in (torch.load, ember.load):
        buf.seek(0)
        with pytest.raises(RuntimeError) as info:
            load(buf, pickle_module=pickle, weights_only=True)
        messages.append(str(info.value))
    assert messages[0] == messages[1] == "Can not safely load weights when explicit pickle_module is specified"


def test_torch_saved_whole_model_loads_as_an_ember_module():
    torch.manual_seed(0)
    t_model = torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.LayerNorm(6), torch.nn.ReLU(),
                                  torch.nn.Dropout(0.2), torch.nn.Linear(6, 2))
    t_model.eval()
    buf = io.BytesIO()
    torch.save(t_model, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL torch.nn.modules.container.Sequential was not an "
                                                     "allowed global"):
        ember.load(buf)
    buf.seek(0)
    e_model = ember.load(buf, weights_only=False)
    assert type(e_model) is ember.nn.Sequential and not e_model.training
    assert [type(m) for m in e_model] == [ember.nn.Linear, ember.nn.LayerNorm, ember.nn.ReLU, ember.nn.Dropout,
                                          ember.nn.Linear]
    assert all(isinstance(p, ember.nn.Parameter) for p in e_model.parameters())
    assert [n for n, _ in e_model.named_parameters()] == [n for n, _ in t_model.named_parameters()]
    _outputs_match(e_model, t_model)


def test_ember_saved_whole_model_and_optimizer_load_back(tmp_path):
    model = _ember_mlp()
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    path = tmp_path / "whole.pt"
    ember.save({"model": model, "opt": opt}, path)
    with pytest.raises(pickle.UnpicklingError, match="ember.nn.modules.container.Sequential"):
        ember.load(path)
    back = ember.load(path, weights_only=False)
    assert type(back["model"]) is ember.nn.Sequential and type(back["opt"]) is ember.optim.SGD
    assert back["opt"].param_groups[0]["params"][0] is back["model"][0].weight
    x = ember.from_numpy(X)
    np.testing.assert_array_equal(back["model"](x).detach().numpy(), model(x).detach().numpy())
    assert isinstance(torch.load(path, weights_only=False)["model"], ember.nn.Sequential)  # torch unpickles it too


def test_user_class_through_safe_globals_both_ways():
    cfg = TrainConfig(lr=0.1, layers=[3, 8, 2], name="mlp")
    buf = io.BytesIO()
    ember.save({"cfg": cfg, "w": ember.ones(2)}, buf)
    name = f"{TrainConfig.__module__}.TrainConfig"
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=f"Unsupported global: GLOBAL {name} was not an allowed"):
        ember.load(buf)
    assert serialization.get_safe_globals() == []
    with serialization.safe_globals([TrainConfig]):
        assert serialization.get_safe_globals() == [TrainConfig]
        buf.seek(0)
        back = ember.load(buf)
    assert back["cfg"] == cfg and type(back["cfg"]) is TrainConfig and back["w"].tolist() == [1.0, 1.0]
    assert serialization.get_safe_globals() == []  # the context manager restores the list
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=name):
        ember.load(buf)
    serialization.add_safe_globals([TrainConfig])
    assert serialization.get_safe_globals() == [TrainConfig]
    buf.seek(0)
    assert ember.load(buf)["cfg"] == cfg
    serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []
    serialization.add_safe_globals([(TrainConfig, "somewhere.else.Config")])  # a class saved under another name
    assert serialization.get_safe_globals() == [(TrainConfig, "somewhere.else.Config")]
    serialization.clear_safe_globals()

    with torch.serialization.safe_globals([TrainConfig]):
        buf.seek(0)
        assert torch.load(buf)["cfg"] == cfg  # torch reads ember's file under its own allowlist
        t_buf = io.BytesIO()
        torch.save({"cfg": cfg, "w": torch.ones(2)}, t_buf)
    t_buf.seek(0)
    with serialization.safe_globals([TrainConfig]):
        back = ember.load(t_buf)
    assert back["cfg"] == cfg and back["w"].tolist() == [1.0, 1.0]
