"""The options of a result (algorithm.md §11): what each tunable may be, its default, and the one
check every entry point applies (``resolve_options``). Results, the engines, the engine
configurations (engines/config.py) and the command lines read these tables from here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..arguments import flag
from ..errors import InvalidArgumentError
from .plan import DEFAULT_PUSH_EXPANSION, PUSH_EXPANSIONS

CUDA_ENGINES = ("automatic", "fused", "operators")
#: How the operators engine drives its near-far loop (engines/sssp/cuda/operators.py LOOP_MODES).
OPERATORS_LOOPS = ("host", "device")
#: How a CUDA update enqueues its device work (engines/graph/device_apply.py LAUNCHES).
UPDATE_LAUNCHES = ("python", "graph")


@dataclass
class Options:
    """Tunables and the objective of a result (algorithm.md §11). Invalid values raise when used."""

    delta: int = 0
    objective: int = 0
    cuda_engine: str = "automatic"
    validate_inputs: bool = True
    #: the operators engine's loop: "device" (captured launches replayed, the decision to go on
    #: taken on the device; a readback per replay) or "host" (the ADR's literal host loop: one
    #: readback per push iteration and epoch, kept as the measured baseline)
    operators_loop: str = "device"
    #: how both CUDA engines' push expands a near-list vertex (engines/sssp/cuda/push.py):
    #: "group" (up to a warp of lanes share its out-edges, as wide as the list and the grid
    #: allow) or "vertex" (one lane walks them); results never depend on it (algorithm.md §5.12)
    push_expansion: str = DEFAULT_PUSH_EXPANSION
    #: how a CUDA update enqueues the batch's device apply: "graph" (one replay of a CUDA graph
    #: captured once per graph state's buffers and capacity: a constant host cost per update;
    #: measured 0.67x the whole update of "python" on a 100-change stream, H200) or "python"
    #: (each kernel launched from Python, sized to the batch); results never depend on it. The
    #: commit uses "graph" when every CUDA result passed to update() asks for it.
    update_launch: str = "graph"



_OPTION_FIELDS = tuple(f.name for f in dataclasses.fields(Options))


def resolve_options(options: Options | None, overrides: dict, num_weights: int, *, base: Options | None = None) -> Options:
    """A checked copy of ``options`` (or ``base``) with keyword overrides applied.

    Unknown keywords raise TypeError (like any Python call); bad values InvalidArgumentError.
    """
    unknown = sorted(set(overrides) - set(_OPTION_FIELDS))
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
    if options is not None and not isinstance(options, Options):
        raise InvalidArgumentError(f"options must be an engines.sssp.Options, got {type(options).__name__}")
    start = options if options is not None else (base if base is not None else Options())
    opts = dataclasses.replace(start, **overrides)
    check_options(opts, num_weights)
    return opts


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


#: The options whose value is one of a few names, and those names.
_CHOICES = {"cuda_engine": CUDA_ENGINES, "operators_loop": OPERATORS_LOOPS,
            "push_expansion": PUSH_EXPANSIONS, "update_launch": UPDATE_LAUNCHES}


def check_options(opts: Options, num_weights: int) -> None:
    if not _is_int(opts.delta) or opts.delta < 0:
        raise InvalidArgumentError(f"options.delta must be an integer >= 0, got {opts.delta!r}")
    if not _is_int(opts.objective) or not 0 <= opts.objective < num_weights:
        raise InvalidArgumentError(
            f"options.objective {opts.objective!r} is out of range [0, {num_weights})"
        )
    for name, choices in _CHOICES.items():  # each text option and what it may be, in one table
        value = getattr(opts, name)
        # a text first: `in` compares an array elementwise (np.array(["fused"]) was taken, two
        # entries raised NumPy's "truth value of an array is ambiguous")
        if not isinstance(value, str) or value not in choices:
            raise InvalidArgumentError(f"options.{name} must be one of {', '.join(choices)}, got {value!r}")
    flag(opts.validate_inputs, "options.validate_inputs")
    opts.delta = int(opts.delta)
    opts.objective = int(opts.objective)


__all__ = ["CUDA_ENGINES", "OPERATORS_LOOPS", "Options", "UPDATE_LAUNCHES", "check_options",
           "resolve_options"]
