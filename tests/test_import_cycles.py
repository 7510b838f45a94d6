"""No import cycle among the project's modules (issue 30 item 6), counting the imports inside
functions: a module that imports another only when called still needs it, and a cycle through
such an import is one owner too few. Read from the sources (ast), nothing is imported.

An edge ``a -> b`` for every ``import b`` and ``from b import x`` in ``a`` (``b.x`` when that is
a module), relative imports resolved; a package's ``__init__`` is a module like the others.
Guarded imports (``if TYPE_CHECKING``) would count too: there are none.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engines", "protocol", "bench", "conformance")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))
            if "__pycache__" not in p.parts}


def from_module(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from ... import`` statement in ``module`` reads."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported(module: str, path: Path, known) -> set[str]:
    """The project modules ``module`` (at ``path``) imports anywhere in its body."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            prefix = from_module(module, is_package, node)
            names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix for a in node.names]
        else:
            continue
        out.update(n for n in names if n in known and n != module)
    return out


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_module_imports_itself_back():
    modules = project_modules()
    edges = {m: imported(m, p, modules) for m, p in modules.items()}
    assert len(modules) > 100 and sum(map(len, edges.values())) > 300  # the scan sees the tree
    assert cycles(edges) == []


def test_the_scan_finds_a_cycle_through_an_import_inside_a_function(tmp_path):
    """The checker itself: two modules that import each other, one of them only when called."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def late():\n    from .a import x\n    return x\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    modules = {"pkg": pkg / "__init__.py", "pkg.a": pkg / "a.py", "pkg.b": pkg / "b.py", "pkg.c": pkg / "c.py"}
    edges = {m: imported(m, p, modules) for m, p in modules.items()}
    assert edges["pkg.a"] == {"pkg.b"} and edges["pkg.b"] == {"pkg.a"} and edges["pkg.c"] == {"pkg.a"}
    assert cycles(edges) == [["pkg.a", "pkg.b"]]
    assert cycles({"x": {"y"}, "y": {"z"}, "z": set()}) == []


def test_the_graph_package_needs_nothing_of_the_engines_but_the_cuda_runtime():
    """Issue 30 item 6: the graph owns its storage. The host and device graph and both appliers
    live in ``engines.graph``; of the SSSP package they use only the CUDA runtime (compilation,
    streams, error translation), the environment switches' parser and the mapped records' switch
    (mapped.py, which the device apply and the fused engine both read), which import no graph, so
    the engines depend on the graph and never the other way round."""
    modules = project_modules()
    graph = {m: imported(m, p, modules) for m, p in modules.items() if m.split(".")[:2] == ["engines", "graph"]}
    assert {"engines.graph.graph", "engines.graph.host_apply", "engines.graph.device_graph",
            "engines.graph.device_apply"} <= set(graph)
    reached = set().union(*graph.values())
    # the runtime, the switches' parser (the device apply's ENGINES_APPLY_MIN_EVENTS) and
    # ENGINES_MAPPED_RECORDS' owner
    leaves = {"engines.sssp.cuda.runtime", "engines.sssp.cuda.switches", "engines.sssp.cuda.mapped"}
    assert {m for m in reached if m.startswith("engines.sssp")} <= leaves
    assert "engines.sssp.cuda.runtime" in reached
    for leaf in leaves:
        assert not any(m.startswith("engines.graph") for m in imported(leaf, modules[leaf], modules)), leaf
