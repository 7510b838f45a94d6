"""Worker processes (docs/protocol.md §2 "Worker processes"): a fresh process per worker pass.

Two runs of the same code in two processes differ by more than the rounds of one process do
(module load, allocations, placement in memory, the CUDA context), so each cell is measured by
``processes`` workers. Worker ``w`` measures its share of every cell in one pass over the campaign,
in its own process, started with the ``spawn`` method: a new interpreter that inherits no CUDA
context, no module and no allocation from the campaign process, loads its inputs itself (from the
prepared cache, or the pickled small inputs of tests and library users) and builds both sides'
results anew. One process per pass rather than per cell: a cell of pass ``w`` then sees a process
that is as warm as a library user's (earlier cells ran in it), the context and module load are
paid once per pass, and the passes are spread over the campaign (all cells of worker 0, then all of
worker 1, ...), so a slow hour of the machine does not fall on all workers of one cell.

The worker process only measures. The campaign process keeps everything that must survive it:
the instruments (the NVML sampler, the CPU monitor, a clock lock and its reset), the records and
the progress display. A worker asks the campaign process for each reading around a round and sends
each round record as it finishes, waiting for the reply, so that a record is on disk before the
next round starts and the campaign process never works (flushes, samples a round's window) while
a timed round runs, as in one process.

A worker process that dies (a signal, ``os._exit``, a device fault) or raises loses only its
unfinished round: every finished round was written by the campaign process. The unit it was
running is recorded as ``crashed`` and the pass goes on in a fresh process (loading the graph
again); ``--resume`` re-runs only the crashed unit (:mod:`protocol.runner`).

A worker process that stays alive but goes silent (a kernel that never returns, a deadlock) would
hold the campaign forever, so every wait for a worker's next message has a deadline: while it
starts and loads a graph, the longer of ``SETUP_TIMEOUT_S`` and the campaign's ``worker_timeout``;
while it measures a unit, the longer of ``worker_timeout`` and ``SILENCE_MULTIPLE`` times the
longest silence the pass has seen in its units so far (a round, a guard: what the unit really
takes on this machine). A worker past its deadline is killed and its unit recorded as ``crashed``,
like a worker that died: its finished rounds were already written.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import time
import traceback
from dataclasses import dataclass
from typing import Callable

from .config import SETUP_TIMEOUT_S, SILENCE_MULTIPLE
from .exitcodes import ExitCode
from .measurer import Measurer
from .units import LocalRounds, Unit

# how long a worker asked to stop may take to leave before it is terminated
STOP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class InputSource:
    """How a worker gets one graph's inputs: ``loader(name)`` (a picklable callable that reads the
    prepared cache) or, without one, the campaign process's ``graph_input`` itself (pickled to a
    worker process: small inputs of tests and library users)."""

    name: str
    graph_input: object = None
    loader: Callable | None = None

    def load(self):
        return self.graph_input if self.loader is None else self.loader(self.name)

    def without_input(self) -> "InputSource":
        """The same source, not holding the input in memory (a loader re-reads it)."""
        return self if self.loader is None else InputSource(self.name, None, self.loader)


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker process needs before its first command (pickled to it)."""

    config: object  # config.CampaignConfig
    campaign_id: str
    session: int
    process: int
    sync_counter_factory: Callable | None = None


class WorkerCrash(Exception):
    """The worker process died or raised; the message says how."""


class WorkerHung(WorkerCrash):
    """The worker process stayed alive but sent nothing before its deadline; it has been killed.
    A crash to the runner: the unit is ``crashed`` and its finished rounds are kept."""


# -- the worker process ---------------------------------------------------------------------------
class _Channel:
    """The worker's end: a request to the campaign process and its reply."""

    def __init__(self, conn):
        self.conn = conn

    def call(self, name: str, *args):
        self.conn.send(("call", name, args))
        kind, value = self.conn.recv()
        if kind != "ok":
            raise RuntimeError(f"the campaign process could not serve {name}: {value}")
        return value


class _RemoteInstruments:
    """``Instruments`` as a round sees them, read by the campaign process."""

    def __init__(self, channel: _Channel):
        self._channel = channel

    def start_cell(self) -> None:
        self._channel.call("start_cell")

    def after_warmup(self) -> None:
        self._channel.call("after_warmup")

    def begin_round(self):
        return self._channel.call("begin_round")

    def end_round(self, window):
        return self._channel.call("end_round", window)


class _RemoteProgress:
    def __init__(self, channel: _Channel):
        self._channel = channel

    def round_done(self, key: str, row: dict) -> None:
        pass  # the campaign process reports a row when it records it

    def cell_progress(self, key: str, accepted: int, target: int) -> None:
        self._channel.call("progress", key, accepted, target)


def worker_main(conn, setup: WorkerSetup) -> None:
    """The body of a worker process: graph and unit commands until ``stop``."""
    # Ctrl-C reaches the whole process group: the campaign process handles it and ends its worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    channel = _Channel(conn)
    measurer = Measurer(setup.config, _RemoteInstruments(channel), campaign_id=setup.campaign_id,
                        session=setup.session, sync_counter_factory=setup.sync_counter_factory,
                        record_cell=lambda key, **values: channel.call("set_cell", key, values))
    try:
        while True:
            command, payload = conn.recv()
            if command == "stop":
                break
            if command == "graph":
                measurer.open_graph(payload.load())
                conn.send(("done", None))
            elif command == "unit":
                unit, rows = payload
                outcome = measurer.run_unit(unit, LocalRounds(rows, channel.call), _RemoteProgress(channel))
                conn.send(("done", outcome))
            else:
                raise ValueError(f"unknown worker command {command!r}")
    except (EOFError, ConnectionError):
        os._exit(ExitCode.ENVIRONMENT)  # the campaign process is gone: nobody to report to
    except BaseException as exc:
        traceback.print_exc()
        try:
            conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        except Exception:
            pass
        os._exit(ExitCode.FAILURE)


# -- the campaign process's side ------------------------------------------------------------------
@dataclass
class UnitHandlers:
    """What the campaign process does for a worker's requests during one unit."""

    instruments: object
    rounds: object  # units.UnitRounds
    progress: object  # cell_progress / round_done, for this unit
    set_cell: Callable[..., None]
    key: str


def _serve(handlers: UnitHandlers, name: str, args: tuple):
    if name == "begin_round":
        return handlers.instruments.begin_round()
    if name == "end_round":
        return handlers.instruments.end_round(*args)
    if name == "start_cell":
        return handlers.instruments.start_cell()
    if name == "after_warmup":
        return handlers.instruments.after_warmup()
    if name == "append":
        (rows,) = args
        handlers.rounds.append(*rows)
        for row in rows:
            handlers.progress.round_done(handlers.key, row)
        return None
    if name == "amend":
        index, fields = args
        return handlers.rounds.amend(index, **fields)
    if name == "progress":
        return handlers.progress.cell_progress(*args)
    if name == "set_cell":
        key, values = args
        return handlers.set_cell(key, **values)
    raise ValueError(f"unknown worker request {name!r}")


#: what ``_receive`` returns for a worker that sent nothing before its deadline
_SILENT = object()


def _exit_text(code: int | None) -> str:
    if code is None:
        return "stopped answering"
    if code < 0:
        try:
            return f"was killed by signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


class WorkerPass:
    """Worker ``process``'s pass over the campaign in fresh spawned processes: one process for the
    pass, a new one only after a crash. ``run_unit`` returns the unit's (status, detail, counts)
    and raises :class:`WorkerCrash` when the process died or raised."""

    def __init__(self, setup: WorkerSetup):
        self.setup = setup
        self._context = multiprocessing.get_context("spawn")
        self._proc = None
        self._conn = None
        self._source: InputSource | None = None
        self._graph_open = False
        self.started = 0  # processes started in this pass
        # the longest wait for a worker's message inside a unit so far (seconds): what the
        # deadline of the next waits grows with
        self.longest_silence_s = 0.0

    def open_graph(self, source: InputSource) -> None:
        """The graph of the next units (loaded by the worker before its next unit)."""
        self._source = source
        self._graph_open = False

    def close_graph(self) -> None:
        self._source = None

    def run_unit(self, unit: Unit, handlers: UnitHandlers) -> tuple[str, str | None, dict]:
        if self._proc is None:
            self._start()
        if not self._graph_open:
            self._command(("graph", self._source), None, doing=f"loading graph {self._source.name}")
            self._graph_open = True
        rows = [dict(r) for r in handlers.rounds.rows]
        return self._command(("unit", (unit, rows)), handlers,
                             doing=f"measuring cell {unit.key} (worker {unit.process})")

    def _deadline_s(self, in_unit: bool) -> float:
        """How long the next wait for a worker's message may last (see the module's docstring)."""
        floor = self.setup.config.worker_timeout
        if not in_unit:
            return max(SETUP_TIMEOUT_S, floor)
        return max(floor, SILENCE_MULTIPLE * self.longest_silence_s)

    def _start(self) -> None:
        parent, child = self._context.Pipe(duplex=True)
        proc = self._context.Process(target=worker_main, args=(child, self.setup), daemon=True,
                                     name=f"ssspab-worker-{self.setup.process}")
        proc.start()
        child.close()  # the worker's end lives in the worker: EOF here when it dies
        self._proc, self._conn = proc, parent
        self._graph_open = False
        self.started += 1

    def _command(self, message, handlers: UnitHandlers | None, *, doing: str):
        try:
            self._conn.send(message)
        except (BrokenPipeError, ConnectionError, EOFError):
            self._crashed(None)
        in_unit = handlers is not None
        while True:
            deadline_s = self._deadline_s(in_unit)
            started = time.monotonic()
            received = self._receive(deadline_s)
            waited_s = time.monotonic() - started
            if received is _SILENT:
                self._hung(doing, waited_s, deadline_s)
            if in_unit:
                self.longest_silence_s = max(self.longest_silence_s, waited_s)
            if received is None:
                self._crashed(None)
            kind = received[0]
            if kind == "done":
                return received[1]
            if kind == "failed":
                self._crashed(f"raised {received[1]}")
            _, name, args = received
            value = _serve(handlers, name, args)
            try:
                self._conn.send(("ok", value))
            except (BrokenPipeError, ConnectionError, EOFError):
                self._crashed(None)

    def _receive(self, deadline_s: float):
        """The worker's next message, None when it has ended (what it sent first is read), or
        ``_SILENT`` when it sent nothing for ``deadline_s`` seconds."""
        give_up = time.monotonic() + deadline_s
        while True:
            left = give_up - time.monotonic()
            ready = multiprocessing.connection.wait([self._conn, self._proc.sentinel], timeout=max(left, 0.0))
            if not ready and left <= 0:
                return _SILENT
            if self._conn in ready or self._conn.poll():
                try:
                    return self._conn.recv()
                except (EOFError, ConnectionError, OSError):
                    return None
            if self._proc.sentinel in ready:
                return None

    def _crashed(self, how: str | None):
        proc = self._proc
        # a dying process may still be on its way out: wait a moment for its real exit status
        self._drop(grace_s=5.0)
        raise WorkerCrash(f"the worker process {how or _exit_text(proc.exitcode)}")

    def _hung(self, doing: str, waited_s: float, deadline_s: float):
        pid = self._proc.pid
        self._drop(grace_s=0)  # alive but silent: nothing to wait for
        raise WorkerHung(f"the worker process (pid {pid}) sent nothing for {waited_s:.1f} s while {doing} "
                         f"(its deadline: {deadline_s:.1f} s; --worker-timeout sets the least) and was killed")

    def _drop(self, *, grace_s: float) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        self._graph_open = False
        if proc is None:
            return
        proc.join(grace_s)
        if proc.is_alive():
            proc.terminate()
            proc.join(STOP_TIMEOUT_S)
        if proc.is_alive():
            proc.kill()
            proc.join()
        conn.close()

    def close(self) -> None:
        """Ask the worker to leave; terminate it if it does not."""
        if self._proc is None:
            return
        try:
            self._conn.send(("stop", None))
        except (BrokenPipeError, ConnectionError, EOFError):
            pass
        self._drop(grace_s=STOP_TIMEOUT_S)

    def abort(self) -> None:
        """End the worker now (the campaign process is leaving on an error or an interrupt)."""
        self._drop(grace_s=0)


__all__ = ["InputSource", "WorkerSetup", "WorkerPass", "WorkerCrash", "WorkerHung", "UnitHandlers", "worker_main",
           "STOP_TIMEOUT_S", "SETUP_TIMEOUT_S", "SILENCE_MULTIPLE"]
