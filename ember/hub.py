"""``ember.hub``: torch.hub's cache of downloaded checkpoints and its ``hubconf.py`` entry points.

Where files go: ``get_dir()`` is ``$EMBER_HOME/hub``, ``EMBER_HOME`` defaulting to ``$XDG_CACHE_HOME/ember`` (that is
``~/.cache/ember``), unless ``set_dir`` chose another folder; checkpoints live in ``<hub dir>/checkpoints`` and
GitHub checkouts in ``<hub dir>/<owner>_<repo>_<ref>``, torch's layout. torch's ``TORCH_HOME`` is deliberately not
read: the checkpoints torch caches there are torch's pickle-based files, which ``ember.load`` does not read.

Downloads go through urllib (``http://``, ``https://`` and ``file://`` URLs) with a timeout of
``EMBER_HUB_TIMEOUT`` seconds (30 by default) for connecting and for each read, so a machine without network
fails at once with a URLError naming the URL instead of hanging. A checkpoint already in the cache is loaded
without any network access. ``load(..., source="local")`` imports a folder's ``hubconf.py``; GitHub sources are
used from the hub cache only (a checkout placed there, or left by an earlier run): fetching one is refused with
a RuntimeError that says how to proceed.
"""
from __future__ import annotations

import contextlib
import hashlib
import http.client
import importlib.util
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from types import ModuleType
from typing import Any, Callable, Iterator

from .serialization import load as _load_checkpoint

ENV_EMBER_HOME = "EMBER_HOME"
ENV_TIMEOUT = "EMBER_HUB_TIMEOUT"
DEFAULT_TIMEOUT_S = 30.0
# torch's rule: a checkpoint named ``name-<hex digits>.ext`` carries a prefix of its SHA-256
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_READ_CHUNK = 128 * 1024
_hub_dir: str | None = None


def get_dir() -> str:
    """The hub cache folder: the one ``set_dir`` chose, else ``$EMBER_HOME/hub`` (see the module docstring)."""
    if _hub_dir is not None:
        return _hub_dir
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    return os.path.join(os.path.expanduser(os.getenv(ENV_EMBER_HOME, os.path.join(cache, "ember"))), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Use ``d`` (``~`` expanded) as the hub cache folder from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def _timeout() -> float:
    value = os.getenv(ENV_TIMEOUT, "")
    try:
        return float(value) if value else DEFAULT_TIMEOUT_S
    except ValueError:
        raise ValueError(f"ember.hub: {ENV_TIMEOUT} must be a number of seconds, got {value!r}") from None


class _Progress:
    """Bytes received so far, on one stderr line (torch draws a tqdm bar)."""

    def __init__(self, total: int | None, enabled: bool) -> None:
        self.total, self.enabled, self.done = total, enabled, 0

    def update(self, n: int) -> None:
        self.done += n
        if self.enabled:
            of = f" / {self.total} bytes ({self.done / self.total:.0%})" if self.total else " bytes"
            sys.stderr.write(f"\r{self.done}{of}")

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def _copy_url(url: str, out: Any, hash_prefix: str | None, progress: bool) -> None:
    """Stream ``url`` into the open binary file ``out``, checking the SHA-256 prefix when one is given."""
    request = urllib.request.Request(url, headers={"User-Agent": "ember.hub"})
    try:
        with urllib.request.urlopen(request, timeout=_timeout()) as response:
            length = response.headers.get("Content-Length")
            bar = _Progress(int(length) if length else None, progress)
            sha256 = hashlib.sha256()
            try:
                while chunk := response.read(_READ_CHUNK):
                    out.write(chunk)
                    sha256.update(chunk)
                    bar.update(len(chunk))
            finally:
                bar.close()
    except urllib.error.HTTPError as e:
        raise urllib.error.HTTPError(url, e.code, f"{e.reason} (ember.hub downloading {url})", e.headers,
                                     None) from None
    except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", e)
        raise urllib.error.URLError(f"ember.hub could not download {url}: {reason} (is the network reachable? a "
                                    f"file already in the cache is used without it)") from None
    digest = sha256.hexdigest()
    if hash_prefix is not None and digest[:len(hash_prefix)] != hash_prefix:
        raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Download ``url`` to the path ``dst``: into a temporary file beside it, moved into place only when complete
    (and, with ``hash_prefix``, only when its SHA-256 starts with that prefix, else RuntimeError)."""
    dst = os.path.expanduser(dst)
    partial = f"{dst}.{uuid.uuid4().hex}.partial"
    try:
        with open(partial, "xb") as out:
            _copy_url(url, out, hash_prefix, progress)
        os.replace(partial, dst)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None,
                             progress: bool = True, check_hash: bool = False, file_name: str | None = None,
                             weights_only: bool = False) -> Any:
    """Load the ``ember.save`` checkpoint at ``url``, downloading it into ``model_dir`` (default
    ``<hub dir>/checkpoints``) unless a file of that name is already there.

    The file is named ``file_name`` or the URL's last path component; with ``check_hash`` a download must match the
    SHA-256 prefix in a name like ``resnet18-5c106cde.pth``. Loading is ``ember.load``, which runs no code from the
    file whatever ``weights_only`` says; ``map_location`` is passed on.
    """
    model_dir = os.path.join(get_dir(), "checkpoints") if model_dir is None else os.path.expanduser(model_dir)
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        sys.stderr.write(f'Downloading: "{url}" to {cached}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress=progress)
    return _load_checkpoint(cached, map_location=map_location, weights_only=weights_only)


# ---- hubconf.py entry points ---------------------------------------------------------------------------------------

@contextlib.contextmanager
def _on_sys_path(folder: str) -> Iterator[None]:
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        sys.path.remove(folder)


def _import_hubconf(folder: str) -> ModuleType:
    """``folder/hubconf.py`` as a fresh module; call it with ``folder`` on sys.path (hubconf imports its siblings)."""
    path = os.path.join(folder, "hubconf.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"ember.hub: no hubconf.py in {folder!r}")
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _entrypoint(module: ModuleType, model: Any) -> Callable:
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    missing = [name for name in getattr(module, "dependencies", ()) if importlib.util.find_spec(name) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    entry = getattr(module, model, None)
    if entry is None or not callable(entry):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return entry


def _parse_github(github: str) -> tuple[str, str, str | None]:
    repo, _, ref = github.partition(":")
    owner, slash, name = repo.partition("/")
    if not (owner and slash and name) or "/" in name or ":" in ref:
        raise ValueError(f"ember.hub: a GitHub source is 'repo_owner/repo_name[:ref]', got {github!r}")
    return owner, name, ref or None


def _cached_repo(github: str, force_reload: bool, trust_repo: Any, verbose: bool) -> str:
    """The hub cache's checkout of ``github`` (``<hub dir>/<owner>_<repo>_<ref>``; without a ref, main then master).
    Fetching from GitHub needs the network, which ember.hub does not use for code: a missing checkout (or
    ``force_reload``) is a RuntimeError."""
    owner, name, ref = _parse_github(github)
    hub_dir = get_dir()
    folders = [os.path.join(hub_dir, f"{owner}_{name}_{r.replace('/', '_')}") for r in ([ref] if ref else
                                                                                       ["main", "master"])]
    found = next((f for f in folders if os.path.isdir(f)), None)
    if found is None or force_reload:
        why = "force_reload=True asks for a fresh download" if found else f"it is not in the hub cache ({hub_dir})"
        raise RuntimeError(f"ember.hub cannot load {github!r}: {why}, and ember.hub does not fetch code from GitHub. "
                           f"Clone the repository and use ember.hub.load(<folder>, model, source='local'), or place "
                           f"its checkout at {folders[0]}")
    if trust_repo is False:  # a cached checkout counts as trusted (as in torch); False still asks
        answer = input(f"Do you trust the repository {owner}/{name} (cached at {found}) and want to run its "
                       f"hubconf.py (y/N)?").strip().lower()
        if answer in ("n", "no", ""):
            raise RuntimeError("Untrusted repository.")
        if answer not in ("y", "yes"):
            raise ValueError(f"Unrecognized response {answer}.")
    if verbose:
        sys.stderr.write(f"Using cache found in {found}\n")
    return found


def list(github: str, force_reload: bool = False, skip_validation: bool = False, trust_repo: Any = "check",
         verbose: bool = True) -> list[str]:  # noqa: A001 - torch's name
    """The public callables of a cached GitHub repo's ``hubconf.py`` (``skip_validation`` has no effect: nothing is
    fetched, so there is nothing to validate)."""
    folder = _cached_repo(github, force_reload, trust_repo, verbose)
    with _on_sys_path(folder):
        module = _import_hubconf(folder)
    return [name for name in dir(module) if not name.startswith("_") and callable(getattr(module, name))]


def help(github: str, model: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo: Any = "check") -> str | None:
    """The docstring of entry point ``model`` in a cached GitHub repo's ``hubconf.py``."""
    folder = _cached_repo(github, force_reload, trust_repo, True)
    with _on_sys_path(folder):
        return _entrypoint(_import_hubconf(folder), model).__doc__


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github", trust_repo: Any = "check",
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False, **kwargs: Any) -> Any:
    """Call entry point ``model`` of ``hubconf.py`` with ``*args, **kwargs``: from the folder ``repo_or_dir`` with
    ``source="local"``, or from the hub cache's checkout of ``owner/repo[:ref]`` with ``source="github"`` (a cached
    checkout counts as trusted, as in torch; ``trust_repo=False`` still asks on stdin; ``skip_validation`` has no
    effect, nothing being fetched)."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    folder = repo_or_dir if source == "local" else _cached_repo(repo_or_dir, force_reload, trust_repo, verbose)
    with _on_sys_path(folder):
        return _entrypoint(_import_hubconf(folder), model)(*args, **kwargs)


__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]
