"""Side configurations of an A/B campaign: ``host``, ``cuda:fused``, ``cuda:operators`` ...

A side's engine is an :class:`engines.config.EngineConfig` (the one spelling of an engine
configuration, issue 30): ``cuda:operators-host`` and ``cuda:operators-device`` pin the operators
engine's loop mode (``Options.operators_loop``); plain ``cuda:operators`` runs its default. A CUDA
side may pin the push expansion of both engines (``Options.push_expansion``) with a suffix:
``cuda:fused+group``, ``cuda:operators-host+vertex``, and the update's device-apply launch
(``Options.update_launch``): ``+graph``, ``+python``; without one it runs the library's default.

A side says how to build a result (backend, CUDA engine option) and runs one update through the
public API with the runner's probe. Test code may subclass ``Side`` to alter a side's behaviour
inside the timed region (for example a planted slowdown), never the engines themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from engines.config import EngineConfig, EngineConfigError
# the engines' own tables (Options.cuda_engine, Options.operators_loop), under the names this
# module exported before engines.config parsed the sides
from engines.sssp.options import CUDA_ENGINES as CUDA_ENGINE_OPTIONS
from engines.sssp.options import OPERATORS_LOOPS as OPERATORS_LOOP_MODES  # noqa: F401

from .errors import UsageError

#: The two sides a campaign compares unless told otherwise (``perf_ab.py engines --sides`` and
#: ``protocol.campaign.campaign_config`` both take it from here): the fused engine against the
#: operators engine.
DEFAULT_SIDES = "cuda:fused,cuda:operators"


@dataclass(frozen=True)
class Side:
    """One engine configuration: ``label`` as the user wrote it, ``backend``, ``cuda_engine``
    and, where pinned, the operators engine's loop mode (None: the library's default)."""

    label: str
    backend: str  # "host" or "cuda"
    cuda_engine: str = "automatic"
    operators_loop: str | None = None
    push_expansion: str | None = None  # pinned Options.push_expansion (None: the default)
    update_launch: str | None = None  # pinned Options.update_launch (None: the default)

    @classmethod
    def of(cls, label: str, config: EngineConfig) -> "Side":
        return cls(label, config.backend, config.cuda_engine, config.operators_loop, config.push_expansion,
                   config.update_launch)

    @property
    def config(self) -> EngineConfig:
        """This side's engine configuration."""
        return EngineConfig(self.backend, self.cuda_engine, self.operators_loop, self.push_expansion,
                            self.update_launch)

    @property
    def engine_options(self) -> dict:
        """The options of ``compute()`` / ``Result.from_arrays`` that select this side's engine."""
        return self.config.options

    @property
    def needs_cuda(self) -> bool:
        return self.backend == "cuda"

    @property
    def short_name(self) -> str:
        """The engine's name in report columns: ``host``, ``fused``, ``operators``, ``automatic``,
        ``operators-host`` ..."""
        return self.config.short_name

    def unavailable_reason(self, device: int | None = None) -> str | None:
        """Why this side's engine cannot run here (EngineConfig.unavailable_reason), or None."""
        return self.config.unavailable_reason(device)

    def make_result(self, graph, source: int, objective: int, distances, parents):
        """A result of this side holding the given (prepared, canonical) tree."""
        return self.config.from_arrays(graph, source, distances, parents, canonicalize=False, validate=False,
                                       objective=objective)

    def compute(self, graph, source: int, objective: int):
        """compute() on this side (the once-per-cell check of a prepared tree on the device)."""
        return self.config.compute(graph, source, objective=objective)

    def update(self, graph, batch, result, probe):
        """One update of ``result`` through the public API, the probe marking the engine region."""
        from engines import sssp

        return sssp.update(graph, batch, result, probe=probe)


def parse_side(text: str) -> Side:
    """A side of ``--sides``: any :meth:`EngineConfig.parse` spelling (its label as written)."""
    label = text.strip()
    try:
        return Side.of(label, EngineConfig.parse(label))
    except EngineConfigError as exc:
        raise UsageError(f"unknown side {text!r}: {str(exc).split(': ', 1)[1]}") from None


def parse_sides(text: str) -> tuple[Side, Side]:
    """``"A,B"`` -> (side A, side B); exactly two sides."""
    parts = [p for p in (text or "").split(",")]
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise UsageError(f"--sides {text!r}: expected two sides separated by a comma, e.g. cuda:fused,cuda:operators")
    return parse_side(parts[0]), parse_side(parts[1])


__all__ = ["DEFAULT_SIDES", "Side", "parse_side", "parse_sides", "CUDA_ENGINE_OPTIONS"]
