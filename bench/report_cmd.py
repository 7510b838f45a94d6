"""``perf_ab.py report``: re-render results/M7.md (and its plots) from the records alone.

Exit status: 0 rendered; 2 missing or damaged records, or a records folder the report cannot be
written into (the message names the file and what is wrong); 3 a write failing mid-way; 1 an
internal error (a bug), the only case with a traceback.
"""

from __future__ import annotations

import argparse
import sys

from engines.errors import os_error_text, print_internal_error
from protocol.exitcodes import ExitCode, ProtocolError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=None, help="the campaign's records folder (default results/)")


def main(args) -> int:
    from engines.io.outputs import output_problem
    from protocol.environment import REPO_ROOT
    from protocol.records import RecordStore
    from protocol.report import REPORT_NAME, render_report

    store = RecordStore(args.out or REPO_ROOT / "results")
    try:
        store.read_campaign()  # missing or damaged records first: they say more than the folder
        problem = output_problem(store.root / REPORT_NAME, folder=False)
        if problem:
            print(f"perf_ab.py report: error: the report cannot be written: {problem}", file=sys.stderr)
            return int(ExitCode.USAGE)
        path = render_report(store)
    except ProtocolError as exc:
        print(f"perf_ab.py report: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except OSError as exc:
        print(f"perf_ab.py report: error: cannot write the report: {os_error_text(exc)}", file=sys.stderr)
        return int(ExitCode.ENVIRONMENT)
    except Exception as exc:  # a bug: the traceback helps whoever fixes it
        print_internal_error("perf_ab.py report: ", exc, blamed="the records")
        return int(ExitCode.CORRECTNESS)
    print(f"report: {path}", file=sys.stderr)
    return 0


__all__ = ["add_arguments", "main"]
