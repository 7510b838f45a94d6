"""The operators device loop's wait for its read-ahead replay (ENGINES_OPERATORS_WAIT_READ_AHEAD,
issue 27; the GPU side is tests/gpu/test_operators_read_ahead.py) on the CPU: the switch's
spellings, prepare()'s reading of it for updates and compute() alike, and the readback model that
the sync checks compare host_syncs with (conformance.replay.device_loop_replays)."""

import pytest

from conformance import replay
from engines import errors
from engines.sssp.cuda import operators
from engines.sssp.plan import DEFAULT_PUSH_EXPANSION

from tests.switch_env import set_switch


class _Plan:
    push_expansion = DEFAULT_PUSH_EXPANSION
    batch_changes = 100


@pytest.mark.parametrize("value, wait", [(None, False), ("", False), ("1", True), (" ON ", True),
                                         ("0", False), ("off", False)])
def test_the_wait_is_off_unless_switched_on(monkeypatch, value, wait):
    monkeypatch.delenv(operators.CAPTURED_START_ENV, raising=False)
    set_switch(monkeypatch, operators.WAIT_READ_AHEAD_ENV, value)
    assert operators.wait_read_ahead_enabled() is wait
    for update in (True, False):
        assert operators.run_choice(_Plan(), update=update).wait_read_ahead is wait


def test_a_bad_value_is_refused_by_prepares_reading(monkeypatch):
    monkeypatch.setenv(operators.WAIT_READ_AHEAD_ENV, "later")
    with pytest.raises(errors.InvalidArgumentError, match=operators.WAIT_READ_AHEAD_ENV):
        operators.run_choice(_Plan(), update=False)


def test_the_choices_combine_and_keep_the_module(monkeypatch):
    monkeypatch.delenv(operators.CAPTURED_START_ENV, raising=False)
    monkeypatch.delenv(operators.WAIT_READ_AHEAD_ENV, raising=False)
    plain = operators.run_choice(_Plan())
    monkeypatch.setenv(operators.WAIT_READ_AHEAD_ENV, "1")
    monkeypatch.setenv(operators.CAPTURED_START_ENV, "1")
    both = operators.run_choice(_Plan())
    assert (both.captured_start, both.wait_read_ahead) == (True, True)
    assert (both.defines, both.chain_limits) == (plain.defines, plain.chain_limits)
    assert operators.run_choice(_Plan()) is both


@pytest.mark.parametrize("launches", [1, 4, 16, 17, 200, 3000])
def test_the_model_counts_one_readback_fewer_without_the_wait(monkeypatch, launches):
    monkeypatch.setenv(operators.WAIT_READ_AHEAD_ENV, "1")
    waited = replay.device_loop_replays(launches)
    monkeypatch.delenv(operators.WAIT_READ_AHEAD_ENV, raising=False)  # the default: no wait
    assert replay.device_loop_replays(launches) == waited - (1 if operators.READ_AHEAD else 0)
    covered, replays = 0, 0  # the replays that cover the launches, from replay_steps itself
    while covered < launches:
        covered += operators.replay_steps(replays)
        replays += 1
    assert replay.device_loop_replays(launches) == replays


def test_the_choice_is_kept_by_the_raw_values_and_parsed_once(monkeypatch):
    """A stream of updates asks the same question each time: the two switches are parsed for a
    value not seen yet only; a changed value is read at the next run, and a bad one is refused at
    every run (nothing invalid is kept)."""
    monkeypatch.delenv(operators.CAPTURED_START_ENV, raising=False)
    monkeypatch.setenv(operators.WAIT_READ_AHEAD_ENV, "0")
    operators._choices.clear()
    parsed = []
    real_flag = operators.switches.flag
    monkeypatch.setattr(operators.switches, "flag",
                        lambda name, default: parsed.append(name) or real_flag(name, default=default))
    first = operators.run_choice(_Plan())
    assert parsed and operators.run_choice(_Plan()) is first
    count = len(parsed)
    for _ in range(3):
        assert operators.run_choice(_Plan()) is first
    assert len(parsed) == count  # kept: no parse
    monkeypatch.setenv(operators.WAIT_READ_AHEAD_ENV, "1")
    assert operators.run_choice(_Plan()).wait_read_ahead is True
    monkeypatch.setenv(operators.WAIT_READ_AHEAD_ENV, "sometimes")
    for _ in range(2):
        with pytest.raises(errors.InvalidArgumentError, match=operators.WAIT_READ_AHEAD_ENV):
            operators.run_choice(_Plan())
