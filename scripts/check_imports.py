"""Checks the import graph of src/mssql_cdc: no cycle, and the layering of ADR 0080.

Run by ``make lint``; exits 1 and names every violation. Reads the source with :mod:`ast` and
imports nothing, so it runs without the package's dependencies.

* The imports between the package's modules form no cycle, counting those inside functions too
  (a cycle hidden in a function body is still one); only ``if TYPE_CHECKING:`` imports, which
  never run, are left out. Module-level imports are those outside function bodies.
* The package facades (``mssql_cdc`` and ``mssql_cdc.emulator``) import nothing of the package
  at module level: their names resolve lazily, so importing any module loads only what it needs.
* The emulator (a test double) may import from the product only the leaf modules listed in
  ``EMULATOR_MAY_IMPORT``; the product imports the emulator only inside functions (the CLI demo).
* Inside the emulator, a module imports only its own layer or lower ones (``EMULATOR_LAYERS``);
  typing-only imports are exempt, they never run.
* Packages by feature: the adapters (``ADAPTERS``: the SQL Server side and the Delta side with
  its ledger) import no feature package; a feature (``FEATURES``) imports the adapters and the
  shared leaves, and another feature only where ``FEATURE_USES`` says so (the stream starts
  with a snapshot); the command line drives the features and may import them all.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "mssql_cdc"
EMULATOR = "mssql_cdc.emulator"
#: emulator subpackages from the bottom layer up; the package's own top-level modules (the
#: public face: Emulator, the command lines, workload, replay, AdventureWorks) come last
EMULATOR_LAYERS = ("protocol", "core", "cdc", "engine", "server")
#: product modules the emulator may use: leaves that load nothing else of the product
EMULATOR_MAY_IMPORT = ("mssql_cdc._native", "mssql_cdc._timezones", "mssql_cdc.errors")
FACADES = (PACKAGE, EMULATOR)
#: the adapters, below every feature
ADAPTERS = ("source", "sink")
#: the feature packages: each stands on the adapters
FEATURES = ("pipeline", "snapshots", "silver", "validate")
#: the only imports between features: the stream (``pipeline``) bootstraps, re-snapshots after
#: data loss and takes the switch snapshot through ``snapshots``; nothing imports the stream
FEATURE_USES: dict[str, tuple[str, ...]] = {"pipeline": ("snapshots",)}
#: cycles known and owned elsewhere, reported but not failing; each names who removes it
KNOWN_CYCLES: set[tuple[str, ...]] = set()


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    module_level: bool  # runs when the module is imported
    typing_only: bool  # inside ``if TYPE_CHECKING:``


def discover(root: Path) -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for path in sorted((root / PACKAGE).rglob("*.py*")):
        if path.suffix not in (".py", ".pyi"):
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        if path.suffix == ".py" or name not in modules:  # a .pyi stands for an extension
            modules[name] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(
    nodes: list[ast.stmt], *, in_function: bool, typing_only: bool
) -> Iterator[tuple[ast.stmt, bool, bool]]:
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function, typing_only
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _walk(node.body, in_function=True, typing_only=typing_only)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _walk(node.body, in_function=in_function, typing_only=True)
            yield from _walk(node.orelse, in_function=in_function, typing_only=typing_only)
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                block = getattr(node, field, None)
                if isinstance(block, list):
                    stmts = [s for s in block if isinstance(s, ast.stmt)]
                    for item in block:  # except handlers and match cases hold bodies
                        if not isinstance(item, ast.stmt):
                            stmts.extend(getattr(item, "body", []))
                    yield from _walk(stmts, in_function=in_function, typing_only=typing_only)


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module ``name`` loads: itself or, for ``package.attribute``, the nearest module."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name.startswith("__init__.")
    found: list[Import] = []
    for node, in_function, typing_only in _walk(tree.body, in_function=False, typing_only=False):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            if not target.startswith(PACKAGE + ".") and target != PACKAGE:
                continue
            resolved = _resolve(target, modules)
            if resolved is None:
                raise SystemExit(f"{path}:{node.lineno}: cannot resolve import of {target}")
            found.append(Import(module, resolved, node.lineno, not in_function, typing_only))
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (or a self-import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:  # Tarjan's algorithm; the graph is small
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in edges.get(node, ()):
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def emulator_layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) > 3 and parts[2] in EMULATOR_LAYERS:  # mssql_cdc.emulator.<layer>.x
        return EMULATOR_LAYERS.index(parts[2])
    if len(parts) == 3 and parts[2] in EMULATOR_LAYERS:  # a layer's own __init__
        return EMULATOR_LAYERS.index(parts[2])
    return len(EMULATOR_LAYERS)


def _in_emulator(module: str) -> bool:
    return module == EMULATOR or module.startswith(EMULATOR + ".")


def _package(module: str) -> str:
    """The first-level package of ``module`` (``mssql_cdc.sink.ledger.ids`` -> ``sink``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def feature_violation(source: str, target: str) -> str | None:
    """Why ``source`` may not import ``target`` under the packages-by-feature rule, or ``None``."""
    mine, theirs = _package(source), _package(target)
    if mine == theirs or theirs not in FEATURES:
        return None
    if mine in ADAPTERS:
        return f"an adapter ({', '.join(ADAPTERS)}) imports no feature"
    if mine in FEATURES and theirs not in FEATURE_USES.get(mine, ()):
        return f"a feature ({', '.join(FEATURES)}) imports no other feature"
    return None


def violations(found: list[Import]) -> list[str]:
    problems: list[str] = []
    for imp in found:
        where = f"{imp.source} (line {imp.line}) imports {imp.target}"
        if imp.typing_only:
            continue
        layering = feature_violation(imp.source, imp.target)
        if layering is not None:
            problems.append(f"{where}: {layering}")
        if imp.source in FACADES and imp.module_level:
            problems.append(f"{where} at module level: a facade resolves its names lazily")
        if _in_emulator(imp.source) and not _in_emulator(imp.target):
            if imp.target not in EMULATOR_MAY_IMPORT:
                problems.append(
                    f"{where}: the emulator uses only {', '.join(EMULATOR_MAY_IMPORT)} of the "
                    "product"
                )
        elif _in_emulator(imp.source) and emulator_layer(imp.target) > emulator_layer(imp.source):
            problems.append(
                f"{where}: a higher layer (layers, bottom up: {', '.join(EMULATOR_LAYERS)}, "
                "then the package's top level)"
            )
        if not _in_emulator(imp.source) and _in_emulator(imp.target) and imp.module_level:
            problems.append(f"{where} at module level: the product loads the emulator lazily")
    return problems


def main() -> int:
    modules = discover(ROOT)
    found = [imp for name, path in modules.items() for imp in imports_of(name, path, modules)]
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for imp in found:
        if not imp.typing_only:
            edges[imp.source].add(imp.target)
    problems = violations(found)
    found_cycles = {tuple(component) for component in cycles(edges)}
    for component in sorted(found_cycles - KNOWN_CYCLES):
        problems.append("import cycle among: " + ", ".join(component))
    for component in sorted(found_cycles & KNOWN_CYCLES):
        print(f"check_imports: known cycle (KNOWN_CYCLES): {', '.join(component)}")
    for component in sorted(KNOWN_CYCLES - found_cycles):
        print(f"check_imports: gone, remove it from KNOWN_CYCLES: {', '.join(component)}")
    for problem in dict.fromkeys(problems):  # one line per problem, in order
        print(f"check_imports: {problem}", file=sys.stderr)
    if problems:
        return 1
    count = sum(len(targets) for targets in edges.values())
    besides = " besides KNOWN_CYCLES" if found_cycles else ""
    print(
        f"check_imports: {len(modules)} modules, {count} imports within {PACKAGE}: no cycle"
        f"{besides}, emulator layers {' < '.join(EMULATOR_LAYERS)} < top level, features "
        f"{', '.join(FEATURES)} over the adapters {', '.join(ADAPTERS)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
