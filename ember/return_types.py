"""``ember.return_types``: the named (values, indices)-style tuples that ops such as ``max(dim)``, ``sort`` and
``topk`` return, printed as torch prints its ``torch.return_types`` (one field per line)."""
from __future__ import annotations

import sys
from collections import namedtuple


def _repr(self: tuple) -> str:
    fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"{type(self).__module__}.{type(self).__qualname__}(\n{fields})"


def return_type(name: str, fields: list[str]) -> type:
    """A named tuple type ``ember.return_types.<name>`` with torch's multi-line repr; it lives in this module
    (so results pickle by name)."""
    cls = namedtuple(name, fields, module=__name__)
    cls.__repr__ = _repr
    setattr(sys.modules[__name__], name, cls)
    return cls
