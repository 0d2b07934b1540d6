"""Activation checkpointing, as ``torch.utils.checkpoint``: trade compute for memory.

``checkpoint(fn, *args)`` runs ``fn`` without keeping its intermediate tensors
and runs it again during backward, with the same RNG state, to get them back.
Two variants, as in torch:

- ``use_reentrant=True`` (torch's default when ``use_reentrant`` is not given,
  with a warning): a ``Function`` whose forward runs ``fn`` under ``no_grad`` and
  saves only the inputs; its backward recomputes ``fn`` with grad on and calls
  ``ember.autograd.backward`` on the recomputed outputs (a nested backward).
- ``use_reentrant=False``: ``fn`` runs with grad on, but every tensor an op
  saves goes through a ``saved_tensors_hooks`` pack hook that keeps only a
  placeholder; the first unpack in backward recomputes ``fn`` and fills the
  placeholders. Works with ``autograd.grad``, keyword arguments and inputs that
  do not require grad.

``preserve_rng_state`` forks and restores the CPU generator and every CUDA generator in use, so dropout
recomputed in backward draws the same masks on either device.
"""
from __future__ import annotations

import contextlib
import warnings
import weakref
from typing import Any, Callable, ContextManager, Iterable

from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad
from ..autograd.graph import saved_tensors_hooks
from ..tensor.tensor import Tensor
from ..tensor.random import capture_rng_states, restore_rng_states
from ..nn import Sequential
from ..autograd import backward as autograd_backward

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "detach_variable",
           "check_backward_validity", "noop_context_fn"]


class CheckpointError(RuntimeError):
    """Raised when the recomputation in backward does not match the forward pass."""


def noop_context_fn() -> tuple[ContextManager, ContextManager]:
    return contextlib.nullcontext(), contextlib.nullcontext()


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def _get_rng_state():
    return capture_rng_states()


def _set_rng_state(state) -> None:
    restore_rng_states(state)


@contextlib.contextmanager
def _rng_as_in_forward(state):
    """Run a block with the generator state of the forward pass; the surrounding state is kept (fork_rng)."""
    if state is None:
        yield
        return
    saved = _get_rng_state()
    _set_rng_state(state)
    try:
        yield
    finally:
        _set_rng_state(saved)


def detach_variable(inputs: tuple) -> tuple:
    """Detached copies of the tensors in ``inputs`` that keep their ``requires_grad``; other values pass through."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(
            f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not _is_tensor(inp):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    if not any(inp.requires_grad for inp in inputs if _is_tensor(inp)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


class CheckpointFunction(Function):
    """The reentrant variant: forward without a graph, backward recomputes and backpropagates through ``fn``."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.fwd_rng_state = _get_rng_state() if preserve_rng_state else None
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if _is_tensor(arg):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        return run_function(*args)  # apply runs forward with grad mode off

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for idx, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[idx] = t
        with _rng_as_in_forward(ctx.fwd_rng_state):
            detached = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached)
        if _is_tensor(outputs):
            outputs = (outputs,)
        outputs_with_grad, grads_with_grad = [], []
        for out, g in zip(outputs, grads):
            if _is_tensor(out) and out.requires_grad:
                outputs_with_grad.append(out)
                grads_with_grad.append(g)
        if not outputs_with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        autograd_backward(outputs_with_grad, grads_with_grad)
        return (None, None) + tuple(inp.grad if _is_tensor(inp) else None for inp in detached)


class _Holder:
    """What the forward pass saves in place of a tensor; backward's recomputation fills ``value``."""

    __slots__ = ("index", "value", "__weakref__")

    def __init__(self, index: int) -> None:
        self.index = index
        self.value = None


class _Frame:
    """One non-reentrant checkpointed call: its inputs, its placeholders, and how to recompute."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, rng_state: Any, recompute_context: Any,
                 check: bool) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.rng_state = rng_state
        self.recompute_context = recompute_context
        self.check = check
        self.holders: list = []  # weak references: a placeholder dies with the node that saved it
        self.metadata: list = []

    def pack(self, x: Any) -> _Holder:
        holder = _Holder(len(self.holders))
        self.holders.append(weakref.ref(holder))
        if self.check:
            self.metadata.append((tuple(x.shape), x.dtype, x.device))
        return holder

    def unpack(self, holder: _Holder) -> Any:
        if holder.value is None:
            self.recompute()
        value, holder.value = holder.value, None
        if value is None:
            raise CheckpointError(
                "torch.utils.checkpoint: Unpack is being triggered for a tensor that was not recomputed "
                "(the recomputation saved fewer tensors than the original forward pass).")
        return value

    def recompute(self) -> None:
        count = [0]

        def pack(x: Any) -> None:
            i = count[0]
            count[0] += 1
            if i >= len(self.holders):
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors during recomputation "
                                      "than during the original forward pass.")
            if self.check and (tuple(x.shape), x.dtype, x.device) != self.metadata[i]:
                shape, dtype, device = self.metadata[i]
                raise CheckpointError(
                    "torch.utils.checkpoint: Recomputed values for the following tensors have different metadata "
                    f"than during the forward pass.\ntensor at position {i}:\nsaved metadata: "
                    f"{{'shape': {list(shape)}, 'dtype': {dtype}, 'device': {device}}}\nrecomputed metadata: "
                    f"{{'shape': {list(x.shape)}, 'dtype': {x.dtype}, 'device': {x.device}}}")
            holder = self.holders[i]()
            if holder is not None:
                holder.value = x.detach() if x.requires_grad else x
            return None

        def unpack(_: Any) -> None:
            raise RuntimeError("torch.utils.checkpoint: a tensor saved during recomputation was unpacked")

        with _rng_as_in_forward(self.rng_state), saved_tensors_hooks(pack, unpack), enable_grad(), \
                self.recompute_context:
            self.fn(*self.args, **self.kwargs)
        if count[0] < len(self.holders) and self.check:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the original forward and "
                f"recomputation.\nNumber of tensors saved during forward: {len(self.holders)}\n"
                f"Number of tensors saved during recomputation: {count[0]}")


def _checkpoint_without_reentrant(function: Callable, preserve_rng_state: bool, context_fn: Callable,
                                  determinism_check: str, args: tuple, kwargs: dict) -> Any:
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    forward_context, recompute_context = context_fn()
    rng_state = _get_rng_state() if preserve_rng_state else None
    frame = _Frame(function, args, kwargs, rng_state, recompute_context, determinism_check == "default")
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        return function(*args, **kwargs)


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None, preserve_rng_state: bool = True,
               context_fn: Callable[[], tuple[ContextManager, ContextManager]] = noop_context_fn,
               determinism_check: str = "default", debug: bool = False, **kwargs: Any) -> Any:
    """Run ``function(*args, **kwargs)`` without keeping its intermediates; backward recomputes them.

    Gradients equal those of the plain call (dropout included: the RNG state of
    the forward pass is restored for the recomputation unless
    ``preserve_rng_state=False``). See the module docstring for the two variants.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch "
            "2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, determinism_check, args, kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any, use_reentrant: bool | None = None,
                          **kwargs: Any) -> Any:
    """Run a sequence of modules/functions in ``segments`` chunks, checkpointing all chunks but the last."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, you "
            "can pass use_reentrant=True. Refer to docs for more details on the differences between the two "
            "variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start: int, end: int, functions: list) -> Callable:
        def forward(input: Any) -> Any:
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward


    if isinstance(functions, Sequential):
        functions = list(functions.children())
    functions = list(functions)
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
