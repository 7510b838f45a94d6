"""The CUDA backend of ``engines.sssp``: what the dispatch (``engines.sssp.api``) calls.

Two engines share the workspace, the device graph, the stream and the synchronization helper of
this package: the fused engine (one persistent cooperative kernel, ``fused.py``) and the operators
engine (one kernel per phase and a host loop, ``operators.py``). CuPy is imported lazily: this
package imports on machines without CuPy, and ``is_available()`` is then False.

Each engine module (``fused``, ``operators``) provides the same four functions:

- ``load_module(device, defines)``: compile (or fetch from the cache) a variant of the engine's
  module on ``device``;
- ``run_choice(plan, update) -> variants.RunChoice``: the run's switches, read once (``prepare``
  below takes it and the dispatch hands it to the run);
- ``update(graph, distances, parents, plan, changes, device, loop, choice=None) -> EngineReport``;
- ``compute(graph, plan, device, loop, choice=None) -> (distances, parents, EngineReport)``;

``loop`` is ``Options.operators_loop``: the operators engine's loop mode, which the fused engine
ignores (one signature, so the dispatch below has no case per engine). ``choice`` None reads the
switches again (a direct call).
"""

from __future__ import annotations

from ...errors import NotSupportedError
from ..options import CUDA_ENGINES
from . import runtime
from .push import push_profile  # the near-list lengths of a result's last run (NumPy only)
from .runtime import current_device, is_available, without_cooperative_launch

ENGINES = ("fused", "operators")
ENGINE_OPTIONS = CUDA_ENGINES  # Options.cuda_engine's values, owned by options.py


_engine_modules: dict = {}  # engine -> its module, once imported (an import statement costs ~1 µs)


def _engine_module(engine: str):
    module = _engine_modules.get(engine)
    if module is not None:
        return module
    if engine == "fused":
        from . import fused as module
    elif engine == "operators":
        from . import operators as module
    else:
        raise NotSupportedError(f"unknown CUDA engine {engine!r}; expected one of {', '.join(ENGINES)}")
    _engine_modules[engine] = module
    return module


def fused_unavailable_reason(device: int) -> str | None:
    """Why the fused engine cannot run on ``device`` (docs/algorithm.md §10.1), or None when it can.

    Compiles the fused module (CudaError on failure) unless cooperative launch is missing or
    hidden by the test hook.
    """
    if not runtime.supports_cooperative_launch(device):
        if runtime.cooperative_launch_disabled():
            return "cooperative launch is disabled (test hook or ENGINES_NO_COOPERATIVE_LAUNCH)"
        return f"device {device} does not support cooperative launch"
    if _engine_module("fused").max_blocks(device) < 1:
        return "the persistent kernel does not fit on an SM"
    return None


def select_engine(option: str, device: int) -> str:
    """``options.cuda_engine`` -> "fused" | "operators" (algorithm.md §10.1), before the commit."""
    if option not in ENGINE_OPTIONS:
        raise NotSupportedError(
            f"unknown cuda_engine {option!r}; expected one of {', '.join(ENGINE_OPTIONS)}"
        )
    if option == "operators":
        return "operators"
    reason = fused_unavailable_reason(device)
    if reason is None:
        return "fused"
    if option == "automatic":
        return "operators"
    raise NotSupportedError(
        f'cuda_engine="fused" cannot run on device {device}: {reason}; use cuda_engine="automatic" '
        f'or cuda_engine="operators", or backend="host"'
    )


def stream(device: int):
    """The one stream every run on ``device`` uses."""
    return runtime.stream(device)


def prepare(graph, plan, engine: str, device: int, num_changes: int, update: bool = True):
    """Before the commit (algorithm.md §8.2 step 6): read the run's switches once
    (``variants.RunChoice``, returned: pass it to ``update``/``compute``), compile the module
    variant it names and reserve the workspace for ``plan.num_vertices`` vertices and
    ``num_changes`` changes. CudaError / OutOfMemoryError. (The device graph reserves what the
    commit needs in ``Graph.reserve_commit``.)"""
    from . import workspace

    module = _engine_module(engine)
    choice = module.run_choice(plan, update)
    module.load_module(device, choice.defines)  # the variant the run will load
    s = runtime.stream(device)
    ws = workspace.get(device, graph.vertex_dtype)
    with ws.lock:
        ws.reserve(int(plan.num_vertices), max(int(num_changes), 1), s)
    return choice


def changes_for(commit, objective: int):
    """The device change lists of one objective for a CUDA engine (built by the device apply)."""
    from ...graph.device_apply import DeviceChangeLists

    return DeviceChangeLists(commit.pending, objective)


def device_bytes(graph, *results) -> int:
    """Device memory a graph and its CUDA results hold (buffer sets, apply scratch, trees)."""
    total = graph.device_bytes()
    for r in results:
        if r.backend == "cuda":
            d, p = r._d, r._p
            total += int(d.nbytes) + int(p.nbytes)
    return total


def update(graph, distances, parents, plan, changes, engine: str, device: int, *,
           operators_loop: str, choice=None):
    """Run ``engine`` on the device arrays in place; returns an ``EngineReport``. ``choice``:
    what ``prepare`` returned (None: the switches are read again)."""
    return _engine_module(engine).update(graph, distances, parents, plan, changes, device, loop=operators_loop,
                                         choice=choice)


def compute(graph, plan, engine: str, device: int, *, operators_loop: str, choice=None):
    """A tree from scratch with ``engine``: (distances cupy int64, parents cupy, EngineReport).
    ``choice``: what ``prepare`` returned (None: the switches are read again)."""
    return _engine_module(engine).compute(graph, plan, device, loop=operators_loop, choice=choice)


__all__ = [
    "ENGINES",
    "push_profile",
    "compute",
    "current_device",
    "fused_unavailable_reason",
    "is_available",
    "changes_for",
    "device_bytes",
    "prepare",
    "select_engine",
    "stream",
    "update",
    "without_cooperative_launch",
]
