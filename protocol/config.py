"""What a campaign measures and with which protocol parameters (docs/protocol.md §3, §4, §5).

``GraphInput`` is the shape the runner reads inputs in (``bench.prepare.PreparedGate`` has it);
``CampaignConfig`` checks the parameters and is recorded in campaign.json (``--resume`` requires
them unchanged).
"""

from __future__ import annotations

import math
import numbers

from dataclasses import asdict, dataclass, field

from .errors import UsageError
from .sides import Side


def check_seed(seed: int) -> None:
    """The one rule for every command's ``--seed``: NumPy's generators take no negative seed, so
    it is refused before anything is read or measured (not as SeedSequence's traceback later)."""
    if seed < 0:
        raise UsageError(f"--seed {seed}: expected an integer >= 0")


def check_objectives_fit(objectives, count: int, holder: str) -> None:
    """``--objectives`` against the ``count`` weight columns that ``holder`` has (an objective is a
    column's number, from 0): a UsageError naming the first one beyond them. The one wording of
    this refusal: the runner's plan of each graph, and perf_ab engines and sweep (bench/options.py),
    whether the count is known before any record (the gates, drawn weights) or only once the graph
    is read (a file's own weights)."""
    for k in objectives:
        if not 0 <= k < count:
            raise UsageError(f"--objectives: objective {k} is outside [0, {count}): {holder} has {count} weight "
                             "column(s), numbered from 0")


#: What ``--adaptive`` judges (docs/protocol.md §3): ``process``, each worker process's own pairs
#: (the behaviour before issue 32, the default); ``cell``, the cell's hierarchical interval over its
#: processes and pairs, adding worker processes until it is narrow enough (protocol/adaptive.py).
ADAPTIVE_SCOPES = ("process", "cell")
#: The order in which a worker process makes the two sides' results in a cell (their workspaces are
#: allocated by their first update, the guard, in the same order; docs/protocol.md §2.5,
#: protocol/placement.py): ``fixed``, A then B (the behaviour before issue 32, the default);
#: ``alternate``, A first in even workers and B first in odd ones; ``random``, drawn per worker
#: from the seed.
ALLOC_ORDERS = ("fixed", "alternate", "random")


#: Where the A/A control runs (docs/protocol.md §7): ``first``, one control cell on the first graph's
#: first batch and objective (the behaviour before issue 32 item 4, the default); ``every-gate``, one
#: on every graph's first batch and objective.
CONTROL_SCOPES = ("first", "every-gate")
#: Worker processes a cell needs, by default, before the cell's adaptive stop may judge it precise:
#: the interval of two processes is narrow whenever the two happen to agree.
MIN_JUDGED_PROCESSES = 3
#: The fewest untimed warm-up rounds per side a campaign takes (``--warmup``): CampaignConfig checks
#: it for library callers, and ``perf_ab.py engines`` / ``sweep`` refuse less while their
#: arguments are read (bench/options.add_warmup_option).
MIN_WARMUP = 2
#: The named presets of ``perf_ab.py engines --protocol`` (docs/protocol.md §2.5): the parameters
#: each one sets, by CampaignConfig field (which is also the option's argparse dest), wherever the
#: command line does not give that option itself. ``standard`` sets nothing (every option keeps its
#: own default: the behaviour before the presets). ``precise`` is issue 32's candidate for make
#: bench's default, each value from the A/A measurements on the H200 that docs/protocol.md §2.5
#: cites; --l2-flush is left out on purpose (narrower, but it showed a false 0.9 % difference).
PROTOCOLS = {
    "standard": {},
    "precise": {"processes": 6, "alloc_order": "alternate", "adaptive": True, "adaptive_scope": "cell",
                "precision": 0.01, "control_scope": "every-gate", "planted_check": 1.0},
}
#: The whole-number parameters (None allowed where the field's default is None) and the real-number
#: ones: a library caller's ``rounds=7.5`` or ``seed="1"`` is refused naming the option, not
#: recorded in a campaign.json its own readers then call damaged, or met as a TypeError mid-check.
INTEGER_FIELDS = ("rounds", "warmup", "verify_rounds", "processes", "max_rounds", "max_processes", "min_processes",
                  "max_rejects", "seed", "bootstrap_resamples", "discard_after_clock_change")
NUMBER_FIELDS = ("precision", "min_clock_fraction", "max_foreign_cpu", "planted_check", "worker_timeout")


def _option(name: str) -> str:
    """How the command line spells a parameter (``bootstrap_resamples`` has no option: its name)."""
    return name if name == "bootstrap_resamples" else "--" + name.replace("_", "-")


#: The default least time (seconds) a worker process may stay silent inside a unit (``--worker-timeout``).
WORKER_TIMEOUT_S = 300.0
#: The least time a worker may take to start (a new interpreter, its imports) and load a graph
#: before it is taken as hung (protocol/workers.py): a large graph is read from the cache and made
#: device-resident; a larger ``--worker-timeout`` raises it too.
SETUP_TIMEOUT_S = 600.0
#: While a unit runs, a worker may stay silent this many times the longest silence seen so far in
#: its pass (``--worker-timeout`` the floor): a slow round is slow every time, a hang is not.
SILENCE_MULTIPLE = 10.0

#: Parameters recorded only when they differ from this value (the behaviour before them).
OFF_BY_DEFAULT = {"alloc_order": "fixed", "l2_flush": False, "discard_after_clock_change": 0,
                  "control_scope": "first", "protocol": "standard"}


@dataclass
class BatchInput:
    name: str
    batch: object  # engines.Batch
    facts: dict = field(default_factory=dict)
    digest: str | None = None


@dataclass
class GraphInput:
    """What the runner measures on one graph; ``bench.prepare.PreparedGate`` has the same shape."""

    name: str
    origin: dict
    graph: object  # engines.Graph, pre-batch state
    source: int
    facts: dict
    trees: list  # [(distances, parents)] per objective, NumPy
    batches: dict  # name -> BatchInput (or bench.prepare.PreparedBatch)


@dataclass
class CampaignConfig:
    sides: tuple[Side, Side]
    graphs: list[str] | None = None  # recorded only; the inputs iterable decides what runs
    # what makes a user's graph file the graph measured (its origin less the path: SHA-256, format,
    # reader options, weights, source); recorded only, so that --resume refuses another file or option
    graph_file: dict | None = None
    batches: list[str] | None = None  # None: every batch of each graph
    objectives: list[int] | None = None  # None: every objective
    rounds: int = 21
    warmup: int = 2
    adaptive: bool = False
    precision: float = 0.01
    max_rounds: int | None = None  # default 4 x rounds (adaptive only)
    #: what --adaptive judges (ADAPTIVE_SCOPES); recorded only when "cell"
    adaptive_scope: str = "process"
    #: the most worker processes a cell may have with --adaptive-scope cell (default 4 x processes);
    #: recorded only then
    max_processes: int | None = None
    #: with --adaptive-scope cell: worker processes a cell needs before it may be judged precise
    #: (default MIN_JUDGED_PROCESSES, at most max_processes); recorded only then
    min_processes: int | None = None
    max_rejects: int | None = None  # default: rounds
    order: str = "abba"
    seed: int = 0
    min_clock_fraction: float = 0.9
    max_foreign_cpu: float = 1.0
    lock_clocks: str | None = None
    verify_host: bool = False
    verify_syncs: bool = False
    #: untimed CUPTI-counted rounds per side and cell, after the warm-up (with verify_syncs)
    verify_rounds: int = 1
    #: run the A/A control cell (side A against itself on the first graph, batch and objective)
    control: bool = True
    #: where the control runs (CONTROL_SCOPES): the first graph, or every graph; recorded only when
    #: every-gate
    control_scope: str = "first"
    bootstrap_resamples: int = 2000
    allow_dirty: bool = False
    #: worker processes per cell (docs/protocol.md §2): each measures ceil(rounds / processes) accepted
    #: pairs in a fresh process; the statistics resample processes, then pairs
    #: (docs/protocol.md §7). 1: the cell is measured in the campaign's own process, as before
    #: workers existed. perf_ab.py's default is 3.
    processes: int = 1
    #: a planted slowdown (a test hook, protocol/planted_delay.py): {"side", "label", "percent"};
    #: the side itself is wrapped in sides. Recorded only when set.
    planted_delay: dict | None = None
    #: the order the sides allocate in per worker process (ALLOC_ORDERS); recorded only when not fixed
    alloc_order: str = "fixed"
    #: flush the GPU's L2 before every round of a CUDA side (protocol/l2flush.py); recorded only when set
    l2_flush: bool = False
    #: discard this many rounds from each observed change of the SM clock between rounds (the round
    #: that shows it first; cell.CellRun._clock_settling); 0: none. Recorded only when set
    discard_after_clock_change: int = 0
    #: the planted checks (issue 32 item 4, protocol/planted_check.py): side A against itself with a
    #: delay of this many percent planted on side B, on the campaign's shortest and longest cell, once
    #: every cell has finished; None: none. Recorded only when set
    planted_check: float | None = None
    #: the --protocol preset the command line named (PROTOCOLS); the other fields hold the values it
    #: resolved to. Recorded only when not standard, and --resume requires it unchanged
    protocol: str = "standard"
    #: the least time (seconds) a worker process may stay silent while measuring a unit before it
    #: is taken as hung, killed and its unit recorded as crashed (protocol/workers.py: the deadline
    #: grows with the longest silence seen). Not a protocol parameter: not recorded, and --resume
    #: may change it
    worker_timeout: float = WORKER_TIMEOUT_S

    def __post_init__(self):
        self._check_types()
        if self.protocol not in PROTOCOLS:
            raise UsageError(f"--protocol {self.protocol!r}: expected one of {', '.join(PROTOCOLS)}")
        if self.rounds < 5:
            raise UsageError(f"--rounds {self.rounds}: at least 5 accepted rounds per side")
        if self.warmup < MIN_WARMUP:
            raise UsageError(f"--warmup {self.warmup}: at least {MIN_WARMUP} warm-up rounds per side")
        if self.verify_rounds < 1:
            raise UsageError(f"--verify-rounds {self.verify_rounds}: at least 1 verification round per side")
        if self.processes < 1:
            raise UsageError(f"--processes {self.processes}: at least 1 worker process")
        if self.rounds <= self.processes:
            raise UsageError(f"--processes {self.processes} needs --rounds above it (got {self.rounds}): every "
                             "worker process measures at least 2 accepted pairs")
        if self.alloc_order not in ALLOC_ORDERS:
            raise UsageError(f"--alloc-order {self.alloc_order!r}: expected one of {', '.join(ALLOC_ORDERS)}")
        if self.control_scope not in CONTROL_SCOPES:
            raise UsageError(f"--control {self.control_scope!r}: expected one of {', '.join(CONTROL_SCOPES)}")
        if self.control_scope != "first" and not self.control:
            raise UsageError(f"--control {self.control_scope} and --no-control contradict each other")
        if self.planted_check is not None:
            if not 0 <= self.planted_check <= 100:
                raise UsageError(f"--planted-check {self.planted_check:g}: the percentage must be in [0, 100]")
            if self.planted_delay is not None:
                raise UsageError("--planted-check and --plant-delay: a campaign planted in every cell is already "
                                 "a test of the statistics; plant one or the other")
        if self.discard_after_clock_change < 0:
            raise UsageError(f"--discard-after-clock-change {self.discard_after_clock_change}: expected a number "
                             "of rounds >= 0")
        if not 0 < self.worker_timeout < math.inf:
            raise UsageError(f"--worker-timeout {self.worker_timeout:g}: expected a number of seconds > 0")
        check_seed(self.seed)  # here, not after the rounds are measured
        from .stats import MIN_RESAMPLES  # the statistics own the bound (imported late: SciPy)

        if self.bootstrap_resamples < MIN_RESAMPLES:
            raise UsageError(f"bootstrap_resamples {self.bootstrap_resamples}: at least {MIN_RESAMPLES} "
                             "bootstrap resamples")
        if self.order not in ("abba", "random"):
            raise UsageError(f"--order {self.order!r}: expected abba or random")
        if self.max_rounds is None:
            self.max_rounds = 4 * self.rounds
        if self.max_rounds < self.rounds:
            raise UsageError(f"--max-rounds {self.max_rounds} is below --rounds {self.rounds}")
        if self.adaptive_scope not in ADAPTIVE_SCOPES:
            raise UsageError(f"--adaptive-scope {self.adaptive_scope!r}: expected one of {', '.join(ADAPTIVE_SCOPES)}")
        if self.adaptive_scope == "cell" and not self.adaptive:
            raise UsageError("--adaptive-scope cell needs --adaptive")
        if self.max_processes is not None and not self.cell_adaptive:
            raise UsageError(f"--max-processes {self.max_processes} needs --adaptive --adaptive-scope cell")
        if self.max_processes is None:
            self.max_processes = 4 * self.processes if self.cell_adaptive else self.processes
        if self.max_processes < self.processes:
            raise UsageError(f"--max-processes {self.max_processes} is below --processes {self.processes}")
        if self.min_processes is not None and not self.cell_adaptive:
            raise UsageError(f"--min-processes {self.min_processes} needs --adaptive --adaptive-scope cell")
        if self.min_processes is None:
            self.min_processes = min(MIN_JUDGED_PROCESSES, self.max_processes) if self.cell_adaptive else 1
        if self.min_processes < 1:
            raise UsageError(f"--min-processes {self.min_processes}: at least 1")
        if self.min_processes > self.max_processes:
            raise UsageError(f"--min-processes {self.min_processes} is above --max-processes {self.max_processes}: "
                             "no cell could be judged precise")
        if self.max_rejects is None:
            self.max_rejects = self.rounds
        if self.max_rejects < 0:
            raise UsageError("--max-rejects must be >= 0")
        if not 0 < self.precision < 1:
            raise UsageError(f"--precision {self.precision}: expected a fraction in (0, 1)")
        if not 0 < self.min_clock_fraction <= 1:
            raise UsageError(f"--min-clock-fraction {self.min_clock_fraction}: expected (0, 1]")
        # a negative (or NaN) limit would reject every round as contaminated, only after the
        # campaign has started: refuse it here, with the other arguments
        if not self.max_foreign_cpu >= 0 or math.isinf(self.max_foreign_cpu):
            raise UsageError(f"--max-foreign-cpu {self.max_foreign_cpu}: expected a number of CPU cores >= 0 "
                             "(the other processes' load a round may see; default 1.0)")

    def _check_types(self) -> None:
        """Whole numbers where the protocol counts (NumPy integers become Python ones, so that the
        record is JSON), real numbers where it measures; booleans are neither."""
        for name in INTEGER_FIELDS + NUMBER_FIELDS:
            value = getattr(self, name)
            if value is None and getattr(type(self), name, 0) is None:
                continue  # an optional parameter left to its default
            whole = name in INTEGER_FIELDS
            wanted = numbers.Integral if whole else numbers.Real
            if isinstance(value, bool) or not isinstance(value, wanted):
                raise UsageError(f"{_option(name)} {value!r}: expected {'an integer' if whole else 'a number'}")
            setattr(self, name, int(value) if whole else (value if type(value) in (int, float) else float(value)))
        # the selections: lists of names, and of objective numbers (a string is no list of names:
        # list("local10k") was eight one-letter batches; objectives=[1.5] was measured as objective 1)
        for name, whole in (("graphs", False), ("batches", False), ("objectives", True)):
            value = getattr(self, name)
            if value is None:
                continue
            wanted = "objective numbers" if whole else "names"
            if not isinstance(value, (list, tuple)):
                raise UsageError(f"--{name} {value!r}: expected a list of {wanted}")
            for item in value:
                if whole and (isinstance(item, bool) or not isinstance(item, numbers.Integral)):
                    raise UsageError(f"--{name}: {item!r} is not an objective number (an integer)")
                if not whole and not isinstance(item, str):
                    raise UsageError(f"--{name}: {item!r} is not a name")
            setattr(self, name, [int(item) for item in value] if whole else list(value))
        if self.lock_clocks is not None:
            if not isinstance(self.lock_clocks, str):  # lock_clocks=1500 was an AttributeError (.strip)
                raise UsageError(f"--lock-clocks {self.lock_clocks!r}: expected base, max, '<SM MHz>' or "
                                 "'<SM MHz>,<memory MHz>' (a string)")
            from .clocks import LockRequest

            LockRequest.parse(self.lock_clocks)  # its UsageError names what is wrong, before any work

    @property
    def cell_adaptive(self) -> bool:
        """--adaptive judges the cell's interval (protocol/adaptive.py), not each worker's."""
        return self.adaptive and self.adaptive_scope == "cell"

    @property
    def passes(self) -> int:
        """The most worker passes of the campaign: ``processes``, and with the cell's adaptive stop
        up to ``max_processes`` (the passes past ``processes`` measure only cells that want more)."""
        return self.max_processes if self.cell_adaptive else self.processes

    @property
    def rounds_per_process(self) -> int:
        """Accepted pairs each worker process measures: the --rounds target split over the workers,
        rounded up (so a cell never has fewer than --rounds pairs)."""
        return -(-self.rounds // self.processes)

    @property
    def max_rounds_per_process(self) -> int:
        """The adaptive limit of one worker process (``--max-rounds`` split the same way)."""
        return -(-self.max_rounds // self.processes)

    def parameters(self) -> dict:
        """The protocol parameters as recorded; --resume requires them unchanged."""
        p = asdict(self)
        p["sides"] = {"A": self.sides[0].label, "B": self.sides[1].label}
        p.pop("allow_dirty")
        p.pop("worker_timeout")  # how long to wait for a hung worker measures nothing
        if p["graph_file"] is None:  # campaigns of gates alone record no such field
            p.pop("graph_file")
        if p["planted_delay"] is None:  # nor do campaigns without a planted delay
            p.pop("planted_delay")
        if p["planted_check"] is None:  # nor campaigns without the planted checks
            p.pop("planted_check")
        if self.adaptive_scope == "process":  # nor do campaigns whose --adaptive (if any) judges each worker
            p.pop("adaptive_scope")
            p.pop("max_processes")
            p.pop("min_processes")
        # issue 32's options that remove or randomize a source of noise: recorded only when used, so
        # that campaigns recorded before them (and their resumes) keep their parameters
        for name, default in OFF_BY_DEFAULT.items():
            if p[name] == default:
                p.pop(name)
        return p


__all__ = ["WORKER_TIMEOUT_S", "SETUP_TIMEOUT_S", "SILENCE_MULTIPLE", "INTEGER_FIELDS", "NUMBER_FIELDS", "ADAPTIVE_SCOPES", "ALLOC_ORDERS", "CONTROL_SCOPES", "MIN_JUDGED_PROCESSES", "MIN_WARMUP", "OFF_BY_DEFAULT", "PROTOCOLS", "BatchInput", "GraphInput", "CampaignConfig",
           "check_seed", "check_objectives_fit"]
