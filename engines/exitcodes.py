"""The exit status of every command of the project, in one table (docs/protocol.md §8).

``engines.cli``, ``python -m conformance`` (compare, golden), ``bench/perf_ab.py`` and its
subcommands, ``bench/engine_table.py``, ``bench/stream.py``, ``bench/has_gpu.py``,
``engines.sssp.cuda.compile_check``, the campaign's worker processes and the Makefile's
``.cache/bench-status`` all end with one of these numbers. ``protocol.exitcodes`` re-exports the
table (with the campaign's rule, :func:`protocol.exitcodes.campaign_exit_code`); the errors that
carry a status are in ``protocol.errors``. Standard library only: ``bench/has_gpu.py`` and the
Ctrl-C guard read it before the heavy imports.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    # a wrong answer or a failed check: trees or counters differ, a sync count over budget, a
    # digest mismatch or a corrupt corpus, a kernel that does not compile or spills; for
    # engines.cli any engine failure (out of memory included)
    CORRECTNESS = 1
    FAILURE = 1  # the same status, named for the commands whose 1 is "failed" rather than "wrong"
    USAGE = 2  # bad arguments, unreadable input, unknown gate name, no nvcc for compile_check
    # no CUDA GPU, no cooperative launch for fused, clock lock not permitted, a crashed worker
    # (or, for a worker process, the campaign process gone)
    ENVIRONMENT = 3
    TOO_NOISY = 4  # a cell had more rejections than --max-rejects
    NO_CORPUS = 77  # the golden corpus is missing: "skipped" in the automake/meson convention
    INTERRUPTED = 130  # 128 + SIGINT: Ctrl-C, as a shell reports it


__all__ = ["ExitCode"]
