"""chute.fn and chute.ops keep every public name they had before they were generated."""

from __future__ import annotations

import inspect
import os

import chute
from chute.runtime.operator import Operator

HERE = os.path.dirname(os.path.abspath(__file__))


def fn_names() -> set[str]:
    """``fn.x`` and ``fn.ns.x`` for every operator function reachable from chute.fn."""
    names: set[str] = set()

    def walk(module, prefix):
        public = set(getattr(module, "__all__", []))
        for name in sorted(set(dir(module)) | public):
            if name.startswith("_"):
                continue
            value = getattr(module, name)
            if inspect.ismodule(value):
                if value.__name__.startswith("chute.fn.") and name in public:
                    walk(value, f"{prefix}{name}.")
            elif inspect.isfunction(value) and value.__module__.startswith("chute.fn"):
                names.add(prefix + name)

    walk(chute.fn, "fn.")
    return names


def ops_names() -> set[str]:
    """``ops.X`` and ``ops.ns.X`` for every operator class in chute.ops and its namespaces."""
    names: set[str] = set()

    def walk(module, prefix, top):
        public = set(getattr(module, "__all__", []))
        for name in sorted(set(dir(module)) | public):
            if name.startswith("_"):
                continue
            value = getattr(module, name)
            if inspect.ismodule(value):
                if top and name in chute.ops.__all__:
                    walk(value, f"{prefix}{name}.", False)
            elif inspect.isclass(value) and issubclass(value, Operator) and value is not Operator:
                names.add(prefix + name)

    walk(chute.ops, "ops.", True)
    return names


def test_no_public_name_is_lost():
    with open(os.path.join(HERE, "public_names_before.txt"), encoding="utf-8") as f:
        before = {line.strip() for line in f if line.strip()}
    now = fn_names() | ops_names()
    assert not before - now, f"names lost: {sorted(before - now)}"
