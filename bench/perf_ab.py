#!/usr/bin/env python3
"""The A/B service's command line: ``prepare`` (inputs), ``engines`` (a campaign), ``report``.

Each subcommand lives in its own module with ``add_arguments(parser)`` and ``main(args) -> int``;
this file only dispatches, so ``python bench/perf_ab.py ...`` works from a checkout without install.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines import interrupt  # noqa: E402  (standard library only: before the heavy imports)

interrupt.guard(__name__, "perf_ab.py")

from engines.exitcodes import ExitCode  # noqa: E402  (standard library only)

SUBCOMMANDS = {
    "prepare": ("bench.prepare_cmd", "build and cache gate graphs, weights, initial trees and batches"),
    "engines": ("bench.engines_cmd", "run an A/B campaign between two engine configurations"),
    "report": ("bench.report_cmd", "render a campaign's report from its records (stdout; --write, --to PATH)"),
    "sweep": ("bench.sweep_cmd", "update() against compute() from scratch over batch sizes, per graph and engine"),
}

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="perf_ab.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(SUBCOMMANDS) + "}")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(sub_parser)
        sub_parser.set_defaults(_main=module.main)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return ExitCode.USAGE
    return int(args._main(args) or 0)


if __name__ == "__main__":
    interrupt.run(main)
