"""The base install (`pip install -e .`) is the engines and their readers: NumPy, SciPy, Numba and
pandas. The A/B service's packages come with the `bench` extra, so nothing under engines/ may need
them. Each check runs in a fresh interpreter where importing one of them fails, as it would in a
virtualenv holding only the base install (this one has them all, for the other tests)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# the `bench` extra of pyproject.toml: what the A/B service adds to the base install
SERVICE_PACKAGES = ("pyarrow", "jinja2", "matplotlib", "rich", "tqdm", "psutil")

_BLOCKER = textwrap.dedent(f"""
    import sys

    class _NotInstalled:
        # the first finder asked: the service's packages look absent however they are installed
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in {SERVICE_PACKAGES!r}:
                raise ImportError(f"No module named {{name!r}} (blocked: not in the base install)", name=name)
            return None

    sys.meta_path.insert(0, _NotInstalled())
""")


def _run_without_service(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _BLOCKER + textwrap.dedent(code), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_the_blocker_blocks():
    done = _run_without_service("""
        import importlib
        for name in sys.argv[1:]:
            try:
                importlib.import_module(name)
            except ImportError:
                continue
            raise SystemExit(f"{name} was importable")
    """, *SERVICE_PACKAGES)
    assert done.returncode == 0, done.stderr


def test_every_engines_module_and_a_host_compute_need_no_service_package():
    done = _run_without_service("""
        import importlib, pkgutil
        import numpy as np
        import engines
        from engines import Batch, Graph, sssp

        for module in pkgutil.walk_packages(engines.__path__, "engines."):
            if not module.name.endswith("__main__"):  # engines/__main__.py runs the command line
                importlib.import_module(module.name)
        g = Graph.from_edges([0, 1, 0], [1, 2, 2], np.array([[1], [1], [5]]))
        tree = sssp.compute(g, 0)
        stats = sssp.update(g, Batch([2], [0], [[1]], [0], [1]), tree)
        print(tree.to_numpy()[0].tolist(), stats.invalidated)
    """)
    assert done.returncode == 0, done.stderr
    # after inserting (2,0) and deleting (0,1): 0 -> 2 by weight 5 only, 1 is cut off
    assert done.stdout.startswith(f"[0, {2**61 - 1}, 5]"), done.stdout


def test_the_engines_command_line_prints_its_table_without_rich(tmp_path):
    import numpy as np

    graph, batch = tmp_path / "graph.npz", tmp_path / "batch.npz"
    np.savez(graph, row_ptr=[0, 2, 3, 3], col_ind=[1, 2, 2], weights=[[1], [5], [1]])
    np.savez(batch, insert_src=[2], insert_dst=[0], insert_weights=[[1]], delete_src=[0], delete_dst=[1])
    done = _run_without_service("""
        from engines import cli
        sys.exit(cli.main(sys.argv[1:]))
    """, "update", "--graph", str(graph), "--batch", str(batch), "--source", "0", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "engines update" and lines[-1].startswith("wrote ")
    assert any(line.split() == ["reachable", "2"] for line in lines), done.stdout
