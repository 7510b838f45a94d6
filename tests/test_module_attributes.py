"""Every ``module.name`` the project's code reads from one of its own modules exists there
(issue 34's lesson: a call left to a removed function in a path only a GPU runs, ``push.kernel_mode``
in the fused launcher, would have failed on the device and nowhere else). Read from the sources
(ast): for each name a module binds to a project module by an import (at any depth, functions
included) and never rebinds, each ``name.attribute`` it reads must be an attribute or a submodule of
that module. The modules are imported to look (every one imports on a machine without CuPy).
"""

from __future__ import annotations

import ast
import importlib

import pytest

from .test_import_cycles import ROOT, from_module, project_modules


def _module_bindings(module: str, path, known) -> dict[str, str]:
    """{local name: project module} for ``import a.b as x``, ``from a import b`` (b a module) and
    ``from . import b``; names also assigned or bound otherwise in the module are left out."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name in known:
                    bound[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom):
            prefix = from_module(module, is_package, node)
            for a in node.names:
                full = f"{prefix}.{a.name}"
                if full in known:
                    bound[a.asname or a.name] = full
    rebound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    rebound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
                for a in n.args + n.kwonlyargs + n.posonlyargs}
    return {name: target for name, target in bound.items() if name not in rebound}


def reads(module: str, path, known) -> set[tuple[str, str]]:
    """(project module, attribute) for every ``name.attribute`` read through a binding above."""
    bindings = _module_bindings(module, path, known)
    tree = ast.parse(path.read_text(), filename=str(path))
    return {(bindings[n.value.id], n.attr) for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in bindings}


def _missing(known) -> list[str]:
    problems = []
    for module, path in sorted(known.items()):
        for target, attr in sorted(reads(module, path, known)):
            if f"{target}.{attr}" in known:
                continue  # a submodule
            if not hasattr(importlib.import_module(target), attr):
                problems.append(f"{path.relative_to(ROOT)} reads {target}.{attr}, which does not exist")
    return problems


def test_every_attribute_read_from_a_project_module_exists():
    known = project_modules()
    assert sum(len(reads(m, p, known)) for m, p in known.items()) > 200  # the scan sees the reads
    assert _missing(known) == []


def test_the_scan_finds_a_removed_function(tmp_path, monkeypatch):
    """The checker itself: a launcher that calls a function its sibling no longer defines, inside a
    function nothing on this machine would run."""
    pkg = tmp_path / "scanpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "push.py").write_text("def max_shift(e):\n    return 5\n")
    (pkg / "fused.py").write_text("from . import push\n\ndef scalars(e):\n"
                                  "    return push.max_shift(e), push.kernel_mode(e)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    known = {"scanpkg": pkg / "__init__.py", "scanpkg.push": pkg / "push.py",
             "scanpkg.fused": pkg / "fused.py"}
    monkeypatch.setattr("tests.test_module_attributes.ROOT", tmp_path)
    assert reads("scanpkg.fused", pkg / "fused.py", known) == {("scanpkg.push", "max_shift"),
                                                               ("scanpkg.push", "kernel_mode")}
    assert _missing(known) == ["scanpkg/fused.py reads scanpkg.push.kernel_mode, which does not exist"]
