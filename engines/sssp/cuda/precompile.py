"""Compile every module the CUDA engines may load, ahead of time and in parallel.

``python -m engines.sssp.cuda.precompile [--jobs N] [--device D]`` builds the device apply
(``engines/graph/device_apply.cu``) and every module variant of both engines (fused.VARIANTS,
operators.VARIANTS: 66 modules at 2a9e36e) into CuPy's on-disk cache (``CUPY_CACHE_DIR``), in
``--jobs`` processes at once. The engines compile a variant at its first use, one at a time; NVRTC
takes several seconds per module, so a fresh machine (or a change to ``kernels.cuh``, which every
module includes) otherwise spends minutes of its first runs compiling, one module after another: a
test suite, a campaign's first cell or a user's first update pays it. The cache key covers the full
source, the defines and the options (runtime.get_module), so what this writes is exactly what the
engines then read. Needs CuPy and a CUDA GPU (the modules are compiled for its architecture).
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ...errors import Error
from ...exitcodes import ExitCode

APPLY = "device_apply"
#: The device apply's one-block key sort (engines/graph/key_sort.py), the default sort of a small commit.
KEY_SORT = "apply_key_sort"
#: The graph's own modules (no variants), by label: the engines.graph module whose
#: ``load_module(device)`` builds each.
GRAPH_MODULES = {APPLY: "device_apply", KEY_SORT: "key_sort"}


def modules() -> list[tuple[str, tuple[str, ...]]]:
    """(engine, defines) of every module: the device apply and its key sort, then each engine's
    variants."""
    from . import ENGINES, _engine_module  # noqa: PLC0415 - NumPy and the engines only when asked

    variants = [(engine, tuple(v)) for engine in ENGINES for v in _engine_module(engine).VARIANTS]
    return [(label, ()) for label in GRAPH_MODULES] + variants


def compile_module(engine: str, defines: tuple[str, ...], device: int) -> float:
    """Compile (or find in CuPy's cache) one module on ``device``; its seconds."""
    start = time.perf_counter()
    if engine in GRAPH_MODULES:
        importlib.import_module(f"engines.graph.{GRAPH_MODULES[engine]}").load_module(device)
    else:
        from . import _engine_module  # noqa: PLC0415 - the package's one map of engine to module

        _engine_module(engine).load_module(device, defines)
    return time.perf_counter() - start


def _compile_item(item) -> float:
    engine, defines, device = item
    try:
        return compile_module(engine, defines, device)
    except Error as exc:  # the runtime's message names the engine, not the variant: add it
        raise Error(f"the {engine} module [{' '.join(defines) or 'default variant'}]: {exc}") from None


def default_jobs() -> int:
    # each process holds a CUDA context (a few hundred MiB of device memory) and one NVRTC run
    return max(1, min(16, (os.cpu_count() or 2) - 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=default_jobs(),
                        help="processes compiling at once (default: the cores less one, at most 16)")
    parser.add_argument("--device", type=int, default=0, help="the CUDA device (default 0)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    from .runtime import is_available  # noqa: PLC0415

    if not is_available():
        print("precompile: needs CuPy and a CUDA GPU (the modules are built for its architecture); "
              "none is usable here", file=sys.stderr)
        return ExitCode.ENVIRONMENT
    items = [(engine, defines, args.device) for engine, defines in modules()]
    start = time.perf_counter()
    # spawn: a forked child would inherit a parent's CUDA state it must not use
    pool = ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn"))
    try:
        seconds = list(pool.map(_compile_item, items))
    except Error as exc:  # a module that does not compile: its variant and NVRTC's log
        print(f"precompile: {exc}", file=sys.stderr)
        return ExitCode.FAILURE
    except BrokenProcessPool as exc:  # a worker died (killed for memory, a driver fault)
        print(f"precompile: a compiling process ended abruptly ({exc}); try fewer --jobs", file=sys.stderr)
        return ExitCode.ENVIRONMENT
    finally:  # after a failure, the modules not started yet are not compiled
        pool.shutdown(wait=True, cancel_futures=True)
    print(f"precompile: {len(items)} modules in {time.perf_counter() - start:.1f} s with "
          f"{args.jobs} processes (longest {max(seconds):.1f} s, all together {sum(seconds):.1f} s)")
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
