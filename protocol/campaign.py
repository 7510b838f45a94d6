"""A campaign from Python (docs/protocol.md): ``run_campaign(config, inputs, out) -> ExitCode``.

``bench/perf_ab.py engines`` parses its arguments, prepares the inputs and calls
:func:`run_campaign`; a library user does the same with plain arguments::

    config = campaign_config(sides="host,host", rounds=5, processes=1)
    code = run_campaign(config, [prepared_graph], "runs/mine")

:func:`campaign_config` builds the :class:`~protocol.config.CampaignConfig` with the command
line's defaults (``--processes 3``, the two CUDA engines as sides) and its checks (``UsageError``,
exit 2). ``inputs`` is an iterable of prepared graphs (``GraphInput``, ``bench.prepare.PreparedGate``,
what ``bench.prepare.prepare_gate`` and ``bench.graph_file.prepare_graph_file`` return) or of
:class:`PendingInput` (prepared when the campaign reaches it, one graph in memory at a time).

:func:`run_campaign` takes the exclusive lock of ``out``, refuses a folder that holds a campaign
unless ``resume`` or ``force`` says what to do with it, checks that the sides can run here, opens
the instruments (NVML), runs the cells, renders the report and prints the summary table; every
problem is printed on stderr (``prog: error: ...``) and returned as its exit status (docs/protocol.md
§8), an internal error (a bug) with its traceback.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable, Iterable

from engines.errors import os_error_text, print_internal_error

from .config import WORKER_TIMEOUT_S, CampaignConfig
from .errors import EnvironmentProblem, ProtocolError, UsageError
from .exitcodes import ExitCode
from .sides import DEFAULT_SIDES  # the two sides when none are named (re-exported)

#: How messages name the command (the command line's own name).
PROG = "perf_ab.py engines"


@dataclass
class PendingInput:
    """A graph prepared only when the campaign reaches it: ``prepare()`` returns its
    ``GraphInput`` (the progress display says ``preparing inputs of NAME`` first)."""

    name: str
    prepare: Callable[[], object]


def campaign_config(*, sides=DEFAULT_SIDES, graphs=None, graph_file=None, batches=None, objectives=None,
                    rounds: int = 21, warmup: int = 2, processes: int = 3, adaptive: bool = False,
                    precision: float = 0.01, max_rounds: int | None = None, adaptive_scope: str = "process",
                    max_processes: int | None = None, min_processes: int | None = None, max_rejects: int | None = None,
                    order: str = "abba", seed: int = 0, control: bool = True, min_clock_fraction: float = 0.9,
                    max_foreign_cpu: float = 1.0, lock_clocks: str | None = None, verify_host: bool = False,
                    verify_syncs: bool = False, allow_dirty: bool = False,
                    plant_delay: str | None = None, alloc_order: str = "fixed",
                    l2_flush: bool = False, discard_after_clock_change: int = 0,
                    control_scope: str = "first", planted_check: float | None = None,
                    protocol: str = "standard", worker_timeout: float = WORKER_TIMEOUT_S) -> CampaignConfig:
    """The campaign's parameters with ``perf_ab.py engines``' defaults and checks (UsageError).

    ``sides``: ``"A,B"`` as ``--sides`` spells it, or two ``protocol.sides.Side``; ``graphs``: the
    names measured (recorded only: the inputs decide what runs); ``graph_file``: a graph file's
    identity (``bench.graph_file.GraphFileSpec.identity()``, recorded so that a resume refuses
    another file); ``batches`` / ``objectives``: None for every one; ``plant_delay``:
    ``"SIDE:PERCENT"``, the test hook of ``--plant-delay``; ``protocol``: the ``--protocol`` preset's
    name, recorded only (the command line resolves its values into the other arguments:
    bench/engines_cmd.py). The rest as the options of the same name (docs/protocol.md §3-§7)."""
    from . import planted_delay
    from .sides import parse_sides

    sides = parse_sides(sides) if isinstance(sides, str) else tuple(sides)
    plant = planted_delay.parse(plant_delay, sides) if plant_delay else None
    sides = planted_delay.plant(sides, plant)
    return CampaignConfig(
        sides=sides,
        graphs=_as_list(graphs),
        graph_file=graph_file,
        batches=_as_list(batches),
        objectives=_as_list(objectives),  # CampaignConfig checks the items (int(1.5) was 1)
        rounds=rounds,
        warmup=warmup,
        processes=processes,
        adaptive=adaptive,
        precision=precision,
        max_rounds=max_rounds,
        adaptive_scope=adaptive_scope,
        max_processes=max_processes,
        min_processes=min_processes,
        max_rejects=max_rejects,
        order=order,
        seed=seed,
        min_clock_fraction=min_clock_fraction,
        max_foreign_cpu=max_foreign_cpu,
        lock_clocks=lock_clocks,
        verify_host=verify_host,
        verify_syncs=verify_syncs,
        control=control,
        control_scope=control_scope,
        allow_dirty=allow_dirty,
        planted_delay=None if plant is None else plant.record(),
        planted_check=None if planted_check is None else float(planted_check),
        alloc_order=alloc_order,
        l2_flush=l2_flush,
        discard_after_clock_change=discard_after_clock_change,
        protocol=protocol,
        worker_timeout=worker_timeout,
    )


def _as_list(values):
    """A selection as a list (any iterable but a string); anything else as it is, for
    CampaignConfig to refuse by name."""
    if values is None or isinstance(values, (str, bytes)):
        return values
    try:
        return list(values)
    except TypeError:
        return values


# -- the records folder -------------------------------------------------------------------------
def lock_out(out, *, prog: str = PROG):
    """The exclusive lock of ``out`` (protocol/outlock.py), taken before anything in it is read
    or written; an ``out`` that cannot hold it is refused first, by what is wrong with it."""
    from engines.io.outputs import output_problem

    from .outlock import OutLock

    problem = output_problem(out, folder=True)
    if problem:
        raise UsageError(f"--out: the records folder cannot be written: {problem}")
    lock = OutLock(out).acquire()
    if lock.stale_holder:
        print(f"{prog}: note: took over the stale lock of --out {out} ({lock.stale_holder}; that "
              "process ended without letting go of it)", file=sys.stderr)
    return lock


def check_out_writable(out) -> None:
    """UsageError when the records folder (or its rounds/ folder) cannot be written."""
    from engines.io.outputs import output_problem

    from .records import RecordStore

    # rounds/ too: a file of that name failed the first round, after campaign.json was written,
    # as "cannot write the records ... continue with --resume" (exit 3)
    problem = output_problem(out, folder=True) or output_problem(RecordStore(out).rounds_dir, folder=True)
    if problem:
        raise UsageError(f"--out: the records folder cannot be written: {problem}")


def check_out_records(out, *, resume: bool, force: bool) -> None:
    """Exit 2 before any work when ``out`` holds a campaign (or round files) and neither
    ``resume`` nor ``force`` says what to do with it (docs/protocol.md §9: no record is ever
    replaced silently), or (``resume``) when the records to continue are damaged."""
    from .records import RecordStore

    if resume and force:
        raise UsageError("--resume continues the campaign in --out, --force replaces it: pass one of them")
    store = RecordStore(out)
    if resume:
        store.check_resumable()
    elif not resume and not force and store.holds_records():
        raise UsageError(overwrite_refusal(store))


def overwrite_refusal(store) -> str:
    """Why a new campaign may not start in a folder that holds one, and the ways on."""
    where = f"--out {store.root}"
    try:
        campaign = store.read_campaign()
    except ProtocolError:  # damaged or only round files: still records, still someone's data
        return (f"{where} holds campaign records (round files or an unreadable campaign.json); a new campaign "
                "would delete them. Pass --force to replace them, or choose another --out folder")
    from .runner import TERMINAL_STATUSES

    cells = campaign["cells"].values()
    done = sum(1 for c in cells if c.get("status") in TERMINAL_STATUSES)
    state = "finished" if campaign.get("finished_utc") and done == len(cells) else "unfinished"
    what = (f"{where} holds the {state} campaign {campaign['campaign_id']} (started {campaign['started_utc']}, "
            f"{done} of {len(cells)} cells finished); a new campaign would delete its records. ")
    if state == "finished":
        return what + ("Pass --force to replace it, or choose another --out folder "
                       "(--resume would only re-render it)")
    return what + "Continue it with --resume, replace it with --force, or choose another --out folder"


# -- what the sides need ------------------------------------------------------------------------
def check_cuda(sides, *, kind: str = "side", missing: str = " (CuPy missing or no device)",
               hint: str = "measure the host reference with --sides host,host") -> int | None:
    """The CUDA device the campaign measures, or None; exit 3 problems before anything runs: no
    usable GPU, or a CUDA side whose engine cannot run here (``Side.unavailable_reason``, the one
    check of engines.config). ``kind``, ``missing`` and ``hint`` word the message for the command
    (``perf_ab.py sweep`` names engines, not sides)."""
    if not any(s.needs_cuda for s in sides):
        return None
    from engines.sssp import cuda

    if not cuda.is_available():
        raise EnvironmentProblem(
            f"a CUDA {kind} was requested ("
            + ", ".join(s.label for s in sides if s.needs_cuda)
            + f") but no CUDA GPU is usable here{missing}; {hint}"
        )
    device = cuda.current_device()
    for side in sides:
        if side.needs_cuda:
            reason = side.unavailable_reason(device)
            if reason is not None:
                raise EnvironmentProblem(f"{kind} {side.label}: {reason}")
    return device


def sync_counter_factory():
    """CUPTI's synchronization counter (``verify_syncs``); exit 3 without CUPTI."""
    from engines.errors import NotSupportedError
    from engines.sssp.cuda import syncs

    try:
        syncs.count_synchronizations()  # fails early (NotSupportedError) without CUPTI
    except NotSupportedError as exc:
        raise EnvironmentProblem(f"--verify-syncs needs CUPTI: {exc}") from exc
    return syncs.count_synchronizations


# -- failures -----------------------------------------------------------------------------------
def failure_exit_code(exc: BaseException, out, *, prog: str = PROG) -> ExitCode:
    """A campaign's failure printed on stderr as the command says it, and its exit status
    (docs/protocol.md §8); re-raises what is not a campaign's failure (SystemExit, ...)."""
    if isinstance(exc, ProtocolError):
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return ExitCode(int(exc.exit_code))
    if isinstance(exc, KeyboardInterrupt):
        print(f"{prog}: interrupted; the finished rounds are recorded, continue with --resume", file=sys.stderr)
        return ExitCode.INTERRUPTED
    if isinstance(exc, OSError):  # the environment: a record that could not be written (disk full, permissions)
        print(f"{prog}: error: cannot write the records: {os_error_text(exc)}; the rounds "
              f"written before this are kept in {out}; fix the cause and continue with --resume",
              file=sys.stderr)
        return ExitCode(int(EnvironmentProblem.exit_code))
    if isinstance(exc, MemoryError):
        print(f"{prog}: error: not enough host memory ({exc}); the rounds written before this "
              f"are kept in {out}; continue with --resume on a machine with more memory", file=sys.stderr)
        return ExitCode(int(EnvironmentProblem.exit_code))
    if isinstance(exc, Exception):  # a bug: keep what was measured, show the traceback, say how to go on
        print_internal_error(f"{prog}: ", exc, then=f". The rounds finished before it are recorded "
                                                    f"in {out}; once fixed, continue with --resume")
        return ExitCode.CORRECTNESS
    raise exc


# -- the campaign -------------------------------------------------------------------------------
def _inputs(inputs: Iterable, progress):
    for item in inputs:
        if isinstance(item, PendingInput):
            progress.preparing(item.name)
            yield item.prepare()
        else:
            yield item


def run_campaign(config: CampaignConfig, inputs: Iterable, out, *, resume: bool = False, force: bool = False,
                 progress: bool = True, reproduce_command: str | None = None,
                 input_loader: Callable | None = None, out_lock=None, prog: str = PROG,
                 floor=None) -> ExitCode:
    """Measure ``config``'s sides on ``inputs`` into the records folder ``out``; the exit status.

    ``resume``: continue the campaign recorded in ``out`` (same parameters and inputs);
    ``force``: replace it (without either a folder holding records is refused, exit 2).
    ``progress``: the live display (on a terminal) or one line per cell. ``reproduce_command``:
    the command line the report says reproduces the campaign. ``input_loader(name) -> GraphInput``:
    how a worker process loads a graph (picklable; default: the campaign process's input, pickled:
    for small inputs). ``out_lock``: the lock of ``out`` the caller already took (:func:`lock_out`)
    with ``out`` checked (:func:`check_out_records`); it stays the caller's to release.
    ``floor``: the floor model's constants measured on this GPU (``protocol.floor.FloorConstants``,
    bench/floor.py), recorded with the GPU (``gpu.floor``; a resumed campaign keeps the first
    session's) so that the report shows each fused cell's floor beside its time; None: no floor.
    """
    out = str(out)
    lock = None
    try:
        if out_lock is None:
            lock = lock_out(out, prog=prog)
            check_out_records(out, resume=resume, force=force)
        return _run(config, inputs, out, resume=resume, progress=progress, reproduce_command=reproduce_command,
                    input_loader=input_loader, prog=prog, floor=floor)
    except (Exception, KeyboardInterrupt) as exc:
        return failure_exit_code(exc, out, prog=prog)
    finally:
        if lock is not None:
            lock.release()


def _run(config: CampaignConfig, inputs: Iterable, out: str, *, resume: bool, progress: bool,
         reproduce_command: str | None, input_loader: Callable | None, prog: str,
         floor=None) -> ExitCode:
    from .console import CampaignProgress, print_summary_table
    from .environment import cuda_device_info, host_info
    from .clocks import LockRequest
    from .instruments import Instruments
    from .records import RecordStore
    from .report import render_report
    from .runner import CampaignRunner

    lock_request = LockRequest.parse(config.lock_clocks) if config.lock_clocks else None
    device = check_cuda(config.sides)
    sync_factory = sync_counter_factory() if config.verify_syncs else None
    store = RecordStore(out)
    pci = cuda_device_info(device)["pci_bus_id"] if device is not None else None
    with Instruments.open(gpu=device is not None, pci_bus_id=pci, own_context=device is not None,
                          lock_request=lock_request) as instruments:
        environment = {"host": host_info()}
        if device is not None:
            environment["gpu"] = {**cuda_device_info(device), "nvml": instruments.device}
            if floor is not None:  # the GPU's floor constants (a new campaign records them)
                environment["gpu"]["floor"] = floor.to_dict()
        with CampaignProgress(enabled=progress) as shown:
            runner = CampaignRunner(
                config, store, instruments, resume=resume, progress=shown,
                sync_counter_factory=sync_factory, reproduce_command=reproduce_command,
                environment=environment, input_loader=input_loader,
            )
            code = runner.run(_inputs(inputs, shown))
    report_path = render_report(store)
    print_summary_table(store)
    print(f"report: {report_path}", file=sys.stderr)
    if config.planted_delay:
        p = config.planted_delay
        print(f"{prog}: note: side {p['side']} ({p['label']}) carried a PLANTED delay of "
              f"{p['percent']:g} % (--plant-delay): a test of the statistics, not a measurement of the "
              "engines", file=sys.stderr)
    proof = (store.read_summary() or {}).get("proof")
    if proof is not None:  # --planted-check: the proof's line, passed or not (never the exit status)
        print(f"{prog}: planted checks ({proof['percent']:g} %): {'passed' if proof['passed'] else 'PROOF FAILED'}: "
              f"{proof['detail']}", file=sys.stderr)
    if code == ExitCode.TOO_NOISY:
        from .rejections import too_noisy_explanation

        for line in too_noisy_explanation(store.read_summary(), config.parameters()):
            print(f"{prog}: exit 4: {line}", file=sys.stderr)
    return code


__all__ = ["DEFAULT_SIDES", "PendingInput", "campaign_config", "run_campaign", "lock_out", "check_out_writable",
           "check_out_records", "overwrite_refusal", "check_cuda", "sync_counter_factory", "failure_exit_code"]
