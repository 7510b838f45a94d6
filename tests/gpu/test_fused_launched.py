"""The fused update launched step by step from Python (``ENGINES_FUSED_CAPTURE=0``): the route a
failed capture falls back to for the rest of the process, and the one the switch keeps. Since the
captured launch became the default (the H200 at 1b2fb4c), ``test_fused.py`` runs captured; its
update tests run again here with the capture off, so both routes stay covered with the host
reference's bytes, statistics and error reports."""

from __future__ import annotations

import pytest

from engines.sssp.cuda import fused

from . import test_fused as F

pytestmark = pytest.mark.gpu

test_launched_three_batches = F.test_compute_then_three_batches
test_launched_several_results = F.test_several_fused_results_in_one_update
test_launched_parent_cycle = F.test_parent_cycle_poisons_then_the_device_recovers
test_launched_invalid_input = F.test_invalid_input_poisons_then_the_device_recovers
test_launched_steady_state_allocates_nothing = F.test_steady_state_update_allocates_nothing
test_launched_distance_only = F.test_distance_only_mode
test_launched_packing_boundary = F.test_packing_boundary
test_launched_edge_cases = F.test_edge_cases


@pytest.fixture(autouse=True)
def launched_updates(monkeypatch, cuda_device):
    """Every update of this module's tests launches from Python, and none is captured."""
    monkeypatch.setenv(fused.CAPTURE_ENV, "0")
    fused._capture_states.clear()
    yield
    made = sum(state.made for state in fused._capture_states.values())
    fused._capture_states.clear()
    assert made == 0, "an update was captured with ENGINES_FUSED_CAPTURE=0"
