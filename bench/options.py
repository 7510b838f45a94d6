"""The command-line options that mean the same thing in every bench command, declared once
(issue 29 step 4; asv keeps its shared flags the same way, in ``asv/commands/common_args.py``).

Every command that takes one of these options adds it with the function here, so its name, its
help text, its default and how its value is read are the same everywhere:

- ``--graphs``: gate names, space- or comma-separated; default: the four gates;
- ``--data-dir``: the folder of real graph files; unset, ``$SSSPAB_DATA_DIR`` (the project's one
  name for it), then ``<repo>/../shared/data`` (``bench.gates.data_dir_candidates``, the one rule);
- ``--cache-dir``: the prepared-input cache; unset, ``$SSSPAB_CACHE_DIR``, then ``<repo>/.cache``
  (``engines.io.cache.default_cache_dir``);
- ``--no-progress``: no progress display on stderr;
- ``--sides``: the two sides of an A/B campaign;
- ``--out``: the campaign's records folder (:func:`add_campaign_out_option`), or a table command's
  output folder (:func:`add_table_out_option`);
- ``--warmup``: the untimed runs first of engine_table.py, fused_phases.py, update_anatomy.py,
  host_bench.py, stream.py and ``perf_ab.py engines`` / ``sweep``, a whole count from each command's
  least (0, or 2 warm-up rounds per side for a campaign; :func:`add_warmup_option`; each command
  keeps its own default).

An option of the same name that means something else keeps its own declaration in its command
(``phase_breakdown.py --table-file``, ``python -m conformance generate --out``, the engines' CLI).
"""

from __future__ import annotations

import argparse

from protocol.config import check_objectives_fit  # the protocol owns the range check (its runner's too)
from protocol.sides import DEFAULT_SIDES  # the protocol owns the default pair

from .gates import ALL_GATES, DATA_DIR_VARIABLE, GATE_NAMES

SIDE_NAMES = ("host", "cuda", "cuda:fused", "cuda:operators")


def split_names(values) -> list[str] | None:
    """``a b`` and ``a,b`` both give ["a", "b"]; None stays None."""
    if values is None:
        return None
    return [part for value in values for part in value.split(",") if part]


def parse_objectives(values) -> list[int] | None:
    """``--objectives`` (space- or comma-separated) as objective numbers; None stays None. The one
    check of their form for every command: a word that is no integer, or a negative one, is a
    UsageError naming it (Python's own 'invalid literal for int()' was shown). Whether a number is
    below the graph's weight count is the command's to check with ``check_objectives_fit`` (from
    protocol.config, the runner's check too): only it knows the graph."""
    from protocol.errors import UsageError

    names = split_names(values)
    if names is None:
        return None
    if not names:
        raise UsageError("--objectives: no objective given (only commas)")
    objectives = []
    for name in names:
        try:
            k = int(name)
        except ValueError:
            raise UsageError(f"--objectives: {name!r} is not an objective (a weight column's number, from 0)") from None
        if k < 0:
            raise UsageError(f"--objectives: objective {k} is negative (objectives are numbered from 0)")
        objectives.append(k)
    return objectives


class _SplitNames(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, split_names(values))


class _SplitAtLeastOneName(_SplitNames):
    """``_SplitNames`` for an option that needs at least one name: only commas (``--graphs ,``)
    is a usage error (it measured nothing and exited 0)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if not split_names(values):
            parser.error(f"argument {option_string}: no name given (only commas)")
        super().__call__(parser, namespace, values, option_string)


def add_graphs_option(parser, *, default=None, allow_empty: bool = False, note: str = "") -> None:
    """``--graphs NAME ...``; ``args.graphs`` is a list of names, or ``default`` when not given
    (None: the command's default set, the four gates). ``allow_empty``: ``--graphs`` with no name
    is an empty list (a command that measures something else then)."""
    gates = GATE_NAMES if default is None else tuple(default)
    shown = ("the four gates " if gates == GATE_NAMES else "") + " ".join(gates)
    parser.add_argument("--graphs", nargs="*" if allow_empty else "+",
                        action=_SplitNames if allow_empty else _SplitAtLeastOneName, metavar="NAME",
                        default=None if default is None else list(default),
                        help=f"gate names, space- or comma-separated, of {' '.join(ALL_GATES)} "
                             f"(default: {shown}{note})")


def add_data_dir_option(parser) -> None:
    parser.add_argument("--data-dir", default=None, metavar="DIR",
                        help="folder of real graph files (also searched in its graphs/ subfolder); "
                             f"default: ${DATA_DIR_VARIABLE}, then <repo>/../shared/data")


def add_cache_dir_option(parser) -> None:
    parser.add_argument("--cache-dir", default=None, metavar="DIR",
                        help="cache of prepared inputs (default: $SSSPAB_CACHE_DIR or <repo>/.cache)")


def check_cache_dir(cache_dir) -> None:
    """The inputs' cache (``--cache-dir``, else ``$SSSPAB_CACHE_DIR``, else ``<repo>/.cache``) can be
    written: a UsageError naming the folder and what is wrong, before any input is read (a file
    there was found only when the first prepared input was saved, as exit 3, after the hashing)."""
    from engines.io import default_cache_dir
    from engines.io.outputs import output_problem
    from protocol.errors import UsageError

    problem = output_problem(default_cache_dir(cache_dir), folder=True)
    if problem:
        raise UsageError(f"the cache folder cannot be written: {problem} (--cache-dir or $SSSPAB_CACHE_DIR)")


def add_no_progress_option(parser) -> None:
    parser.add_argument("--no-progress", action="store_true", help="no progress display on stderr")


def add_input_options(parser) -> None:
    """``--data-dir`` and ``--cache-dir``: where a command finds and caches its gate inputs."""
    add_data_dir_option(parser)
    add_cache_dir_option(parser)


def add_sides_option(parser) -> None:
    parser.add_argument("--sides", default=DEFAULT_SIDES, metavar="A,B",
                        help=f"the two sides: {', '.join(SIDE_NAMES)} (default {DEFAULT_SIDES})")


def add_campaign_out_option(parser) -> None:
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="the campaign's records and report folder (default results/)")


#: count_at_least's functions by their minimum (one per minimum: a parser's type is recognisable)
_COUNT_TYPES: dict = {}


def count_at_least(minimum: int):
    """argparse's type of a whole count from ``minimum`` (``--warmup``): a smaller or malformed one
    is the same usage error in every command (``'-1': expected a whole number, at least 0``). The
    same ``minimum`` gives the same function (:data:`non_negative_count` for 0)."""
    if minimum not in _COUNT_TYPES:
        def count(text: str) -> int:
            try:
                value = int(text)
            except ValueError:
                value = None
            if value is None or value < minimum:
                raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number, at least {minimum}")
            return value

        count.__name__ = count.__qualname__ = "non_negative_count" if minimum == 0 else f"count_at_least_{minimum}"
        count.minimum = minimum
        _COUNT_TYPES[minimum] = count
    return _COUNT_TYPES[minimum]


#: a count that may be 0 (each command had checked its --warmup apart, in its own wording)
non_negative_count = count_at_least(0)


def add_warmup_option(parser, *, default: int, runs: str, minimum: int = 0) -> None:
    """``--warmup N``: ``runs`` (what the command repeats) first, not measured; at least ``minimum``
    (said in the help when above 0), checked while the arguments are read (exit 2, before any
    input or GPU is touched)."""
    least = f"at least {minimum}; " if minimum else ""
    parser.add_argument("--warmup", type=count_at_least(minimum), default=default, metavar="N",
                        help=f"{runs} first, not measured ({least}default %(default)s)")


def add_table_out_option(parser, files: str) -> None:
    """``--out DIR`` of a table command: the folder ``files`` (its record and its table) go to."""
    parser.add_argument("--out", default=None, metavar="DIR", help=f"folder for {files}")
