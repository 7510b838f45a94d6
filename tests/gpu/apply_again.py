"""The device-graph tests that each switch of the device apply runs again under its own fixture
(test_touched_scan.py, test_parallel_sides.py, test_mapped_records.py, test_key_sort.py): one list of them, and one
rule for those whose commits come from update().

A module binds ``TESTS`` to names of its own (``test_<switch>_random_chains``, ...), in this
order, and its autouse fixture sets the switch for every commit they make, under both launches of
the apply; ``skip_python_launch`` leaves the "python" parameter out for the tests whose commits
come from update(), which names its own launch (``Options.update_launch``, "graph" by default):
the apply's default launch does not reach them, so they run once.
"""

from __future__ import annotations

import pytest

from . import test_captured_apply as C
from . import test_device_graph as D

#: random chains, the golden cases, the real graphs' 1 % batches, update() chains through both CUDA
#: engines, update() chains mixing host and CUDA results
TESTS = (
    D.test_random_chains_device_apply_equals_host_apply,
    D.test_golden_cases_device_apply_equals_host_apply,
    D.test_real_graph_one_percent_batches,
    C.test_update_chains_with_graph_launch_equal_the_host,
    D.test_update_chain_mixing_host_and_cuda_results,
)
#: Those of TESTS whose commits come from update().
UPDATE_TESTS = frozenset(TESTS[3:])


def skip_python_launch(request, launch: str, *more) -> None:
    """Skip the apply's "python" launch for a test whose commits come from update() (one of
    UPDATE_TESTS) or that has a launch of its own (one of ``more``, a module's own tests)."""
    if launch == "python" and (request.function in UPDATE_TESTS or request.function in more):
        pytest.skip('a launch of its own: the "graph" parameters run this test')
