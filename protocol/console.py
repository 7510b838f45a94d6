"""What the engines command shows on the terminal: live progress and the closing summary table."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .records import RecordStore


class CampaignProgress:
    """Runner progress callbacks drawn with rich (on stderr); silent when disabled."""

    def __init__(self, *, enabled: bool = True):
        self.requested = enabled
        self.enabled = enabled and sys.stderr.isatty()  # a live display only on a terminal
        self._console = Console(stderr=True)
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[note]}"),
            TimeElapsedColumn(),
            console=self._console,
            disable=not self.enabled,
        )
        self._tasks: dict[str, int] = {}

    def __enter__(self):
        self._progress.__enter__()
        return self

    def __exit__(self, *exc):
        return self._progress.__exit__(*exc)

    def preparing(self, name: str) -> None:
        if self.enabled:
            self._console.print(f"preparing inputs of [bold]{name}[/bold]")

    def cell_started(self, key: str, target: int) -> None:
        self._tasks[key] = self._progress.add_task(key, total=target, note="guard + warm-up")

    def cell_progress(self, key: str, accepted: int, target: int) -> None:
        task = self._tasks.get(key)
        if task is not None:
            self._progress.update(task, completed=min(accepted, target), total=max(target, accepted))

    def round_done(self, key: str, row: dict) -> None:
        task = self._tasks.get(key)
        if task is not None and not row["warmup"] and not row["accepted"]:
            self._progress.update(task, note=f"rejected: {row['reject_reason']}"[:60])

    def cell_finished(self, key: str, status: str, detail: str | None) -> None:
        task = self._tasks.get(key)
        if task is not None:
            self._progress.update(task, note=status if not detail else f"{status}: {detail}"[:80])
        if not self.enabled and (self.requested or status != "done"):
            # logs and pipes get one line per cell; failures are always shown
            print(f"{key}: {status}" + (f" ({detail})" if detail else ""), file=sys.stderr, flush=True)


def _ms(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def print_summary_table(store: RecordStore, *, console: Console | None = None) -> None:
    from .report import fmt_ratio  # the report's own formatting (imported late: matplotlib)

    summary = store.read_summary()
    if summary is None:
        return
    sides = summary["sides"]
    table = Table(title=f"A = {sides['A']}, B = {sides['B']} (median ms of the engine region)")
    for col in ("cell", "A ms", "B ms", "B/A [95% CI]", "verdict", "syncs A/B", "acc/rej", "proc: within/between",
                "flags"):
        table.add_column(col)
    for c in summary["cells"]:
        region = c["regions"].get(c["primary_region"], {})
        a = region.get("A", {}).get("median")
        b = region.get("B", {}).get("median")
        # a bound may be null (an infinite one: a round timed at 0 ms): shown as the report shows it
        ratio = "-" if c["ratio"] is None else (f"{fmt_ratio(c['ratio'])} [{fmt_ratio(c['ratio_lo'])}, "
                                                f"{fmt_ratio(c['ratio_hi'])}]")
        s = c["syncs"]
        flags = [f for f in ("noisy", "provisional") if c[f]]
        if c["status"] != "done":
            flags.insert(0, c["status"])
        table.add_row(
            c["cell"], _ms(a), _ms(b), ratio, c["verdict"],
            f"{_num(s['host_syncs_A'])}/{_num(s['host_syncs_B'])}",
            f"{c['accepted']['A']}/{c['rejected_pairs']}",
            _spreads(c),
            ", ".join(flags),
        )
    # a pipe or log file gets the whole table rather than an 80-column squeeze
    (console or Console(width=None if sys.stdout.isatty() else 200)).print(table)


def _spreads(cell: dict) -> str:
    """``3: 0.4%/5.2%``: a cell's worker processes, its spread within and between them."""
    count = cell.get("processes") or 0
    if not count:
        return "-"
    pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"  # noqa: E731
    return f"{count}: {pct(cell.get('within_spread'))}/{pct(cell.get('between_spread'))}"


def _num(v) -> str:
    if v is None:
        return "-"
    return str(int(v)) if float(v).is_integer() else f"{v:.1f}"


__all__ = ["CampaignProgress", "print_summary_table"]
