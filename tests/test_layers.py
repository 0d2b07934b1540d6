"""The import rules of docs/architecture.md, checked on the source: imports only point down the layers.

Every ``import`` of ember's code is read from the syntax tree, including imports written inside functions, so a
lazy import cannot hide an upward dependency. (Importing a module would not do: importing ``ember.kernels.cpu``
runs ``ember/__init__.py`` first, which loads every layer.)
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import pytest

import ember

ROOT = Path(ember.__file__).resolve().parent

# Modules that import nothing of ember: the kernels may use them.
LEAVES = ("ember.opcodes", "ember._determinism", "ember._cuda_context", "ember._matmul_precision", "ember._runtime",
          "ember._user_warnings", "ember.return_types", "ember._grad_state", "ember._seeds")

# What each layer must never import (a prefix matches the module and everything under it).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "ember.kernels": ("ember.tensor", "ember.autograd", "ember.nn", "ember.optim", "ember.utils", "ember.linalg",
                      "ember.cuda", "ember.serialization", "ember.profiler", "ember._settings"),
    "ember.tensor": ("ember.cuda",),  # the tensor layer takes CUDA's state from ember._cuda_runtime, below it
    "ember.autograd": ("ember.nn", "ember.optim", "ember.utils", "ember.kernels"),
    "ember.nn": ("ember.kernels", "ember.optim", "ember.utils"),
    "ember.optim": ("ember.kernels",),
    "ember.utils": ("ember.kernels",),
    "ember.serialization": ("ember.kernels",),
    "ember.profiler": ("ember.kernels", "ember.nn"),
    "ember.distributions": ("ember.kernels", "ember.nn", "ember.optim", "ember.utils"),
}
# Backend selection (ember.tensor._dispatch.backend) is called by the tensor layer only.
SELECTORS = {"backend"}
# Outside the kernels, only backend selection and the CUDA runtime (its lazy initialisation) import a backend package.
BACKEND_IMPORTERS = ("ember.tensor._dispatch", "ember._cuda_runtime")
SELECTION_FREE = ("ember.nn", "ember.optim", "ember.utils", "ember.autograd", "ember.serialization",
                  "ember.profiler", "ember.distributions")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@lru_cache(maxsize=None)
def _imports() -> dict[str, list[tuple[str, tuple[str, ...], int]]]:
    """module -> [(imported module, names taken from it, line)] for every ember import in its source."""
    found: dict[str, list[tuple[str, tuple[str, ...], int]]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        module = _module_name(path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        rows = found.setdefault(module, [])
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target == "ember" or target.startswith("ember."):
                    rows.append((target, tuple(a.name for a in node.names), node.lineno))
            elif isinstance(node, ast.Import):
                rows.extend((a.name, (), node.lineno) for a in node.names if a.name.split(".")[0] == "ember")
    return found


def _targets(target: str, names: tuple[str, ...]) -> list[str]:
    """The modules an import statement loads: ``from pkg import sub`` names the submodule ``pkg.sub``."""
    subs = [f"{target}.{n}" for n in names if (ROOT.parent / f"{target}.{n}".replace(".", "/")).exists()
            or (ROOT.parent / (f"{target}.{n}".replace(".", "/") + ".py")).exists()]
    return subs or [target]


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_every_module_is_read():
    assert "ember.tensor.tensor" in _imports() and "ember.kernels.cpu.elementwise" in _imports()


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_point_down(layer):
    broken = [f"{module}:{line} imports {target}"
              for module, rows in _imports().items() if _within(module, layer)
              for target, names, line in rows for loaded in _targets(target, names)
              if any(_within(loaded, banned) for banned in FORBIDDEN[layer])]
    assert broken == []


@pytest.mark.parametrize("leaf", LEAVES)
def test_leaf_modules_import_nothing_of_ember(leaf):
    assert _imports()[leaf] == []


# What the layers below the tensor layer may import besides the leaf modules.
BELOW_THE_TENSOR_LAYER = {"ember.kernels": ("ember.kernels",),
                          "ember._cuda_runtime": ("ember._cuda_runtime", "ember.kernels")}


@pytest.mark.parametrize("layer", sorted(BELOW_THE_TENSOR_LAYER))
def test_the_layers_below_the_tensor_layer_import_only_what_lies_below(layer):
    broken = [f"{module}:{line} imports {loaded}"
              for module, rows in _imports().items() if _within(module, layer)
              for target, names, line in rows for loaded in _targets(target, names)
              if not any(_within(loaded, allowed) for allowed in BELOW_THE_TENSOR_LAYER[layer])
              and loaded not in LEAVES]
    assert broken == []


def test_backends_do_not_import_each_other():
    """What the CPU and CUDA kernels share lives in ember.kernels.common."""
    broken = [f"{module}:{line} imports {loaded}"
              for module, rows in _imports().items()
              for mine, other in (("ember.kernels.cpu", "ember.kernels.cuda"), ("ember.kernels.cuda", "ember.kernels.cpu"))
              if _within(module, mine)
              for target, names, line in rows for loaded in _targets(target, names) if _within(loaded, other)]
    assert broken == []


def test_only_the_tensor_layer_selects_a_backend():
    broken = [f"{module}:{line} takes {sorted(SELECTORS & set(names))} from {target}"
              for module, rows in _imports().items() if any(_within(module, layer) for layer in SELECTION_FREE)
              for target, names, line in rows if target == "ember.tensor._dispatch" and SELECTORS & set(names)]
    assert broken == []


def test_only_backend_selection_imports_a_backend():
    """The rest of ember reaches the kernels through ``backend(*operands)``; neutral helpers come from
    ``ember.kernels.common``."""
    broken = [f"{module}:{line} imports {loaded}"
              for module, rows in _imports().items()
              if not _within(module, "ember.kernels") and not any(_within(module, m) for m in BACKEND_IMPORTERS)
              for target, names, line in rows for loaded in _targets(target, names)
              if _within(loaded, "ember.kernels.cpu") or _within(loaded, "ember.kernels.cuda")]
    assert broken == []


def test_no_module_takes_names_from_the_top_level_package():
    """Modules import what they use from where it is defined; ``ember/__init__.py`` only gathers the names."""
    broken = [f"{module}:{line} takes {name} from ember"
              for module, rows in _imports().items() if module != "ember"
              for target, names, line in rows if target == "ember"
              for name in names if _targets("ember", (name,)) == ["ember"]]
    assert broken == []


# The tensor core: the Tensor class's state, metadata and construction, the one seam between Tensor and autograd.
CORE = "ember.tensor.tensor"


def _source(module: str) -> str:
    path = ROOT.parent / (module.replace(".", "/") + ".py")
    return (path if path.exists() else ROOT.parent / module.replace(".", "/") / "__init__.py").read_text()


@lru_cache(maxsize=None)
def _function_level_lines(module: str) -> frozenset[int]:
    """The lines of the import statements written inside functions of ``module``."""
    tree = ast.parse(_source(module), module)
    return frozenset(node.lineno for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                     for node in ast.walk(fn) if isinstance(node, (ast.Import, ast.ImportFrom)))


def test_the_tensor_core_imports_nothing_of_autograd():
    broken = [f"{CORE}:{line} imports {loaded}" for target, names, line in _imports()[CORE]
              for loaded in _targets(target, names) if _within(loaded, "ember.autograd")]
    assert broken == []


def test_autograd_imports_the_tensor_core_at_module_top():
    """No import of the core written inside a function: autograd takes ``Tensor`` once, at its top."""
    broken = [f"{module}:{line} imports {CORE} inside a function"
              for module, rows in _imports().items() if _within(module, "ember.autograd")
              for target, names, line in rows if CORE in _targets(target, names)
              and line in _function_level_lines(module)]
    assert broken == []


# The imports of ember's code written inside functions, by (module, module it loads), each with why it cannot sit
# at the top. Every other import of ember's code is at the top of its module: no lazy import hides a cycle.
_CUDA_ON_FIRST_USE = "the CUDA backend (numba-cuda) loads on first CUDA use, never at `import ember`"
_DEVICE_STORAGE = ("kernels/cuda/ndarray.py is DeviceStorage's base and serves NumPy's calls with the kernels, "
                   "which make DeviceStorages")
FUNCTION_LEVEL_IMPORTS: dict[tuple[str, str], str] = {
    ("ember.tensor._dispatch", "ember.kernels.cuda"): _CUDA_ON_FIRST_USE,
    ("ember._cuda_runtime.availability", "ember.kernels.cuda"): _CUDA_ON_FIRST_USE,
    ("ember._cuda_runtime.availability", "ember.kernels.cuda.allocator"): _CUDA_ON_FIRST_USE,
    ("ember._cuda_runtime.generators", "ember.kernels.cuda.random"): _CUDA_ON_FIRST_USE,
    ("ember.tensor.device", "ember.tensor.pinned"): "the tensor core imports device.py; pinned.py imports the core",
    **{("ember.kernels.cuda.ndarray", f"ember.kernels.cuda.{kernels}"): _DEVICE_STORAGE
       for kernels in ("storage", "elementwise", "products", "indexing", "scans", "reductions")},
    ("ember.kernels.cuda.storage", "ember.kernels.cuda.elementwise"): _DEVICE_STORAGE,
    ("ember.kernels.cuda.storage", "ember.kernels.cuda.bfloat16"): _DEVICE_STORAGE,
    ("ember.profiler.events", "ember.profiler.table"): "the table formats events (table.py imports events.py)",
}


def test_imports_inside_functions_are_the_listed_ones():
    found = {(module, loaded) for module, rows in _imports().items() for target, names, line in rows
             if line in _function_level_lines(module) for loaded in _targets(target, names)}
    assert sorted(found - FUNCTION_LEVEL_IMPORTS.keys()) == []
    assert sorted(FUNCTION_LEVEL_IMPORTS.keys() - found) == []  # the list stays exact


METHODS = "ember.tensor.methods"


def _binds_tensor_attributes(tree: ast.AST) -> bool:
    """Whether ``tree`` sets an attribute of ``Tensor`` (``Tensor.x = ...`` or ``setattr(Tensor, ...)``)."""
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "Tensor"
               for t in targets):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "Tensor":
            return True
    return False


def test_tensor_methods_are_bound_in_one_place():
    """``tensor/methods.py`` binds every method onto ``Tensor`` (the tensor layer's ops, autograd's ``backward``
    and hooks, the activations that are tensor ops); ``ember.linalg``, above the tensor layer, hands it its own."""
    binders = [module for module in _imports() if module != METHODS
               and _binds_tensor_attributes(ast.parse(_source(module)))]
    assert binders == []
    assert sorted(module for module, rows in _imports().items()
                  if any(target == METHODS for target, _, _ in rows)) == ["ember.linalg"]

