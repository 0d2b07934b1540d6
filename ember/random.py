"""``ember.random``: the seeding API of ``torch.random`` (generators live in ``ember.tensor.random``)."""
from .tensor.random import Generator, default_generator, fork_rng, get_rng_state, initial_seed, manual_seed, \
    seed, set_rng_state

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]
