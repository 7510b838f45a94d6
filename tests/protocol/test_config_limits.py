"""Campaign parameters refused before anything runs (issue 28): a --max-foreign-cpu that would
reject every round is a usage error naming the flag, not a campaign of rejected rounds."""

from __future__ import annotations

import pytest

from protocol.config import CampaignConfig
from protocol.errors import UsageError
from protocol.sides import parse_sides


def _config(**kw):
    return CampaignConfig(sides=parse_sides("host,host"), **kw)


@pytest.mark.parametrize("value", [-1.0, -0.01, float("nan"), float("inf")])
def test_a_foreign_cpu_limit_outside_the_cores_is_refused(value):
    with pytest.raises(UsageError, match="--max-foreign-cpu"):
        _config(max_foreign_cpu=value)


@pytest.mark.parametrize("value", [0.0, 0.5, 1.0, 16.0])
def test_a_foreign_cpu_limit_of_zero_or_more_cores_is_taken(value):
    assert _config(max_foreign_cpu=value).max_foreign_cpu == value


def test_perf_ab_refuses_it_with_exit_2(tmp_path, capsys):
    from bench import perf_ab

    code = perf_ab.main(["engines", "--sides", "host,host", "--graphs", "roadNet-PA", "--max-foreign-cpu", "-1",
                         "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "--max-foreign-cpu -1.0" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "campaign.json").exists()


# -- parameters a campaign could only fail on after measuring ------------------------------------
def test_a_negative_seed_is_refused_before_anything_runs():
    # NumPy's generators take no negative seed: the bootstrap raised ValueError ("expected
    # non-negative integer") once every round was measured, reported as an internal error
    with pytest.raises(UsageError, match=r"--seed -1: expected an integer >= 0"):
        _config(seed=-1)


def test_too_few_bootstrap_resamples_are_refused_before_anything_runs():
    with pytest.raises(UsageError, match="bootstrap_resamples 100: at least 2000"):
        _config(bootstrap_resamples=100)


@pytest.mark.parametrize("name, value", [("rounds", 7.5), ("rounds", "21"), ("warmup", 2.5), ("seed", 1.5),
                                         ("processes", True), ("max_rejects", 2.5), ("verify_rounds", 1.5),
                                         ("max_rounds", "40")])
def test_a_parameter_that_counts_must_be_an_integer(name, value):
    # rounds=7.5 was taken and recorded, and campaign.json's own readers then called it damaged;
    # rounds="21" was a TypeError from a comparison
    with pytest.raises(UsageError, match=f"--{name.replace('_', '-')} {value!r}: expected an integer"):
        _config(**{name: value})


@pytest.mark.parametrize("name, value", [("precision", "0.01"), ("max_foreign_cpu", "1"),
                                         ("min_clock_fraction", True), ("planted_check", "5")])
def test_a_parameter_that_measures_must_be_a_number(name, value):
    with pytest.raises(UsageError, match=f"--{name.replace('_', '-')} {value!r}: expected a number"):
        _config(**{name: value})


def test_numpy_scalars_are_taken_as_python_numbers_so_the_record_is_json():
    import json

    import numpy as np

    config = _config(rounds=np.int64(7), seed=np.int32(3), max_foreign_cpu=np.float32(2))
    assert (config.rounds, config.seed, config.max_foreign_cpu) == (7, 3, 2.0)
    assert type(config.rounds) is int and type(config.max_foreign_cpu) is float
    json.dumps(config.parameters())


def test_a_campaign_with_a_negative_seed_measures_nothing(tmp_path, capsys):
    from bench import perf_ab

    code = perf_ab.main(["engines", "--sides", "host,host", "--graphs", "roadNet-PA", "--seed", "-1",
                         "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "--seed -1" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "campaign.json").exists()


# -- the selections ------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, message", [
    ({"objectives": [1.5]}, r"--objectives: 1.5 is not an objective number"),
    ({"objectives": [True]}, r"--objectives: True is not an objective number"),
    ({"objectives": ["0"]}, r"--objectives: '0' is not an objective number"),
    ({"objectives": 5}, r"--objectives 5: expected a list of objective numbers"),
    ({"batches": "local10k"}, r"--batches 'local10k': expected a list of names"),
    ({"batches": [1]}, r"--batches: 1 is not a name"),
    ({"graphs": "roadNet-PA"}, r"--graphs 'roadNet-PA': expected a list of names"),
])
def test_a_selection_must_be_a_list_of_names_or_objective_numbers(kw, message):
    # campaign_config took objectives=[1.5] as objective 1 (int()), a string of batches as its
    # letters, and objectives=5 or ["x"] as a TypeError / ValueError traceback
    from protocol.campaign import campaign_config

    with pytest.raises(UsageError, match=message):
        campaign_config(sides="host,host", **kw)
    with pytest.raises(UsageError, match=message):
        _config(**kw)


def test_selections_of_numpy_values_and_tuples_are_taken_as_lists():
    import numpy as np

    from protocol.campaign import campaign_config

    config = campaign_config(sides="host,host", objectives=np.array([0, 2]), batches=("local10k",))
    assert config.objectives == [0, 2] and type(config.objectives[0]) is int
    assert config.batches == ["local10k"]


@pytest.mark.parametrize("value, message", [(1500, r"--lock-clocks 1500: expected base, max"),
                                            ("fast", r"--lock-clocks 'fast': expected base, max")])
def test_a_clock_lock_request_is_checked_with_the_other_parameters(value, message):
    # lock_clocks=1500 (a number, not the option's text) was an AttributeError once the campaign
    # opened its instruments; nothing here touches a clock (no NVML is opened)
    with pytest.raises(UsageError, match=message):
        _config(lock_clocks=value)
    assert _config(lock_clocks="1500,2619").lock_clocks == "1500,2619"
