"""Package names imported on first use: a package whose `__init__` would otherwise import every module of it."""

from __future__ import annotations

import importlib


def lazy_names(package: str, where: dict[str, str], namespace: dict):
    """A module-level `__getattr__` for ``package``: each name of ``where`` comes from the module it maps to, imported
    when the name is first asked for and then kept in ``namespace`` (the package's globals) as an ordinary name."""

    def __getattr__(name: str):
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
