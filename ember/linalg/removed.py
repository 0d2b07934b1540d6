"""Linear-algebra functions torch removed in 1.9 but still exports (and binds as Tensor methods): calling one
raises the RuntimeError torch raises, naming its torch.linalg replacement. Kept so that code probing for them
(``hasattr(torch, "lstsq")``) sees what it sees in torch."""
from __future__ import annotations

from typing import Any, Callable

_REPLACEMENTS = {
    "lstsq": "torch.linalg.lstsq(A, B) (its arguments are in the other order, and the residuals are its "
             "'residuals' field instead of the last rows of the solution)",
    "solve": "torch.linalg.solve(A, B) (its arguments are in the other order; torch.linalg.lu_factor gives the LU "
             "factorization)",
    "eig": "torch.linalg.eig / torch.linalg.eigvals (complex results)",
    "symeig": "torch.linalg.eigh / torch.linalg.eigvalsh (mind the triangle: symeig read the upper one by default, "
              "UPLO defaults to 'L')",
    "matrix_rank": "torch.linalg.matrix_rank (its 'symmetric' flag is now 'hermitian')",
}


def _removed(name: str) -> Callable[..., Any]:
    def removed(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"torch.{name} was deprecated in version 1.9 and has been removed; use "
                           f"{_REPLACEMENTS[name]} instead.")

    removed.__name__ = removed.__qualname__ = name
    removed.__doc__ = f"torch.{name}: removed from torch in 1.9; always raises RuntimeError naming its replacement."
    return removed


lstsq, solve, eig, symeig, matrix_rank = (_removed(name) for name in _REPLACEMENTS)
TORCH_FUNCTIONS = {name: globals()[name] for name in _REPLACEMENTS}
TENSOR_METHODS = {name: globals()[name] for name in ("lstsq", "solve", "eig", "symeig")}
