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
