"""Replay the golden corpus on engine configurations and compare every output exactly.

    python -m conformance compare --configs host,cuda:fused,cuda:operators [--corpus DIR] [--cases PATTERN]

Every configuration is compared with the stored expectations (the host reference's outputs,
checked against independent oracles when the corpus was generated), hence with each other:
distances and parents by dtype and bytes, ``invalidated``, ``affected``, ``packed_parents``, the
apply summary and the synchronization counters. No tolerance.

Exit status: 0 all equal; 1 a mismatch or a corrupt corpus (digest); 2 usage error;
3 a CUDA configuration without a usable GPU (or without cooperative launch for cuda:fused);
77 no corpus.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines import interrupt  # noqa: E402  (standard library only: before the heavy imports)

interrupt.guard(__name__, "compare.py")

from engines.exitcodes import ExitCode  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402


class UsageError(Exception):
    pass


def parse_configs(text: str):
    """``--configs``: names of CONFIGS or any EngineConfig spelling (``cuda:operators-host+vertex``);
    the dash names of earlier releases (``cuda-fused``) are accepted for one release."""
    from conformance.replay import CONFIGS, config_named
    from engines.config import EngineConfigError

    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise UsageError("--configs needs at least one configuration")
    configs, unknown = [], []
    for name in names:
        try:
            configs.append(config_named(name))
        except EngineConfigError:
            unknown.append(name)
    if unknown:
        raise UsageError(f"unknown configuration(s) {', '.join(unknown)}; known: {', '.join(CONFIGS)} "
                         "(or any engine configuration: cuda:operators-host+vertex ...)")
    if len({c.name for c in configs}) != len(configs):
        raise UsageError("a configuration is listed twice")
    return configs


def gpu_problem(configs) -> str | None:
    """Why a requested CUDA configuration cannot run here (EngineConfig.unavailable_reason), or None."""
    for config in configs:
        reason = config.engine.unavailable_reason()
        if reason:
            return f"configuration {config.name}: {reason}; replay with --configs host"
    return None


def select_cases(cases, patterns: list[str] | None):
    if not patterns:
        return list(cases)
    return [c for c in cases if any(fnmatch.fnmatchcase(c["name"], p) for p in patterns)]


def summary_table(outcomes, configs) -> Table:
    table = Table(title="golden corpus replay")
    for column in ("configuration", "cases", "equal", "different", "seconds"):
        table.add_column(column, justify="left" if column == "configuration" else "right")
    for config in configs:
        mine = [o for o in outcomes if o.config == config.name]
        bad = sum(not o.ok for o in mine)
        table.add_row(config.name, str(len(mine)), str(len(mine) - bad),
                      f"[red]{bad}[/red]" if bad else "0", f"{sum(o.seconds for o in mine):.2f}")
    return table


def main(argv=None, prog: str = "python -m conformance compare") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--configs", default="host",
                        help="comma-separated: host, host-delta1, cuda:fused, cuda:operators, "
                             "cuda:operators-host, cuda (automatic), any engine configuration "
                             "(engines.config: +vertex/+group/+batched, +graph/+python); the dash form "
                             "cuda-fused is accepted for one release")
    parser.add_argument("--corpus", default=None, help="corpus directory (default tests/golden)")
    parser.add_argument("--cases", action="append", metavar="PATTERN",
                        help="shell-style pattern on case names (repeatable), e.g. 'packing.*'")
    parser.add_argument("--max-listed", type=int, default=50, help="mismatching cases listed in full")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    console = Console(stderr=False, highlight=False)
    err = Console(stderr=True, highlight=False)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        configs = parse_configs(args.configs)
    except UsageError as exc:
        err.print(f"usage error: {exc}")
        return ExitCode.USAGE

    from conformance.golden import DEFAULT_CORPUS
    from conformance.replay import replay
    from conformance.store import CorpusCorruptError, CorpusMissingError, load_corpus

    corpus_dir = Path(args.corpus) if args.corpus else DEFAULT_CORPUS
    try:
        corpus = load_corpus(corpus_dir)
    except CorpusMissingError as exc:
        err.print(f"golden corpus missing: {exc}")
        return ExitCode.NO_CORPUS
    except CorpusCorruptError as exc:
        err.print(f"[red]{exc}[/red]")
        return ExitCode.CORRECTNESS
    cases = select_cases(corpus.cases, args.cases)
    if not cases:
        err.print(f"usage error: no case matches {args.cases}")
        return ExitCode.USAGE
    problem = gpu_problem(configs)
    if problem:
        err.print(problem)
        return ExitCode.ENVIRONMENT

    start = time.perf_counter()
    if args.quiet:
        outcomes = replay(corpus, cases, configs)
    else:
        from tqdm import tqdm

        with tqdm(total=len(cases) * len(configs), desc="replaying", unit="case", file=sys.stderr) as bar:
            outcomes = replay(corpus, cases, configs, progress=bar.update)
    corpus.close()
    elapsed = time.perf_counter() - start
    console.print(summary_table(outcomes, configs))
    failed = [o for o in outcomes if not o.ok]
    for o in failed[: args.max_listed]:
        where = f", first differing vertex {o.first_vertex}" if o.first_vertex is not None else ""
        console.print(f"[red]MISMATCH[/red] {o.case} on {o.config}{where}")
        for line in o.mismatches[:6]:
            console.print(f"    {line}")
    if len(failed) > args.max_listed:
        console.print(f"... and {len(failed) - args.max_listed} more mismatching replays")
    console.print(f"{len(cases)} cases x {len(configs)} configurations in {elapsed:.1f} s: "
                  + ("all equal" if not failed else f"{len(failed)} mismatching"))
    return ExitCode.CORRECTNESS if failed else ExitCode.OK


if __name__ == "__main__":
    interrupt.run(main)
