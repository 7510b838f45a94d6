"""The records of a campaign (docs/protocol.md §9): rounds (Parquet), campaign and summary (JSON).

Layout under the output folder (``results/`` by default)::

    campaign.json            schema version, environment, parameters, inputs, cell statuses
    rounds/<cell>.parquet    one row per round of one cell, warm-up and rejected rounds included
    summary.json             the statistics of docs/protocol.md §7 per cell and region: derived
                             from the rounds and campaign.json (deterministic bootstrap seed), a cache the report
                             rebuilds when it is missing, so it is not committed; it carries the
                             fingerprint of the records it was derived from (``records_sha256``)
                             and counts as missing when they no longer match it

A Parquet file cannot be appended to safely (an interrupted writer leaves no footer), so a cell's
file is rewritten whole, through a temporary file and an atomic rename, after every round: an
interrupted campaign keeps every finished round and ``--resume`` continues from them.

A damaged record (a truncated Parquet file, a campaign.json that is not JSON, not an object or
lacks a field) raises ``UsageError`` (exit 2) naming the file and what is wrong; a damaged
summary.json, being derived, reads as missing and is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .schema import SCHEMA_VERSION
from .errors import UsageError
from .exitcodes import ExitCode
from .record_checks import (campaign_problem, duplicate_rounds_problem, missing_rounds_problem, pair_count_problem,
                            round_rows_problem, round_values_problem, summary_problem)

_DAMAGED_ADVICE = "restore the file (from a backup or git), or start a new campaign in another --out folder"

ROUND_SCHEMA = pa.schema(
    [
        ("campaign_id", pa.string()),
        ("session", pa.int32()),  # 0 for the first run, +1 per --resume
        ("process", pa.int32()),  # the worker index, 0 .. processes-1 (docs/protocol.md §2, runner.py)
        ("cell", pa.string()),
        ("graph", pa.string()),
        ("batch", pa.string()),
        ("objective", pa.int32()),
        ("role", pa.string()),  # "A" or "B"
        ("side", pa.string()),  # the side's label, e.g. cuda:fused
        ("engine", pa.string()),  # Stats.engine_used
        ("round_index", pa.int32()),  # per side and cell, counting every round
        ("pair_index", pa.int32()),  # -1 for warm-up rounds
        ("position", pa.int32()),  # 0 or 1 within the pair (0 = first)
        ("sequence", pa.int32()),  # order of the round within the cell's session
        ("warmup", pa.bool_()),  # untimed: a warm-up or a verification round
        ("verification", pa.bool_()),  # an untimed round with the CUPTI counter (docs/protocol.md §6)
        ("accepted", pa.bool_()),
        ("reject_reason", pa.string()),
        ("engine_host_ms", pa.float64()),
        ("engine_device_ms", pa.float64()),
        ("update_host_ms", pa.float64()),
        ("host_syncs", pa.int64()),
        ("cupti_syncs", pa.int64()),
        ("sync_budget", pa.int64()),
        ("iterations", pa.int64()),
        ("epochs", pa.int64()),
        ("pushes", pa.int64()),
        ("invalidated", pa.int64()),
        ("affected", pa.int64()),
        ("packed_parents", pa.bool_()),
        # the fused kernel's grid barriers of the update (Stats.grid_syncs); null on other engines
        ("grid_syncs", pa.int64()),
        # the median near-list length of the update's push iterations, read from the device's
        # log after untimed rounds only (engines.sssp.cuda.push_profile); null in timed rounds
        ("near_median", pa.float64()),
        ("sm_clock_min_mhz", pa.int32()),
        ("sm_clock_median_mhz", pa.float64()),
        ("mem_clock_mhz", pa.int32()),
        ("pstate", pa.int32()),
        ("event_reasons", pa.int64()),
        ("event_reason_names", pa.string()),
        ("nvml_samples", pa.int32()),
        ("temperature_peak_c", pa.int32()),
        ("power_peak_w", pa.float64()),
        ("foreign_cpu_cores", pa.float64()),
        ("foreign_gpu_pids", pa.string()),  # comma-separated; "" none seen; null unknown
        ("timestamp", pa.string()),  # UTC, ISO 8601
        # the planted delay of the round's side (--plant-delay, a test hook); null: none planted
        ("planted_delay_ns", pa.int64()),
        # the order the round's worker process allocated the sides in, "AB" or "BA" (--alloc-order,
        # protocol/placement.py); null: A then B, the option off
        ("alloc_order", pa.string()),
        # what --l2-flush did before the round: "flushed N bytes" (a CUDA side), "no-op: host side";
        # null: the option off (protocol/l2flush.py)
        ("l2_flush", pa.string()),
    ]
)
ROUND_COLUMNS = tuple(ROUND_SCHEMA.names)
#: the columns the checks of a round file read (record_checks.round_values_problem,
#: duplicate_rounds_problem, _accepted_pairs), converted to pandas once per file
_CHECKED_COLUMNS = ("process", "pair_index", "role", "accepted", "warmup", "engine_host_ms", "engine_device_ms",
                    "update_host_ms")
#: Columns added after the first campaigns were recorded, and the value they had then.
LATER_COLUMNS = {"verification": False, "process": 0, "planted_delay_ns": None,
                 "grid_syncs": None, "near_median": None, "alloc_order": None,
                 "l2_flush": None}


def cell_key(graph: str, batch: str, objective: int) -> str:
    return f"{graph}/{batch}/{objective}"


def _cell_file_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "__", key) + ".parquet"


def _umask() -> int:
    """The process's umask. Linux states it in /proc (read without changing it); elsewhere it can
    only be read by setting it, briefly, and putting it back."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _atomic_write_bytes(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{path.name}."
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, dir=path.parent)
        # mkstemp creates 0600 (private to its owner); a record gets the mode a plain open() gives
        # the report beside it (0666 less the umask), so records and reports share one file mode
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and _names_temporary(exc.filename, path.parent, prefix):
            # the error names the file being written, as a plain open() would, not the
            # temporary file that no longer exists (a user's message says which file failed)
            raise OSError(exc.errno, exc.strerror, str(path)).with_traceback(exc.__traceback__) from None
        raise


def _names_temporary(filename, folder: Path, prefix: str) -> bool:
    """``filename`` (an OSError's) is a temporary file of the write into ``folder`` (mkstemp names
    it relative or absolute as the folder was given, and returns it absolute)."""
    if not isinstance(filename, str):
        return False
    name = Path(os.path.abspath(filename))
    return name.parent == Path(os.path.abspath(folder)) and name.name.startswith(prefix)


def write_text(path: Path, text: str) -> None:
    """``text`` into ``path`` whole or not at all (a temporary file replaced; a report or table
    that a kill or a second Ctrl-C interrupts is never left half written)."""
    _atomic_write_bytes(Path(path), lambda h: h.write(text.encode()))


def writable_folder(folder, label: str) -> Path:
    """Create ``folder`` (and its parents) and make and drop a file in it, before any work, so that
    an output that cannot be written costs no measurement; ``UsageError`` starting with ``label``
    (what the user named, e.g. ``--out DIR``) otherwise."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except FileExistsError:  # mkdir(exist_ok=True) met something that is not a folder
        raise UsageError(f"{label}: cannot write there ({folder} is not a folder)") from None
    except OSError as exc:
        raise UsageError(f"{label}: cannot write there ({exc.strerror or exc})") from None
    return folder


def write_failed(path, exc: OSError) -> str:
    """The one line a command prints when writing ``path`` failed after its work was done (a full
    disk, a folder removed meanwhile): the file and the system's reason."""
    return f"cannot write {path}: {exc.strerror or exc}"


def write_or_say(command: str, files, *, wrong_answer: bool = False) -> ExitCode | None:
    """Write the outputs a command keeps after its work, ``files`` being ``(path, content)`` pairs
    in order (a ``str`` through :func:`write_text`, a ``dict`` through :func:`write_json`); None
    when every one was written.

    A write that fails with OSError (a full disk, a folder removed meanwhile; the folder was
    checked before the work by :func:`writable_folder`) stops there: the command's one line
    ``<command>: cannot write FILE: reason`` (:func:`write_failed`) goes to stderr and the exit
    status is returned, so that a measurement already printed is never lost to a traceback.
    That status is ``ExitCode.ENVIRONMENT``, or ``ExitCode.CORRECTNESS`` when ``wrong_answer``:
    a wrong answer found by the work outranks the file, its status being the one a script must
    see. Any other exception is a bug and is raised."""
    for path, content in files:
        try:
            if isinstance(content, dict):
                write_json(Path(path), content)
            else:
                write_text(Path(path), content)
        except OSError as exc:
            print(f"{command}: {write_failed(path, exc)}", file=sys.stderr)
            return ExitCode.CORRECTNESS if wrong_answer else ExitCode.ENVIRONMENT
    return None


def write_json(path: Path, data: dict) -> None:
    write_text(path, json.dumps(data, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(value):
    # NumPy scalars and similar: their Python value
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def as_recorded(data: dict) -> dict:
    """``data`` as a JSON record holds it (NumPy scalars as Python numbers, tuples as lists), so
    that what was derived compares equal with what was read back."""
    return json.loads(json.dumps(data, default=_json_default))


def read_json(path: Path) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _json_problem(path: Path):
    """``(parsed, None)`` or ``(None, what is wrong)`` for a JSON record; a file the system will
    not read (permissions) raises :func:`unreadable`."""
    try:
        return read_json(path), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text ({exc})"
    except OSError as exc:
        raise unreadable(path, exc) from None


def damaged(path: Path, problem: str) -> UsageError:
    return UsageError(f"{path}: damaged record: {problem}; {_DAMAGED_ADVICE}")


def unreadable(path: Path, exc: OSError) -> UsageError:
    """A record the system will not let us read (permissions, a vanished disk): not damaged."""
    return UsageError(f"{path}: the record cannot be read: {exc.strerror or exc}; check the file's "
                      "permissions (the record itself may be whole)")


def read_round_table(path: Path) -> pa.Table:
    """One cell's Parquet file with every round column; ``UsageError`` naming it when damaged or
    when it cannot be read."""
    try:
        table = pq.read_table(path)
    except OSError as exc:
        if exc.errno is not None and not isinstance(exc, pa.ArrowException):
            raise unreadable(path, exc) from None  # the system refused it (its errno says why)
        raise damaged(path, f"not a readable Parquet file ({exc})") from None
    except pa.ArrowException as exc:
        raise damaged(path, f"not a readable Parquet file ({exc})") from None
    for name, value in LATER_COLUMNS.items():
        if name not in table.column_names:
            table = table.append_column(name, pa.array([value] * table.num_rows, type=ROUND_SCHEMA.field(name).type))
    missing = [c for c in ROUND_COLUMNS if c not in table.column_names]
    if missing:
        raise damaged(path, f"the round table lacks the column(s) {', '.join(missing)}")
    try:
        return table.select(list(ROUND_COLUMNS)).cast(ROUND_SCHEMA)
    except (pa.ArrowException, ValueError) as exc:
        raise damaged(path, f"a round column has the wrong type ({exc})") from None


class CellRounds:
    """The rounds of one cell, kept in memory and rewritten to its Parquet file on every append."""

    def __init__(self, path: Path, rows: list[dict]):
        self.path = path
        self.rows = rows

    def append(self, *rows: dict) -> None:
        for row in rows:
            missing = set(ROUND_COLUMNS) - set(row)
            if missing:
                raise ValueError(f"round record lacks {sorted(missing)}")
            self.rows.append({c: row[c] for c in ROUND_COLUMNS})
        self._flush()

    def amend(self, index: int, **fields) -> None:
        """Change fields of a recorded round (a pair's first round rejected with its partner)."""
        unknown = set(fields) - set(ROUND_COLUMNS)
        if unknown:
            raise ValueError(f"not round columns: {sorted(unknown)}")
        self.rows[index].update(fields)
        self._flush()

    def _flush(self) -> None:
        table = pa.Table.from_pylist(self.rows, schema=ROUND_SCHEMA)
        _atomic_write_bytes(self.path, lambda h: pq.write_table(table, h))


class RecordStore:
    """The folder of one campaign's records."""

    def __init__(self, out_dir):
        self.root = Path(out_dir)
        self.campaign_path = self.root / "campaign.json"
        self.summary_path = self.root / "summary.json"
        self.rounds_dir = self.root / "rounds"

    def has_campaign(self) -> bool:
        return self.campaign_path.is_file()

    def read_campaign(self) -> dict:
        if not self.has_campaign():
            raise UsageError(f"no campaign records in {self.root} (campaign.json is missing)")
        campaign, problem = _json_problem(self.campaign_path)
        version = campaign.get("schema_version") if problem is None and isinstance(campaign, dict) else None
        if isinstance(version, int) and not isinstance(version, bool) and version != SCHEMA_VERSION:
            raise UsageError(
                f"{self.campaign_path}: schema version {version}, this tool reads {SCHEMA_VERSION}"
            )
        problem = problem or campaign_problem(campaign)  # a missing schema_version is named there
        if problem:
            raise damaged(self.campaign_path, problem)
        return campaign

    def check_readable(self) -> None:
        """Read campaign.json and every round file; ``UsageError`` for the first damaged one
        (before a resume writes anything)."""
        self.checked_round_tables(self.read_campaign())

    def _round_files(self) -> list[Path]:
        return sorted(self.rounds_dir.glob("*.parquet")) if self.rounds_dir.is_dir() else []

    def checked_round_tables(self, campaign: dict) -> list[pa.Table]:
        """Every round file of the folder, each proved to belong to ``campaign`` and to the cell
        its name says, and every cell that must have rounds proved to have them; ``UsageError``
        (exit 2) naming the first file that is wrong, or missing (issue 28: records that prove
        themselves, never a silent wrong number)."""
        by_file = {_cell_file_name(key): key for key in campaign["cells"]}
        tables = []
        for path in self._round_files():
            table = read_round_table(path)
            problem = round_rows_problem(_distinct(table, "cell"), _distinct(table, "campaign_id"),
                                         by_file.get(path.name), campaign)
            key = by_file.get(path.name)
            rows = table.select(list(_CHECKED_COLUMNS)).to_pandas()
            problem = problem or round_values_problem(rows) or duplicate_rounds_problem(rows)
            problem = problem or pair_count_problem(key, campaign["cells"][key], _accepted_pairs(rows))
            if problem:
                raise damaged(path, problem)
            tables.append(table)
        for key, cell in campaign["cells"].items():
            path = self.rounds_dir / _cell_file_name(key)
            problem = None if path.is_file() else missing_rounds_problem(key, cell)
            if problem:
                raise damaged(path, problem)
        return tables

    def write_campaign(self, campaign: dict) -> None:
        write_json(self.campaign_path, campaign)

    def holds_records(self) -> bool:
        """The folder holds a campaign record or round files (someone's measurements)."""
        return self.has_campaign() or (self.rounds_dir.is_dir() and any(self.rounds_dir.glob("*.parquet")))

    def is_record(self, path) -> bool:
        """``path`` (however spelled) is one of the folder's records: campaign.json, summary.json or
        anything under rounds/ (a report written there would replace a measurement's record)."""
        target = Path(os.path.realpath(path))
        if target in (Path(os.path.realpath(self.campaign_path)), Path(os.path.realpath(self.summary_path))):
            return True
        return Path(os.path.realpath(self.rounds_dir)) in target.parents

    def check_resumable(self) -> None:
        """What ``--resume`` may continue: campaign.json and every round file whole (``UsageError``
        naming the first damaged one), or no records at all (a new campaign starts). Round files
        without campaign.json are refused: their campaign (id, parameters, cells) is lost with it,
        so they cannot be continued, and the new campaign a resume would start deletes them."""
        if self.has_campaign():
            self.check_readable()
        elif self.holds_records():
            raise UsageError(f"--resume: {self.root} holds round files but no campaign.json, so there is no campaign "
                             "to continue; restore campaign.json (from a backup or git), pass --force to replace "
                             "the round files, or choose another --out folder")

    def records_fingerprint(self, campaign: dict | None = None) -> str:
        """SHA-256 of what the summary is derived from: the campaign's id, parameters and cells
        (``campaign``, else campaign.json as it is now) and the name and bytes of every round file.
        Fields the summary does not read (timestamps, clocks, the sessions) are left out, so that
        the runner may record them after the summary."""
        if campaign is None:
            campaign = self.read_campaign()
        digest = hashlib.sha256()
        basis = {k: campaign.get(k) for k in ("campaign_id", "parameters", "cells")}
        digest.update(json.dumps(basis, sort_keys=True, default=_json_default).encode())
        files = sorted(self.rounds_dir.glob("*.parquet")) if self.rounds_dir.is_dir() else []
        for path in files:
            digest.update(b"\0" + path.name.encode() + b"\0")
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        return digest.hexdigest()

    def write_summary(self, summary: dict, campaign: dict | None = None) -> None:
        """Write the summary stamped with the fingerprint of the records it comes from
        (``campaign``, else campaign.json as it is now)."""
        write_json(self.summary_path, {**summary, "records_sha256": self.records_fingerprint(campaign)})

    def read_summary(self) -> dict | None:
        """The summary, or None when it is missing, damaged, or derived from other records than
        campaign.json and the round files now in the folder (it is derived: rebuild it)."""
        if not self.summary_path.is_file():
            return None
        summary, problem = _json_problem(self.summary_path)
        if problem or summary_problem(summary):
            return None
        try:
            current = self.records_fingerprint()
        except UsageError:  # no readable campaign: nothing to derive a summary from
            return None
        if summary.get("records_sha256") != current or summary.get("campaign_id") != self.read_campaign()["campaign_id"]:
            return None
        return summary

    def cell_rounds(self, key: str) -> CellRounds:
        """The cell's rounds so far (those already on disk when resuming), ready to append."""
        path = self.rounds_dir / _cell_file_name(key)
        rows = read_round_table(path).to_pylist() if path.is_file() else []
        return CellRounds(path, rows)

    def clear_rounds(self) -> None:
        if self.rounds_dir.is_dir():
            for f in self.rounds_dir.glob("*.parquet"):
                f.unlink()

    def read_rounds(self, campaign: dict | None = None) -> pd.DataFrame:
        """Every round of the campaign (``campaign``, else campaign.json) as one frame (empty, with
        the columns, when none), checked against it (:meth:`checked_round_tables`)."""
        tables = self.checked_round_tables(self.read_campaign() if campaign is None else campaign)
        if not tables:
            return ROUND_SCHEMA.empty_table().to_pandas()
        return pa.concat_tables(tables).to_pandas()


def _distinct(table: pa.Table, column: str) -> list:
    return table.column(column).unique().to_pylist()


def _accepted_pairs(rows) -> int:
    """Complete accepted pairs among a cell's rounds (a pandas frame with process, pair_index,
    warmup and accepted; as protocol.units.pair_counts counts them: per worker and pair index, a
    half pair counting as none)."""
    rows = rows[~rows["warmup"].astype(bool)]
    if rows.empty:
        return 0
    pairs = rows.groupby([rows["process"].fillna(0), "pair_index"])["accepted"].agg(["size", "all"])
    return int(((pairs["size"] >= 2) & pairs["all"].astype(bool)).sum())


__all__ = [
    "ROUND_SCHEMA",
    "ROUND_COLUMNS",
    "cell_key",
    "CellRounds",
    "RecordStore",
    "write_text",
    "writable_folder",
    "write_failed",
    "write_or_say",
    "write_json",
    "as_recorded",
    "read_json",
    "damaged",
    "unreadable",
    "read_round_table",
]
