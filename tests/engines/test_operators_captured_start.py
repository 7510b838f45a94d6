"""The operators engine's captured start on the CPU (ENGINES_OPERATORS_CAPTURED_START, issue 27;
the GPU side is tests/gpu/test_operators_captured_start.py): the switch's spellings, and the
update's two generations, taken together before its captured prologue replays
(Workspace.next_generations, the workspace's own 2^30 rule, algorithm.md §5.1): the
invalidation's generation never predates a stamp restart that the loop's generation caused, and
one generation follows the rule as before."""

import pytest

from engines import errors
from engines.sssp.cuda import operators, workspace


class _Counter:
    """The generation state of a workspace, with the real rule (Workspace.next_generations, which
    the operators update asks for two) and a stamp restart that only records that it happened
    (no device)."""

    next_generation = workspace.Workspace.next_generation
    next_generations = workspace.Workspace.next_generations

    def __init__(self, generation: int):
        self.generation = generation
        self.restarts = 0

    def reset_stamps(self, stream, *, last_used: int) -> None:
        self.restarts += 1
        self.generation = last_used


@pytest.mark.parametrize("start, expected, restarts", [
    (0, (1, 2), 0),
    (41, (42, 43), 0),
    (workspace.GENERATION_LIMIT - 1, (workspace.GENERATION_LIMIT, workspace.GENERATION_LIMIT + 1), 0),
    # the first generation restarts the stamps: both after the restart
    (workspace.GENERATION_LIMIT + 1, (1, 2), 1),
    # the second would restart them after the first was taken: both taken again after it
    (workspace.GENERATION_LIMIT, (1, 2), 1),
])
def test_both_generations_follow_any_restart(start, expected, restarts):
    counter = _Counter(start)
    first = counter.next_generations(None, 2)
    assert (first, first + 1) == expected
    assert counter.restarts == restarts
    assert counter.generation == expected[1]  # the next run continues above both


def test_the_generations_are_increasing_over_many_updates_across_the_limit():
    counter = _Counter(workspace.GENERATION_LIMIT - 7)
    seen = []
    for _ in range(10):
        first = counter.next_generations(None, 2)
        assert counter.generation == first + 1  # both taken
        seen.append(first)
    restart = next(i for i in range(1, 10) if seen[i] < seen[i - 1])
    assert seen[restart] == 1 and counter.restarts == 1
    assert all(b > a for a, b in zip(seen[restart:], seen[restart + 1:]))


@pytest.mark.parametrize("start", [0, 5, workspace.GENERATION_LIMIT - 1, workspace.GENERATION_LIMIT,
                                   workspace.GENERATION_LIMIT + 1])
def test_one_generation_follows_the_same_rule(start):
    """next_generation is next_generations of one: the 2^30 rule as before (a restart only once
    the counter passed GENERATION_LIMIT)."""
    counter = _Counter(start)
    expected = 1 if start > workspace.GENERATION_LIMIT else start + 1
    assert counter.next_generation(None) == expected == counter.generation
    assert counter.restarts == (1 if start > workspace.GENERATION_LIMIT else 0)


def test_the_run_choice_carries_the_switch_for_updates_only(monkeypatch):
    """prepare()'s reading (operators.run_choice) decides the captured start, before the commit:
    an update's choice carries it when the switch is on, compute()'s never, and a bad value is
    refused there."""
    from engines.sssp.plan import DEFAULT_PUSH_EXPANSION

    class Plan:
        push_expansion = DEFAULT_PUSH_EXPANSION
        batch_changes = 100

    monkeypatch.delenv(operators.CAPTURED_START_ENV, raising=False)
    off = operators.run_choice(Plan(), update=True)
    assert off.captured_start is False
    monkeypatch.setenv(operators.CAPTURED_START_ENV, "1")
    on = operators.run_choice(Plan(), update=True)
    assert on.captured_start is True
    assert (on.defines, on.chain_limits) == (off.defines, off.chain_limits)  # the same module
    assert operators.run_choice(Plan(), update=True) is on  # kept
    assert operators.run_choice(Plan(), update=False).captured_start is False
    monkeypatch.setenv(operators.CAPTURED_START_ENV, "maybe")
    with pytest.raises(errors.InvalidArgumentError, match=operators.CAPTURED_START_ENV):
        operators.run_choice(Plan(), update=True)
