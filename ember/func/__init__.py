"""``torch.func``: composable function transforms (``grad``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``,
``hessian``, ``vmap``) and the functional form of a module (``functional_call``, ``stack_module_state``)."""
from .eager_transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from .functional_call import functional_call, stack_module_state
from .vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "stack_module_state",
           "vjp", "vmap"]
