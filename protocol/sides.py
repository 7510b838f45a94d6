"""Side configurations of an A/B campaign: ``host``, ``cuda:fused``, ``cuda:operators`` ...

``cuda:operators-host`` and ``cuda:operators-device`` pin the operators engine's loop mode
(``Options.operators_loop``); plain ``cuda:operators`` runs its default. A CUDA side may pin the
push expansion of both engines (``Options.push_expansion``) with a suffix: ``cuda:fused+group``,
``cuda:operators-host+vertex``; without one it runs the library's default.

A side says how to build a result (backend, CUDA engine option) and runs one update through the
public API with the runner's probe. Test code may subclass ``Side`` to alter a side's behaviour
inside the timed region (for example a planted slowdown), never the engines themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from engines.sssp.plan import PUSH_EXPANSIONS

from .errors import UsageError

CUDA_ENGINE_OPTIONS = ("fused", "operators", "automatic")
#: Operators loop modes a side can pin, as ``cuda:operators-<mode>``.
OPERATORS_LOOP_MODES = ("host", "device")


@dataclass(frozen=True)
class Side:
    """One engine configuration: ``label`` as the user wrote it, ``backend``, ``cuda_engine``
    and, where pinned, the operators engine's loop mode (None: the library's default)."""

    label: str
    backend: str  # "host" or "cuda"
    cuda_engine: str = "automatic"
    operators_loop: str | None = None
    push_expansion: str | None = None  # pinned Options.push_expansion (None: the default)

    @property
    def engine_options(self) -> dict:
        """The options of ``compute()`` / ``Result.from_arrays`` that select this side's engine."""
        options = {"cuda_engine": self.cuda_engine}
        if self.operators_loop is not None:
            options["operators_loop"] = self.operators_loop
        if self.push_expansion is not None:
            options["push_expansion"] = self.push_expansion
        return options

    @property
    def needs_cuda(self) -> bool:
        return self.backend == "cuda"

    @property
    def short_name(self) -> str:
        """The engine's name in report columns: ``host``, ``fused``, ``operators``, ``automatic``,
        ``operators-host`` ..."""
        if self.backend == "host":
            return "host"
        name = self.cuda_engine if self.operators_loop is None else f"{self.cuda_engine}-{self.operators_loop}"
        return name if self.push_expansion is None else f"{name}+{self.push_expansion}"

    def make_result(self, graph, source: int, objective: int, distances, parents):
        """A result of this side holding the given (prepared, canonical) tree."""
        from engines import sssp

        return sssp.Result.from_arrays(
            graph,
            source,
            distances,
            parents,
            canonicalize=False,
            validate=False,
            backend=self.backend,
            objective=objective,
            **self.engine_options,
        )

    def compute(self, graph, source: int, objective: int):
        """compute() on this side (the once-per-cell check of a prepared tree on the device)."""
        from engines import sssp

        return sssp.compute(graph, source, backend=self.backend, objective=objective, **self.engine_options)

    def update(self, graph, batch, result, probe):
        """One update of ``result`` through the public API, the probe marking the engine region."""
        from engines import sssp

        return sssp.update(graph, batch, result, probe=probe)


def parse_side(text: str) -> Side:
    label = text.strip()
    lowered = label.lower()
    if lowered == "host":
        return Side(label, "host", "automatic")
    if lowered.startswith("cuda"):
        base, plus, expansion = lowered.partition("+")
        pinned = expansion if plus else None
        if plus and expansion not in PUSH_EXPANSIONS:
            raise UsageError(f"unknown push expansion in side {text!r}: expected "
                             f"+{' or +'.join(PUSH_EXPANSIONS)}")
        if base == "cuda":
            return Side(label, "cuda", "automatic", push_expansion=pinned)
        engine = base.split(":", 1)[1] if base.startswith("cuda:") else None
        if engine in CUDA_ENGINE_OPTIONS:
            return Side(label, "cuda", engine, push_expansion=pinned)
        for mode in OPERATORS_LOOP_MODES:
            if engine == f"operators-{mode}":
                return Side(label, "cuda", "operators", mode, push_expansion=pinned)
    raise UsageError(
        f"unknown side {text!r}: expected host, cuda, cuda:fused, cuda:operators, "
        "cuda:operators-host, cuda:operators-device or cuda:automatic, a CUDA side optionally "
        f"with +{' or +'.join(PUSH_EXPANSIONS)} (the push expansion)"
    )


def parse_sides(text: str) -> tuple[Side, Side]:
    """``"A,B"`` -> (side A, side B); exactly two sides."""
    parts = [p for p in (text or "").split(",")]
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise UsageError(f"--sides {text!r}: expected two sides separated by a comma, e.g. cuda:fused,cuda:operators")
    return parse_side(parts[0]), parse_side(parts[1])


__all__ = ["Side", "parse_side", "parse_sides", "CUDA_ENGINE_OPTIONS"]
