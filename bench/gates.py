"""The gate registry: each benchmark graph's name, real-file names, known facts, local-batch
radius and stand-in generator (inputs.md §1).

The four gates come from the SuiteSparse Matrix Collection; where the real file sits in the data
folder it is read, else the deterministic stand-in of :mod:`bench.standins` is generated. The
two small real graphs of ``../shared/data/graphs`` are gates too (quick campaigns, tests); they
have no stand-in and must be present.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import standins

GATE_NAMES = ("roadNet-PA", "roadNet-CA", "rgg_n_2_20_s0", "road_usa")
SMALL_REAL_GATES = ("luxembourg_osm", "uspowergrid")
ALL_GATES = GATE_NAMES + SMALL_REAL_GATES

REPO_ROOT = Path(__file__).resolve().parents[1]

# A real file found by a gate's name must be that gate's graph: its vertex count exactly as known,
# its directed edge count within this fraction (copies of one graph in different collections
# differ a little in parallel arcs and self-loops, and rgg's count is known only roughly).
EDGE_COUNT_TOLERANCE = 0.01

# The hop diameter quoted for the real roadNet-CA (inputs.md §1); other road gates scale it with
# sqrt(n), and a stand-in must land within [1/2, 2] of the scaled value.
ROADNET_CA_DIAMETER = 850
ROADNET_CA_VERTICES = 1_971_281


@dataclass(frozen=True)
class Gate:
    """One benchmark graph.

    ``real_files``: names looked up in the data folder, first found wins. ``facts``: what is
    known of the real graph. ``standin``: ``(generator, params)`` or None when the gate is only
    available as a real file. ``symmetric_edge_list``: a ``.edges`` file lists every undirected
    edge once (1-based), so it is symmetrized when read.
    """

    name: str
    kind: str
    real_files: tuple[str, ...]
    facts: dict
    local_radius: int
    standin_generator: str | None = None
    standin_params: dict = field(default_factory=dict)
    approximate_directed_edges: int | None = None

    @property
    def has_standin(self) -> bool:
        return self.standin_generator is not None

    def known_counts(self) -> tuple[int | None, int | None]:
        """``(vertices, directed edges)`` of the real graph, None where unknown."""
        n = self.facts.get("vertices")
        m = self.facts.get("directed_edges")
        return (n if isinstance(n, int) else None,
                m if isinstance(m, int) else self.approximate_directed_edges)

    def real_file_mismatch(self, num_vertices: int, num_edges: int) -> str | None:
        """Why a graph read from a real file is not this gate's graph; None when its counts
        match the known facts (vertices exactly, directed edges within EDGE_COUNT_TOLERANCE)."""
        known_n, known_m = self.known_counts()
        what = self.facts.get("matrix") or self.facts.get("network") or self.name
        if known_n is not None and num_vertices != known_n:
            return (f"it has {num_vertices:,} vertices, but the gate {self.name} ({what}) has {known_n:,}")
        if known_m is not None and abs(num_edges - known_m) > EDGE_COUNT_TOLERANCE * known_m:
            return (f"it has {num_edges:,} directed edges, but the gate {self.name} ({what}) has "
                    f"{known_m:,} (within {EDGE_COUNT_TOLERANCE:.0%})")
        return None

    def expected_hop_diameter(self) -> float | None:
        """The real graph's hop diameter, or its sqrt(n)-scaled estimate for a road gate."""
        if self.kind != "road":
            return None
        return ROADNET_CA_DIAMETER * (self.facts["vertices"] / ROADNET_CA_VERTICES) ** 0.5

    def build_standin(self) -> standins.UndirectedEdges:
        if self.standin_generator is None:
            raise LookupError(f"gate {self.name!r} has no stand-in; it needs its real file")
        return STANDIN_GENERATORS[self.standin_generator](**self.standin_params)


def _suitesparse_files(name: str) -> tuple[str, ...]:
    return (f"{name}.mtx", f"{name}.mtx.gz", f"{name}.tar.gz")


STANDIN_GENERATORS: dict[str, Callable[..., standins.UndirectedEdges]] = {
    "road_grid": lambda **p: standins.road_grid(**p),
    "rgg": lambda **p: standins.rgg(**p),
}


def _road(name, matrix, vertices, directed_edges, radius, extra_files=(), *, seed=1, long_keep=0.3):
    return Gate(
        name=name,
        kind="road",
        real_files=_suitesparse_files(name) + tuple(extra_files),
        facts={"matrix": matrix, "vertices": vertices, "directed_edges": directed_edges,
               "average_degree": round(directed_edges / vertices, 4)},
        local_radius=radius,
        standin_generator="road_grid",
        standin_params={"num_vertices": vertices, "num_undirected_edges": directed_edges // 2,
                        "seed": seed, "reach": 3.2, "long_keep": long_keep},
    )


GATES: dict[str, Gate] = {
    "roadNet-PA": _road("roadNet-PA", "SNAP/roadNet-PA", 1_090_920, 3_083_796, 110,
                        ("roadNet-PA.txt", "roadNet-PA.txt.gz")),
    "roadNet-CA": _road("roadNet-CA", "SNAP/roadNet-CA", 1_971_281, 5_533_214, 160,
                        ("roadNet-CA.txt", "roadNet-CA.txt.gz")),
    "rgg_n_2_20_s0": Gate(
        name="rgg_n_2_20_s0",
        kind="rgg",
        real_files=_suitesparse_files("rgg_n_2_20_s0"),
        facts={"matrix": "DIMACS10/rgg_n_2_20_s0", "vertices": 1 << 20,
               "directed_edges": "about 13.8 M", "average_degree": "about 13"},
        local_radius=110,
        standin_generator="rgg",
        standin_params={"num_vertices": 1 << 20, "seed": 0, "radius_factor": 0.55},
        approximate_directed_edges=13_800_000,
    ),
    # Sparser than the roadNet graphs (degree 2.41), so fewer optional long candidates suffice
    # and keep the 24 M-vertex build inside a few GiB.
    "road_usa": _road("road_usa", "DIMACS10/road_usa", 23_947_347, 57_708_624, 200,
                      ("road_usa.gr", "road_usa.gr.gz"), long_keep=0.2),
    "luxembourg_osm": Gate(
        name="luxembourg_osm",
        kind="real",
        real_files=("luxembourg_osm.edges", "luxembourg_osm.edges.gz") + _suitesparse_files("luxembourg_osm"),
        facts={"matrix": "DIMACS10/luxembourg_osm", "vertices": 114_599, "directed_edges": 239_332,
               "average_degree": 2.09},
        # A real road network with long hop distances (diameter > 1,300): 160 hops, like
        # roadNet-CA, holds a similar share of the graph (measured: 1-18 %, typically ~8 %; the
        # reference's roadNet-CA ball held 6 %).
        local_radius=160,
    ),
    "uspowergrid": Gate(
        name="uspowergrid",
        kind="real",
        real_files=("uspowergrid.edges", "uspowergrid.edges.gz"),
        facts={"network": "Western US power grid (Watts and Strogatz, 1998)", "vertices": 4_941,
               "directed_edges": 13_188, "average_degree": 2.67},
        # ~3-15 % of the vertices within 8 hops (measured), the local share of the road gates.
        local_radius=8,
    ),
}


def get_gate(name: str) -> Gate:
    try:
        return GATES[name]
    except KeyError:
        raise KeyError(f"unknown gate {name!r}; known gates: {', '.join(ALL_GATES)}") from None


def check_gate_names(names) -> None:
    """A command's refusal of gate names it does not know, before any work: UsageError naming them
    and the known ones."""
    from protocol.errors import UsageError

    unknown = [n for n in names if n not in ALL_GATES]
    if unknown:
        raise UsageError(f"unknown gate name(s): {', '.join(unknown)} (known: {', '.join(ALL_GATES)})")


# The folder of real graph files has one name per place: ``--data-dir`` on command lines,
# ``$SSSPAB_DATA_DIR`` in the environment (tests included), ``DATA_DIR=`` for make, which passes it
# on as SSSPAB_DATA_DIR. SSSPAB_SHARED_DATA, the tests' old name, is still read, with a note.
DATA_DIR_VARIABLE = "SSSPAB_DATA_DIR"
DEPRECATED_DATA_DIR_VARIABLE = "SSSPAB_SHARED_DATA"
_deprecation_said = False


def data_dir_from_environment() -> str | None:
    """``$SSSPAB_DATA_DIR``, else the deprecated ``$SSSPAB_SHARED_DATA`` (saying so once per
    process, on standard error), else None."""
    global _deprecation_said
    if os.environ.get(DATA_DIR_VARIABLE):
        return os.environ[DATA_DIR_VARIABLE]
    old = os.environ.get(DEPRECATED_DATA_DIR_VARIABLE)
    if old and not _deprecation_said:
        _deprecation_said = True
        print(f"note: {DEPRECATED_DATA_DIR_VARIABLE} is deprecated and will be dropped: set {DATA_DIR_VARIABLE} "
              "instead (read for now)", file=sys.stderr)
    return old or None


def data_dir_candidates(data_dir: str | Path | None = None) -> list[Path]:
    """Folders searched for real files, in order: the explicit one, ``$SSSPAB_DATA_DIR`` (or the
    deprecated ``$SSSPAB_SHARED_DATA``), ``<repo>/../shared/data``, ``<repo>/.devdata``; each folder
    is also searched in its ``graphs/`` subfolder."""
    if data_dir is not None:
        roots = [Path(data_dir)]
    else:
        env = data_dir_from_environment()
        roots = [Path(env)] if env else []
        roots += [REPO_ROOT / ".." / "shared" / "data", REPO_ROOT / ".devdata"]
    folders = []
    for root in roots:
        folders += [root, root / "graphs"]
    return folders


def find_real_file(gate: Gate, data_dir: str | Path | None = None) -> Path | None:
    for folder in data_dir_candidates(data_dir):
        for name in gate.real_files:
            candidate = folder / name
            if candidate.is_file():
                return candidate.resolve()
    return None
