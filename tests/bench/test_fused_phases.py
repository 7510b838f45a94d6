"""bench/fused_phases.py's refusals of a user's mistakes: one line (or argparse's usage error),
exit 2, before the GPU is asked for and before anything is loaded. A malformed --random-graph was
read only once the GPU was found (an ArgumentTypeError with a traceback), an unknown gate was
reported as a missing GPU. (Its summaries are tested in tests/engines/test_phase_clock.py.)"""

from __future__ import annotations

import pytest

from bench import fused_phases


@pytest.fixture
def gpu_here(monkeypatch):
    """A GPU as far as the command's check goes; run() loads the input and stops there."""
    from bench import has_gpu

    monkeypatch.setattr(has_gpu, "gpu_problem", lambda: None)
    monkeypatch.setattr(fused_phases, "run", lambda args: fused_phases.load(args) and 0)


@pytest.mark.parametrize("text, words", [("10,x", "expected N,M"), ("1,1", "at least 2 vertices"),
                                         ("4,100", "do not fit a simple graph")])
def test_a_malformed_random_graph_is_a_usage_error(gpu_here, text, words, capsys):
    assert fused_phases.main(["--random-graph", text]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_an_unknown_gate_is_named_before_the_gpu_is_asked(monkeypatch, capsys):
    from bench import has_gpu

    monkeypatch.setattr(has_gpu, "gpu_problem", lambda: "no CUDA driver (a test)")
    assert fused_phases.main(["--graph", "no-such-gate"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown gate name(s): no-such-gate" in err
