"""One engine configuration (issue 30 item 1): which engine runs compute() and update(), spelled once.

    host                      the host reference (NumPy / Numba)
    cuda                      CUDA, the engine the device picks (cuda_engine="automatic"); also cuda:automatic
    cuda:fused                the fused persistent kernel
    cuda:operators            the operators engine, its default loop (Options.operators_loop)
    cuda:operators-host       the operators engine with its loop pinned: -host or -device

A CUDA configuration may pin options with ``+`` suffixes, each at most once and in any order:
the push expansion of both engines (``+vertex``, ``+group``, ``+batched``:
``Options.push_expansion``) and how an update enqueues its device apply (``+graph``, ``+python``:
``Options.update_launch``). Without a suffix the library's default runs. ``label`` is the canonical spelling (the colon form, suffixes in
that order: ``cuda:operators-host+group+graph``).

:meth:`EngineConfig.parse` also accepts, **for one release only** (deprecated by issue 30), the
dash form the golden replay and asv used: ``cuda-fused``, ``cuda-operators-host``,
``cuda-fused-group``, ``cuda-operators-host-group``, ``cuda-fused-graph``, ``cuda-automatic`` ...
(the options as further dash-separated words). It parses to the same configuration, whose
``label`` is the colon form.

:meth:`EngineConfig.unavailable_reason` is the one answer to "can it run here?" (no CuPy or no
GPU, a fused engine without cooperative launch); :attr:`EngineConfig.options` the ``Options``
overrides that select the engine, for ``compute()``, ``Result.from_arrays`` and ``set_options``.
Both CUDA engine modules take the same arguments, so nothing else needs to know the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InvalidArgumentError

from .sssp.plan import PUSH_EXPANSIONS  # pinned as +<expansion> (Options.push_expansion)
from .sssp.options import CUDA_ENGINES, OPERATORS_LOOPS, UPDATE_LAUNCHES, Options

BACKENDS = ("host", "cuda")
# CUDA_ENGINES: Options.cuda_engine ("automatic" is spelled plain ``cuda``); OPERATORS_LOOPS:
# Options.operators_loop, pinned as ``cuda:operators-<mode>``; UPDATE_LAUNCHES:
# Options.update_launch, pinned as ``+<launch>``. The suffix words must not overlap:
assert not set(PUSH_EXPANSIONS) & set(UPDATE_LAUNCHES)

SPELLINGS = ("host", "cuda", "cuda:fused", "cuda:operators", "cuda:operators-host",
             "cuda:operators-device", "cuda:automatic")


class EngineConfigError(InvalidArgumentError):
    """An engine configuration that does not parse (a usage error for the commands)."""


@dataclass(frozen=True)
class EngineConfig:
    """An engine configuration: the backend, the CUDA engine option and the options it pins
    (None: the library's default)."""

    backend: str = "host"  # "host" | "cuda"
    cuda_engine: str = "automatic"  # "automatic" | "fused" | "operators"
    operators_loop: str | None = None  # pinned Options.operators_loop (operators only)
    push_expansion: str | None = None  # pinned Options.push_expansion (CUDA only)
    update_launch: str | None = None  # pinned Options.update_launch (CUDA only)

    def __post_init__(self):
        problem = None
        if self.backend not in BACKENDS:
            problem = f"backend {self.backend!r} (expected host or cuda)"
        elif self.cuda_engine not in CUDA_ENGINES:
            problem = f"cuda_engine {self.cuda_engine!r}"
        elif self.backend == "host" and (self.cuda_engine != "automatic" or self.pinned):
            problem = "the host backend takes no CUDA options"
        elif self.operators_loop is not None and (self.cuda_engine != "operators"
                                                  or self.operators_loop not in OPERATORS_LOOPS):
            problem = f"operators_loop {self.operators_loop!r} (only cuda:operators-host or -device)"
        elif self.push_expansion is not None and self.push_expansion not in PUSH_EXPANSIONS:
            problem = f"push_expansion {self.push_expansion!r}"
        elif self.update_launch is not None and self.update_launch not in UPDATE_LAUNCHES:
            problem = f"update_launch {self.update_launch!r}"
        if problem:
            raise EngineConfigError(f"invalid engine configuration: {problem}")

    # -- spelling ---------------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> EngineConfig:
        """``"cuda:operators-host+group"`` -> EngineConfig; EngineConfigError when it does not parse.
        Case-insensitive; the deprecated dash form (``cuda-fused``) is accepted for one release."""
        if text is not None and not isinstance(text, str):  # .strip() raised a bare AttributeError
            raise EngineConfigError(f"unknown engine configuration {text!r}: not text; expected one of "
                                    f"{', '.join(SPELLINGS)}")
        spelled = (text or "").strip().lower()
        head, plus, suffix = spelled.partition("+")
        # DEPRECATED (issue 30, accepted for one release): the dash form of the golden replay and
        # asv, "cuda-fused", "cuda-operators-host-group", "cuda-fused-graph": rewritten to the colon
        # form, options as suffixes. Remove this branch in the release after.
        if head.startswith("cuda-"):
            words = head[len("cuda-"):].split("-")
            engine, rest = words[0], words[1:]
            if engine == "operators" and rest and rest[0] in OPERATORS_LOOPS:
                engine, rest = f"operators-{rest[0]}", rest[1:]
            head = f"cuda:{engine}"
            suffix = "+".join(rest + ([suffix] if plus else []))
            plus = plus or bool(rest)
        try:
            return cls._parse_colon(head, suffix.split("+") if plus else [])
        except EngineConfigError as exc:
            raise EngineConfigError(f"unknown engine configuration {text!r}: {exc}; expected "
                                    f"{', '.join(SPELLINGS)}, a CUDA one optionally with "
                                    f"+{' / +'.join(PUSH_EXPANSIONS)} (push expansion) and "
                                    f"+{' / +'.join(UPDATE_LAUNCHES)} (update launch)") from None

    @classmethod
    def _parse_colon(cls, head: str, suffixes: list[str]) -> EngineConfig:
        if head == "host":
            if suffixes:
                raise EngineConfigError("the host reference takes no + options")
            return cls("host")
        if head == "cuda":
            engine, loop = "automatic", None
        elif head.startswith("cuda:"):
            engine, _, loop = head[len("cuda:"):].partition("-")
            loop = loop or None
            if engine not in CUDA_ENGINES or (loop is not None and engine != "operators"):
                raise EngineConfigError(f"no CUDA engine {head[len('cuda:'):]!r}")
            if loop is not None and loop not in OPERATORS_LOOPS:
                raise EngineConfigError(f"no operators loop {loop!r}")
        else:
            raise EngineConfigError("not host or cuda")
        pinned = {}
        for word in suffixes:
            key = ("push_expansion" if word in PUSH_EXPANSIONS
                   else "update_launch" if word in UPDATE_LAUNCHES else None)
            if key is None:
                raise EngineConfigError(f"unknown option +{word}")
            if key in pinned:
                raise EngineConfigError(f"+{pinned[key]} and +{word} both pin {key}")
            pinned[key] = word
        return cls("cuda", engine, loop, **pinned)

    @property
    def pinned(self) -> bool:
        return any(v is not None for v in (self.operators_loop, self.push_expansion, self.update_launch))

    @property
    def short_name(self) -> str:
        """The engine's name in report columns: ``host``, ``fused``, ``operators``, ``automatic``,
        ``operators-host``, ``fused+group`` ..."""
        if self.backend == "host":
            return "host"
        name = self.cuda_engine if self.operators_loop is None else f"{self.cuda_engine}-{self.operators_loop}"
        return name + "".join(f"+{v}" for v in (self.push_expansion, self.update_launch) if v is not None)

    @property
    def label(self) -> str:
        """The canonical spelling: ``host``, ``cuda``, ``cuda:fused``, ``cuda:operators-host+group`` ..."""
        if self.backend == "host":
            return "host"
        if self.cuda_engine == "automatic":
            return "cuda" + self.short_name[len("automatic"):]
        return f"cuda:{self.short_name}"

    def __str__(self) -> str:
        return self.label

    # -- what it selects ----------------------------------------------------------------------------
    @property
    def needs_cuda(self) -> bool:
        return self.backend == "cuda"

    @property
    def expected_engine(self) -> str | None:
        """The ``Stats.engine_used`` a run reports: host, fused, operators; None for automatic."""
        if self.backend == "host":
            return "host"
        return None if self.cuda_engine == "automatic" else self.cuda_engine

    @property
    def effective_operators_loop(self) -> str:
        """The operators loop that runs: the pinned one, else the ``Options`` default."""
        return self.operators_loop if self.operators_loop is not None else Options().operators_loop

    @property
    def options(self) -> dict:
        """The ``Options`` overrides that select this configuration's engine (``cuda_engine`` and
        whatever it pins), for ``compute()``, ``Result.from_arrays`` and ``Result.set_options``."""
        options = {"cuda_engine": self.cuda_engine}
        for key in ("operators_loop", "push_expansion", "update_launch"):
            value = getattr(self, key)
            if value is not None:
                options[key] = value
        return options

    @property
    def arguments(self) -> dict:
        """``backend`` and :attr:`options`: the keyword arguments of ``compute()`` / ``from_arrays``."""
        return {"backend": self.backend, **self.options}

    # -- can it run here? ---------------------------------------------------------------------------
    def unavailable_reason(self, device: int | None = None) -> str | None:
        """Why this configuration cannot run here (on ``device``, default the current one), or None.

        The host reference always runs. A CUDA one needs CuPy and a usable GPU, and the engine
        ``select_engine`` accepts there (the fused engine needs cooperative launch and a persistent
        kernel that fits; compiling the module may fail too)."""
        if self.backend == "host":
            return None
        from .sssp import backends

        if not backends.cuda_available():
            return f"{self.label} needs CuPy and a CUDA GPU, and none is usable here"
        from .errors import Error
        from .sssp import cuda

        where = cuda.current_device() if device is None else int(device)
        try:
            cuda.select_engine(self.cuda_engine, where)
        except Error as exc:
            return f"{self.label} cannot run on this GPU: {exc}"
        return None

    # -- running it ---------------------------------------------------------------------------------
    def compute(self, graph, source: int, **options):
        """``sssp.compute`` on this configuration (``options``: further Options, e.g. objective)."""
        from . import sssp

        return sssp.compute(graph, source, **{**self.arguments, **options})

    def from_arrays(self, graph, source: int, distances, parents, **keywords):
        """``sssp.Result.from_arrays`` on this configuration (a result whose update() runs it)."""
        from . import sssp

        return sssp.Result.from_arrays(graph, source, distances, parents, **{**self.arguments, **keywords})

    @staticmethod
    def update(graph, batch, result, **keywords):
        """``sssp.update``: a result made by :meth:`compute` or :meth:`from_arrays` carries its
        configuration in its options."""
        from . import sssp

        return sssp.update(graph, batch, result, **keywords)


def parse_engine_config(text: str) -> EngineConfig:
    return EngineConfig.parse(text)


def unavailable_reason(configs, device: int | None = None) -> str | None:
    """The first reason among ``configs`` (EngineConfig or text) why one cannot run here, or None."""
    for config in configs:
        config = config if isinstance(config, EngineConfig) else EngineConfig.parse(config)
        reason = config.unavailable_reason(device)
        if reason:
            return reason
    return None


__all__ = ["EngineConfig", "EngineConfigError", "parse_engine_config", "unavailable_reason",
           "CUDA_ENGINES", "OPERATORS_LOOPS", "PUSH_EXPANSIONS", "UPDATE_LAUNCHES"]
