"""``perf_ab.py report``: render a campaign's report from its records alone.

By default the report goes to standard output and nothing is written: re-rendering a committed
campaign (results/) must not change it behind anyone's back, and the text is byte for byte what
``--write`` would write, so ``report --out results | diff - results/M7.md`` shows what a newer
template or analysis changes. ``--to PATH`` writes it to PATH alone (its plot links point at the
records' plots); ``--write`` replaces ``<out>/M7.md``, its plots and summary.json beside the records.
A campaign renders its own report at its end (bench/engines_cmd.py), not through this command.

Exit status: 0 rendered; 2 missing or damaged records, or a report path that cannot be written
(the message names the file and what is wrong); 3 a write failing mid-way; 1 an internal error (a
bug), the only case with a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engines.errors import os_error_text, print_internal_error
from protocol.errors import ProtocolError
from protocol.exitcodes import ExitCode

from .options import add_campaign_out_option


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_campaign_out_option(parser)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--write", action="store_true",
                       help="replace the report, its plots and summary.json in the records folder "
                            "(default: print the report, write nothing)")
    where.add_argument("--to", metavar="PATH", default=None,
                       help="write the report to PATH instead (nothing in the records folder changes)")


def main(args) -> int:
    from engines.io.outputs import output_problem
    from protocol.environment import REPO_ROOT
    from protocol.records import RecordStore
    from protocol.report import REPORT_NAME, render_report, report_text

    from protocol.outlock import OutLock, running_campaign

    store = RecordStore(args.out or REPO_ROOT / "results")
    target = Path(args.to) if args.to else store.root / REPORT_NAME if args.write else None
    if store.root.exists() and not store.root.is_dir():
        print(f"perf_ab.py report: error: --out {store.root} is a file, not a campaign's records folder",
              file=sys.stderr)
        return int(ExitCode.USAGE)
    # no folder (missing, or under a file): no campaign runs there; read_campaign names what is missing
    holder = running_campaign(store.root) if store.root.is_dir() else None
    if holder is not None:  # its records are half written: a report now would mix rounds in flight
        print(f"perf_ab.py report: error: a campaign is running in {store.root} ({holder}): render its "
              "report when it has ended (it renders its own at its end)", file=sys.stderr)
        return int(ExitCode.USAGE)
    # --write changes the folder: hold it, so that no campaign starts there meanwhile
    lock = OutLock(store.root) if args.write and store.root.is_dir() else None
    try:
        if lock is not None:
            lock.acquire()
        store.read_campaign()  # missing or damaged records first: they say more than the folder
        problem = target is not None and output_problem(target, folder=False)
        if args.to and store.is_record(target):  # --to promises that no record changes
            problem = (f"{target} is a place of the campaign's records in {store.root} (campaign.json, summary.json, "
                       "rounds/); choose another path")
        if problem:
            print(f"perf_ab.py report: error: the report cannot be written: {problem}", file=sys.stderr)
            return int(ExitCode.USAGE)
        if target is None:
            text = report_text(store)
        else:
            path = render_report(store, to=Path(args.to) if args.to else None)
    except ProtocolError as exc:
        print(f"perf_ab.py report: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except OSError as exc:
        print(f"perf_ab.py report: error: cannot write the report: {os_error_text(exc)}", file=sys.stderr)
        return int(ExitCode.ENVIRONMENT)
    except Exception as exc:  # a bug: the traceback helps whoever fixes it
        print_internal_error("perf_ab.py report: ", exc, blamed="the records")
        return int(ExitCode.CORRECTNESS)
    finally:
        if lock is not None:
            lock.release()
    if target is None:
        sys.stdout.write(text)
    else:
        print(f"report: {path}", file=sys.stderr)
    return 0


__all__ = ["add_arguments", "main"]
