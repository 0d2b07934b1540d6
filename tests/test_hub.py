"""ember.hub: the checkpoint cache (file:// and a loopback http.server, never the internet), hash checks, fast
failures without a network, and hubconf.py entry points from a local folder or a cached GitHub checkout."""
from __future__ import annotations

import functools
import hashlib
import http.server
import os
import socket
import sys
import threading
import urllib.error

import pytest

import ember
from ember import hub


@pytest.fixture(autouse=True)
def hub_home(tmp_path, monkeypatch):
    """Every test gets its own EMBER_HOME and no set_dir left over from another."""
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "home"))
    yield tmp_path / "home"
    sys.modules.pop("helpers", None)  # the test repos' sibling module, imported by their hubconf.py


def _checkpoint(folder, stem="weights"):
    """An ember.save'd state dict named ``<stem>-<first 8 hex digits of its sha256>.pth``; returns (path, state)."""
    state = {"weight": ember.arange(6.0).reshape(2, 3), "bias": ember.tensor([1, 2])}
    folder.mkdir(parents=True, exist_ok=True)
    raw = folder / "raw.pth"
    ember.save(state, raw)
    path = folder / f"{stem}-{hashlib.sha256(raw.read_bytes()).hexdigest()[:8]}.pth"
    raw.rename(path)
    return path, state


def test_dirs(hub_home, tmp_path, monkeypatch):
    assert hub.get_dir() == str(hub_home / "hub")
    monkeypatch.delenv("EMBER_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.get_dir() == str(tmp_path / "xdg" / "ember" / "hub")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))  # torch's cache holds torch's files: not read
    assert hub.get_dir() == str(tmp_path / "xdg" / "ember" / "hub")
    hub.set_dir(tmp_path / "chosen")
    assert hub.get_dir() == str(tmp_path / "chosen")


def test_file_url_download_then_cache(hub_home, tmp_path, capsys):
    path, state = _checkpoint(tmp_path / "src")
    loaded = hub.load_state_dict_from_url(path.as_uri(), check_hash=True, progress=False)
    assert set(loaded) == {"weight", "bias"} and ember.equal(loaded["weight"], state["weight"])
    cached = hub_home / "hub" / "checkpoints" / path.name
    assert cached.is_file() and f'Downloading: "{path.as_uri()}" to {cached}' in capsys.readouterr().err
    path.unlink()  # the source is gone: the cache alone serves the next call, with no download
    again = hub.load_state_dict_from_url(path.as_uri(), check_hash=True)
    assert ember.equal(again["bias"], state["bias"]) and "Downloading" not in capsys.readouterr().err


def test_file_name_model_dir_and_map_location(tmp_path):
    path, state = _checkpoint(tmp_path / "src")
    loaded = hub.load_state_dict_from_url(path.as_uri(), model_dir=str(tmp_path / "models"), file_name="mine.pth",
                                          map_location="cpu", progress=False)
    assert (tmp_path / "models" / "mine.pth").is_file() and loaded["weight"].device == ember.device("cpu")


def test_hash_mismatch_leaves_nothing_behind(tmp_path):
    path, _ = _checkpoint(tmp_path / "src")
    wrong = path.with_name("weights-deadbeef.pth")
    path.rename(wrong)
    models = tmp_path / "models"
    with pytest.raises(RuntimeError, match=r'invalid hash value \(expected "deadbeef", got "'):
        hub.load_state_dict_from_url(wrong.as_uri(), model_dir=str(models), check_hash=True, progress=False)
    assert list(models.iterdir()) == []  # neither the file nor a .partial
    # without check_hash the same name loads
    assert "weight" in hub.load_state_dict_from_url(wrong.as_uri(), model_dir=str(models), progress=False)


def test_hash_message_matches_torch(tmp_path, torch_ref):
    path, _ = _checkpoint(tmp_path / "src")
    messages = []
    for download, dst in ((hub.download_url_to_file, "ember.bin"), (torch_ref.hub.download_url_to_file, "torch.bin")):
        with pytest.raises(RuntimeError) as info:
            download(path.as_uri(), str(tmp_path / dst), hash_prefix="0000", progress=False)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@pytest.fixture
def http_folder(tmp_path):
    """A loopback http.server serving tmp_path/www, shut down after the test."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_http_download_with_progress(http_folder, tmp_path, capsys):
    root, base = http_folder
    payload = os.urandom(300_000)
    (root / "blob.bin").write_bytes(payload)
    dst = tmp_path / "blob.bin"
    hub.download_url_to_file(f"{base}/blob.bin", str(dst), hash_prefix=hashlib.sha256(payload).hexdigest()[:10])
    assert dst.read_bytes() == payload
    assert "300000 / 300000 bytes (100%)" in capsys.readouterr().err
    with pytest.raises(urllib.error.HTTPError, match=f"ember.hub downloading {base}/missing.bin") as info:
        hub.download_url_to_file(f"{base}/missing.bin", str(tmp_path / "missing.bin"), progress=False)
    assert info.value.code == 404 and not (tmp_path / "missing.bin").exists()


def test_unreachable_server_fails_with_the_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/w.pth"
    with pytest.raises(urllib.error.URLError, match=f"could not download {url}"):
        hub.load_state_dict_from_url(url, progress=False)


def test_silent_server_times_out(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_HUB_TIMEOUT", "0.5")
    with socket.socket() as listener:  # accepts connections (the backlog) and never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/w.pth"
        with pytest.raises(urllib.error.URLError, match="timed out"):
            hub.download_url_to_file(url, str(tmp_path / "w.pth"), progress=False)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("EMBER_HUB_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="EMBER_HUB_TIMEOUT"):
        hub.download_url_to_file(url, str(tmp_path / "w.pth"), progress=False)


HUBCONF = '''
"""A tiny hub repo."""
dependencies = ["numpy"]
import ember
from helpers import width  # a module beside hubconf.py


def tiny(n=2, bias=True):
    """A Linear layer of width n."""
    return ember.nn.Linear(n, width(), bias=bias)


def _private():
    return None


needs_missing = None
'''


def _repo(folder, dependencies=None):
    folder.mkdir(parents=True)
    text = HUBCONF if dependencies is None else HUBCONF.replace('["numpy"]', repr(dependencies))
    (folder / "hubconf.py").write_text(text)
    (folder / "helpers.py").write_text("def width():\n    return 3\n")
    return folder


def test_local_source(tmp_path):
    folder = str(_repo(tmp_path / "repo"))
    model = hub.load(folder, "tiny", 4, source="local", bias=False)
    assert isinstance(model, ember.nn.Linear) and tuple(model.weight.shape) == (3, 4) and model.bias is None
    assert hub.load(folder, "tiny", source="LOCAL").in_features == 2
    assert folder not in sys.path
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        hub.load(folder, "nope", source="local")
    with pytest.raises(RuntimeError, match="Cannot find callable needs_missing in hubconf"):
        hub.load(folder, "needs_missing", source="local")
    with pytest.raises(ValueError, match="model should be a string"):
        hub.load(folder, hub, source="local")
    with pytest.raises(ValueError, match='Unknown source: "ftp"'):
        hub.load(folder, "tiny", source="ftp")
    with pytest.raises(FileNotFoundError, match="no hubconf.py"):
        hub.load(str(tmp_path), "tiny", source="local")
    missing = str(_repo(tmp_path / "other", dependencies=["numpy", "surely_not_installed_pkg"]))
    with pytest.raises(RuntimeError, match="Missing dependencies: surely_not_installed_pkg"):
        hub.load(missing, "tiny", source="local")


def test_local_errors_match_torch(tmp_path, torch_ref):
    folder = str(_repo(tmp_path / "repo"))
    for call in (lambda lib: lib.hub.load(folder, "nope", source="local"),
                 lambda lib: lib.hub.load(folder, "tiny", source="ftp")):
        outcomes = []
        for lib in (ember, torch_ref):
            with pytest.raises(Exception) as info:
                call(lib)
            outcomes.append((type(info.value), str(info.value)))
        assert outcomes[0] == outcomes[1]


def test_github_source_from_the_cache(hub_home, capsys):
    with pytest.raises(RuntimeError, match="not in the hub cache.*source='local'"):
        hub.load("someone/tinyrepo", "tiny")
    _repo(hub_home / "hub" / "someone_tinyrepo_main")
    assert hub.list("someone/tinyrepo") == ["tiny", "width"]  # public callables, imported ones too (as torch)
    assert "Using cache found in" in capsys.readouterr().err
    assert hub.help("someone/tinyrepo", "tiny") == "A Linear layer of width n."
    capsys.readouterr()
    assert hub.load("someone/tinyrepo", "tiny", 5, verbose=False).in_features == 5
    assert capsys.readouterr().err == ""
    _repo(hub_home / "hub" / "someone_tinyrepo_release_v1")  # a ref with a slash, as torch names its folder
    assert hub.load("someone/tinyrepo:release/v1", "tiny").in_features == 2
    with pytest.raises(RuntimeError, match="force_reload=True asks for a fresh download"):
        hub.load("someone/tinyrepo", "tiny", force_reload=True)
    with pytest.raises(ValueError, match="repo_owner/repo_name"):
        hub.list("no-slash")


def test_trust_repo_false_asks(hub_home, monkeypatch):
    _repo(hub_home / "hub" / "someone_tinyrepo_main")
    monkeypatch.setattr("builtins.input", lambda prompt: "no")
    with pytest.raises(RuntimeError, match="Untrusted repository"):
        hub.load("someone/tinyrepo", "tiny", trust_repo=False)
    monkeypatch.setattr("builtins.input", lambda prompt: "yes")
    assert hub.load("someone/tinyrepo", "tiny", trust_repo=False).in_features == 2
