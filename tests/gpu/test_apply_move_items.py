"""apply_move with four entries a thread (``ENGINES_APPLY_MOVE_ITEMS=4``, device_apply.cu
SSSP_MOVE_ITEMS): the graph a commit leaves must be the host twin's byte for byte. The device-graph
tests (random chains of every shape and both offset types, the golden corpus, the real graphs,
update() chains through both CUDA engines) run again with the switch on, under both launches of
the apply (entry counts that are and are not multiples of the grid's four strides, rows that
move and rows that stay); every plan is recorded and must have passed four to both sides' moves.
"""

from __future__ import annotations

import pytest

from engines.graph import device_apply

from . import apply_again as A
from . import ops_support as S

pytestmark = S.GPU

(test_move_items_random_chains, test_move_items_golden_cases, test_move_items_real_graphs,
 test_move_items_update_chains, test_move_items_mixed_results) = A.TESTS

#: Per plan made during a test: the entries per thread each apply_move step takes.
_items: list = []


def _move_items(steps) -> list[int]:
    """apply_move's last argument in each of a plan's steps that has it (the only kernel whose
    grid is sized by the old entry count: its arguments end with the new set's stride and items)."""
    module = device_apply.load_module(0)
    import numpy as np

    moves = {id(module.functions(np.int32, offset)["apply_move"]) for offset in (np.int32, np.int64)}
    return [int(step[3][-1]) for step in steps if step[0] == "kernel" and id(step[1]) in moves]


@pytest.fixture(autouse=True, params=["python", "graph"])
def four_items(request, monkeypatch):
    A.skip_python_launch(request, request.param)
    monkeypatch.setenv(device_apply.MOVE_ITEMS_ENV, "4")
    _items.clear()
    with S.recording_plans(monkeypatch, request.param, lambda steps: _items.append(_move_items(steps))):
        yield request.param
    assert _items and all(items == [4, 4] for items in _items), _items
