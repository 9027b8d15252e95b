"""Names a package imports on first use (PEP 562), stated once for its packages.

A package that lists ``{name: home module}`` gets a module ``__getattr__`` that
imports the home on the first use of a name and keeps the value in the
package's namespace, so later uses do not come back here. It keeps what a
program does not use unloaded (the client without server code, a local send
without every resource's views: docs/benchmarks.md, "Quick start").
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each of ``homes`` on first use."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        vars(sys.modules[package])[name] = value
        return value

    return __getattr__
