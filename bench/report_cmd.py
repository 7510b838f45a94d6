"""``perf_ab.py report``: re-render results/M7.md (and its plots) from the records alone."""

from __future__ import annotations

import argparse
import sys

from protocol.exitcodes import ProtocolError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=None, help="the campaign's records folder (default results/)")


def main(args) -> int:
    from protocol.environment import REPO_ROOT
    from protocol.records import RecordStore
    from protocol.report import render_report

    try:
        path = render_report(RecordStore(args.out or REPO_ROOT / "results"))
    except ProtocolError as exc:
        print(f"perf_ab.py report: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    print(f"report: {path}", file=sys.stderr)
    return 0


__all__ = ["add_arguments", "main"]
