"""torch.func's derivative transforms: ``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd`` and
``hessian``, on ember's tape autograd.

Each call runs the user's function on fresh copies of the differentiated inputs (``ember.autograd.functional``'s
``_fresh``: linked to the caller's graph when grad mode is on and they require grad, detached leaves otherwise) and
pulls cotangents back with ``_pullback``; forward mode uses ``forward_ad``'s dual tensors. The results stay in the
caller's graph exactly when an input did, so the transforms compose: ``grad(grad(f))``, ``jacrev(jacrev(f))``,
``vmap(grad(f))``. Inputs and outputs may be nested tuples, lists and dicts of tensors (a model's parameters).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..autograd import forward_ad
from ..autograd.functional import _fresh, _pullback
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..tensor.creation import eye
from ..tensor.joins import cat, stack
from ..tensor.random import get_rng_state, set_rng_state
from ..tensor.tensor import Tensor
from ._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian"]

RANDOMNESS = ("error", "different", "same")


def _check_argnums(name: str, argnums: Any, nargs: int) -> tuple[int, ...]:
    """``argnums`` as a tuple of non-negative positions, with torch's errors."""
    many = isinstance(argnums, tuple)
    nums = argnums if many else (argnums,)
    if many and not nums:
        raise RuntimeError(f"{name}: argnums must be non-empty")
    for n in nums:
        if not isinstance(n, int) or isinstance(n, bool):
            raise RuntimeError(f"{name}: argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -nargs <= n < nargs:
            raise RuntimeError(f"{name}: Got argnums={n}, but only {nargs} positional inputs")
    nums = tuple(n % nargs for n in nums)
    if len(set(nums)) != len(nums):
        raise RuntimeError(f"{name}: argnums must be unique, got {argnums}")
    return nums


def _tensor_leaves(name: str, tree: Any, what: str) -> tuple[list, Any]:
    leaves, spec = tree_flatten(tree)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"{name}: Expected {what} to only contain Tensors, got {type(leaf)}")
    return leaves, spec


class _Differentiated:
    """The arguments ``argnums`` picks out, as fresh leaves spliced back into the call's arguments."""

    def __init__(self, name: str, args: tuple, argnums: Any):
        self.many = isinstance(argnums, tuple)
        self.nums = _check_argnums(name, argnums, len(args))
        picked = tuple(args[n] for n in self.nums)
        leaves, self.spec = _tensor_leaves(name, picked, "the arguments being differentiated")
        for leaf in leaves:
            if not (leaf.dtype.is_floating_point or leaf.dtype.is_complex):
                raise RuntimeError(f"{name}: only Tensors of floating point dtype can require gradients; got an "
                                   f"argument of dtype {leaf.dtype}")
        # the results stay in the caller's graph when the caller is building one through these inputs
        self.keep_graph = is_grad_enabled() and any(leaf.requires_grad for leaf in leaves)
        self.leaves = [_fresh(leaf, self.keep_graph, True) for leaf in leaves]
        fresh = tree_unflatten(self.leaves, self.spec)
        self.args = list(args)
        for n, value in zip(self.nums, fresh):
            self.args[n] = value

    def structure(self, flat: list) -> Any:
        """Per-input values (gradients, jacobian blocks) shaped as the differentiated arguments."""
        picked = tree_unflatten(list(flat), self.spec)
        return picked if self.many else picked[0]


def _settled(value: Any, keep_graph: bool) -> Any:
    return tree_map(lambda t: t if keep_graph or not isinstance(t, Tensor) else t.detach(), value)


def _split_aux(name: str, out: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{name}(f, ...)(*args): output of function f should be a tuple: (output, aux) if "
                           "has_aux is True")
    return out


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``func`` transformed to return ``(gradient, value)`` (``(gradient, (value, aux))`` with ``has_aux``):
    the gradient of its scalar output with respect to the arguments ``argnums`` names."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with enable_grad():
            diff = _Differentiated("grad_and_value", args, argnums)
            out, aux = _split_aux("grad_and_value", func(*diff.args, **kwargs), has_aux)
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   "instead?")
            grads = _pullback((out,), tuple(diff.leaves), (None,), create_graph=diff.keep_graph)
        keep = diff.keep_graph
        value = _settled(out, keep) if not has_aux else (_settled(out, keep), _settled(aux, keep))
        return diff.structure(grads), value

    return wrapper


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``func`` transformed to return the gradient of its scalar output with respect to the arguments
    ``argnums`` names (``(gradient, aux)`` with ``has_aux``)."""
    transformed = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        grads, value = transformed(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)`` (and ``aux``): ``vjp_fn(cotangents)`` pulls cotangents shaped as the output
    back to a tuple shaped as ``primals``; it may be called many times."""
    with enable_grad():
        diff = _Differentiated("vjp", primals, tuple(range(len(primals))))
        out, aux = _split_aux("vjp", func(*diff.args), has_aux)
        outs, out_spec = _tensor_leaves("vjp", out, "the outputs of f")

    def vjp_fn(cotangents: Any, *, create_graph: bool | None = None) -> tuple:
        cts, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {ct_spec}, primal output: {out_spec}")
        for c, o in zip(cts, outs):
            if not isinstance(c, Tensor) or c.shape != o.shape:
                shape = c.shape if isinstance(c, Tensor) else type(c)
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {shape} and output[0] has a "
                                   f"shape of {o.shape}.")
        graph = create_graph if create_graph is not None else \
            diff.keep_graph or (is_grad_enabled() and any(c.requires_grad for c in cts))
        grads = _pullback(tuple(outs), tuple(diff.leaves), tuple(cts), create_graph=graph)
        return tuple(diff.structure(grads))

    result = (_settled(out, diff.keep_graph), vjp_fn)
    return result + (_settled(aux, diff.keep_graph),) if has_aux else result


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False) -> tuple:
    """``(func(*primals), J tangents)`` (and ``aux``) by forward-mode AD: ``primals`` and ``tangents`` are
    tuples of the same structure. With ``strict`` an output independent of the inputs is an error (else its
    tangent is zeros)."""
    for what, value in (("primals", primals), ("tangents", tangents)):
        if not isinstance(value, (tuple, list)):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected {what} to be a tuple. E.g. it should be valid "
                               "to call f(*primals).")
    p_leaves, p_spec = _tensor_leaves("jvp", tuple(primals), "primals")
    t_leaves, t_spec = _tensor_leaves("jvp", tuple(tangents), "tangents")
    if p_spec != t_spec:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, tangents also must be. Got "
                           f"primals with structure {p_spec} and tangents with structure {t_spec}")
    for p, t in zip(p_leaves, t_leaves):
        if p.shape != t.shape:
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same shape, "
                               f"got {tuple(p.shape)} and {tuple(t.shape)}")
    with forward_ad.dual_level():
        duals = [forward_ad.make_dual(p, t) for p, t in zip(p_leaves, t_leaves)]
        out, aux = _split_aux("jvp", func(*tree_unflatten(duals, p_spec)), has_aux)
        outs, out_spec = _tensor_leaves("jvp", out, "the outputs of f")
        unpacked = [forward_ad.unpack_dual(o) for o in outs]
        if strict and any(u.tangent is None for u in unpacked):
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                               "inputs. This is not allowed with strict=True.")
        values = [u.primal for u in unpacked]
        pushed = [o.new_zeros(tuple(o.shape)) if u.tangent is None else u.tangent for o, u in zip(outs, unpacked)]
    result = (tree_unflatten(values, out_spec), tree_unflatten(pushed, out_spec))
    return result + (aux,) if has_aux else result


def _jacobian_tree(out_spec: Any, blocks: list, diff: Any) -> Any:
    """``blocks[o][i]`` arranged as torch.func does: the output's structure, each leaf holding the inputs'."""
    return tree_unflatten([diff.structure(row) for row in blocks], out_spec)


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """``func`` transformed to return its Jacobian (block shapes ``output.shape + input.shape``) by reverse mode:
    the identity's rows pulled back, ``chunk_size`` of them per batched backward pass (all at once by default)."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with enable_grad():
            diff = _Differentiated("jacrev", args, argnums)
            out, aux = _split_aux("jacrev", func(*diff.args, **kwargs), has_aux)
            outs, out_spec = _tensor_leaves("jacrev", out, "the outputs of f")
            rows = _reverse_rows(outs, diff, chunk_size)
        blocks, start = [], 0
        for o in outs:
            stop = start + o.numel()
            blocks.append([r[start:stop].reshape(tuple(o.shape) + tuple(x.shape)) for r, x in zip(rows, diff.leaves)])
            start = stop
        jac = _settled(_jacobian_tree(out_spec, blocks, diff), diff.keep_graph)
        return (jac, _settled(aux, diff.keep_graph)) if has_aux else jac

    return wrapper


def _reverse_rows(outs: list, diff: _Differentiated, chunk_size: int | None) -> list:
    """Per input, the Jacobian of all outputs (flattened, concatenated) as ``(total, *input.shape)``."""
    total = sum(o.numel() for o in outs)
    if total == 0:
        return [x.new_zeros((0,) + tuple(x.shape)) for x in diff.leaves]
    like = outs[0]
    identity = eye(total, dtype=like.dtype, device=like.device)
    step = chunk_size or total
    pieces: list[list] = [[] for _ in diff.leaves]
    for begin in range(0, total, step):
        rows = identity[begin:begin + step]
        cts, start = [], 0
        for o in outs:
            cts.append(rows[:, start:start + o.numel()].reshape((rows.shape[0],) + tuple(o.shape)))
            start += o.numel()
        grads = _pullback(tuple(outs), tuple(diff.leaves), tuple(cts), create_graph=diff.keep_graph, batched=True)
        for piece, g in zip(pieces, grads):
            piece.append(g)
    return [p[0] if len(p) == 1 else cat(p) for p in pieces]


def jacfwd(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """``func`` transformed to return its Jacobian by forward mode: one dual-number pass per input element.
    ``randomness="same"`` replays the generator's state for every pass (all columns see the same random
    values); ``"different"`` lets it run on; ``"error"`` refuses a function that draws random numbers."""
    if randomness not in RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _check_argnums("jacfwd", argnums, len(args))
        picked = tuple(args[n] for n in nums)
        leaves, spec = _tensor_leaves("jacfwd", picked, "the arguments being differentiated")
        flat_args = list(args)

        def call(tangents: list) -> tuple:
            with forward_ad.dual_level():
                duals = tree_unflatten([forward_ad.make_dual(x, t) for x, t in zip(leaves, tangents)], spec)
                for n, value in zip(nums, duals):
                    flat_args[n] = value
                out, aux = _split_aux("jacfwd", func(*flat_args, **kwargs), has_aux)
                outs, out_spec = _tensor_leaves("jacfwd", out, "the outputs of f")
                unpacked = [forward_ad.unpack_dual(o) for o in outs]
                tangents_out = [o.new_zeros(tuple(o.shape)) if u.tangent is None else u.tangent
                                for o, u in zip(outs, unpacked)]
                return [u.primal for u in unpacked], out_spec, tangents_out, aux

        columns = _forward_columns(leaves, call, randomness)
        values, out_spec, _, aux = columns[0] if columns else call([x.new_zeros(tuple(x.shape)) for x in leaves])
        blocks = []
        for o_index, o in enumerate(values):
            row, start = [], 0
            for x in leaves:
                cols = [c[2][o_index] for c in columns[start:start + x.numel()]]
                start += x.numel()
                row.append(_stack_columns(cols, o, x))
            blocks.append(row)
        jac = _jacobian_tree(out_spec, blocks, _Structure(isinstance(argnums, tuple), spec))
        return (jac, aux) if has_aux else jac

    return wrapper


class _Structure:
    """``_Differentiated.structure`` for forward mode, which needs no fresh leaves."""

    def __init__(self, many: bool, spec: Any):
        self.many, self.spec = many, spec

    structure = _Differentiated.structure


def _forward_columns(leaves: list, call: Callable, randomness: str) -> list:
    """``call`` of each column of the identity over all inputs' elements."""
    results = []
    start_state = get_rng_state()
    for i, x in enumerate(leaves):
        identity = eye(x.numel(), dtype=x.dtype, device=x.device)
        for k in range(x.numel()):
            tangents = [y.new_zeros(tuple(y.shape)) for y in leaves]
            tangents[i] = identity[k].reshape(tuple(x.shape))
            if randomness == "same":
                set_rng_state(start_state)
            before = get_rng_state() if randomness == "error" else None
            results.append(call(tangents))
            if before is not None and not bool((get_rng_state() == before).all()):
                raise RuntimeError("vmap: called random operation while in randomness error mode. Please either "
                                   "use the 'same' or 'different' randomness flags on vmap or perform the "
                                   "randomness operation out of vmap")
    return results


def _stack_columns(cols: list, out: Tensor, x: Tensor) -> Tensor:
    """The block ``d out / d x`` (``out.shape + x.shape``) from the tangents of ``out`` per column of ``x``."""
    shape = tuple(out.shape) + tuple(x.shape)
    if not cols:
        return out.new_zeros(shape)
    return stack([c.reshape(-1) for c in cols], dim=-1).reshape(shape)


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """The Hessian of ``func``: the Jacobian of its gradient (reverse over reverse, which gives torch's
    forward-over-reverse result), block shapes ``output.shape + input.shape + input.shape``."""
    return jacrev(jacrev(func, argnums), argnums)
