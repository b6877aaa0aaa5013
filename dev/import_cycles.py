"""Fail when core/src/chute has an import cycle of more than N modules (default 3).

Imports inside functions count (grimp reads them all). Usage:
    python dev/import_cycles.py [--max N]
"""

from __future__ import annotations

import argparse
import sys

import grimp


def cycles(package: str) -> list[list[str]]:
    """The strongly connected components of more than one module, largest first."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=False)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(root: str) -> None:
        # Tarjan's algorithm, iterative: (module, iterator over what it imports)
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    imported = sorted(graph.find_modules_directly_imported_by(target))
                    work.append((target, iter(imported)))
                    break
                if target in on_stack:
                    low[module] = min(low[module], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return sorted(found, key=len, reverse=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=3, help="largest cycle allowed")
    parser.add_argument("--package", default="chute")
    args = parser.parse_args()
    found = cycles(args.package)
    for component in found:
        print(f"{len(component)} modules: {', '.join(component)}")
    too_big = [c for c in found if len(c) > args.max]
    if too_big:
        print(f"FAILED: {len(too_big)} import cycle(s) of more than {args.max} modules")
        return 1
    print(f"ok: no import cycle of more than {args.max} modules ({len(found)} smaller)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
