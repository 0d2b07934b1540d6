"""``ember.cpu``: torch.cpu's names that scripts reach for; today its deprecated ``amp`` aliases."""
from . import amp

__all__ = ["amp"]
