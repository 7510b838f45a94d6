"""``protocol.run_campaign``: a campaign from Python with plain arguments (issue 30 item 5), and the
README's example of it, run as printed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench import perf_ab
from protocol import PendingInput, campaign_config, run_campaign
from protocol.errors import UsageError
from protocol.exitcodes import ExitCode
from protocol.sides import Side

from .helpers import small_graph_input

ROOT = Path(__file__).resolve().parents[2]


def _config(**overrides):
    values = dict(sides="host,host", rounds=5, processes=1, objectives=[0], allow_dirty=True,
                  max_foreign_cpu=1e9, control=False)
    values.update(overrides)
    return campaign_config(**values)


def test_a_host_campaign_from_python(tmp_path, capsys):
    out = tmp_path / "ab"
    assert run_campaign(_config(), [small_graph_input()], out, progress=False) == ExitCode.OK
    captured = capsys.readouterr()
    assert "toy/mixed/0" in captured.out  # the verdict table
    assert f"report: {out / 'M7.md'}" in captured.err
    campaign = json.loads((out / "campaign.json").read_text())
    assert campaign["parameters"]["sides"] == {"A": "host", "B": "host"}
    assert campaign["cells"]["toy/mixed/0"]["status"] == "done"
    assert (out / "M7.md").read_text().startswith("# M7: host against host")
    assert not (out / ".campaign.lock").read_text()  # the lock was let go


def test_pending_inputs_are_prepared_when_reached(tmp_path):
    prepared = []

    def prepare():
        prepared.append("toy")
        return small_graph_input()

    code = run_campaign(_config(), [PendingInput("toy", prepare)], tmp_path, progress=False)
    assert code == ExitCode.OK and prepared == ["toy"]


def test_a_folder_holding_a_campaign_is_refused_unless_forced_or_resumed(tmp_path, capsys):
    gi = small_graph_input()
    assert run_campaign(_config(), [gi], tmp_path, progress=False) == ExitCode.OK
    capsys.readouterr()
    assert run_campaign(_config(), [gi], tmp_path, progress=False) == ExitCode.USAGE
    assert "holds the finished campaign" in capsys.readouterr().err
    assert run_campaign(_config(), [gi], tmp_path, resume=True, force=True, progress=False) == ExitCode.USAGE
    assert "pass one of them" in capsys.readouterr().err
    assert run_campaign(_config(), [gi], tmp_path, resume=True, progress=False) == ExitCode.OK
    assert run_campaign(_config(rounds=6), [gi], tmp_path, resume=True, progress=False) == ExitCode.USAGE
    assert "--resume: the parameters differ" in capsys.readouterr().err
    assert run_campaign(_config(rounds=6), [gi], tmp_path, force=True, progress=False) == ExitCode.OK


def test_problems_are_exit_codes_not_exceptions(tmp_path, capsys):
    from engines.sssp import cuda

    if not cuda.is_available():
        code = run_campaign(_config(sides="cuda:fused,cuda:operators"), [small_graph_input()], tmp_path,
                            progress=False)
        assert code == ExitCode.ENVIRONMENT
        assert "no CUDA GPU is usable here" in capsys.readouterr().err

    def broken():
        raise RuntimeError("a bug")

    code = run_campaign(_config(), [PendingInput("toy", broken)], tmp_path / "bug", progress=False, prog="mine")
    assert code == ExitCode.CORRECTNESS
    err = capsys.readouterr().err
    assert "mine: " in err and "RuntimeError: a bug" in err


def test_the_config_checks_as_the_command_line_does():
    with pytest.raises(UsageError, match="--rounds 3"):
        campaign_config(sides="host,host", rounds=3)
    with pytest.raises(UsageError):
        campaign_config(sides="host,nonsense")
    with pytest.raises(UsageError, match="--plant-delay"):
        campaign_config(sides="host,host", plant_delay="C:3")
    config = campaign_config(sides=(Side("host", "host"), Side("host", "host")), plant_delay="B:5")
    assert config.planted_delay == {"side": "B", "label": "host", "percent": 5.0}


def test_the_config_has_the_command_line_defaults():
    from bench import engines_cmd, options
    from protocol import campaign, sides

    # one owner: the command line's default is the protocol's object, not a copy of its text
    assert engines_cmd.DEFAULT_SIDES is options.DEFAULT_SIDES is campaign.DEFAULT_SIDES is sides.DEFAULT_SIDES
    assert sides.DEFAULT_SIDES == campaign_config().parameters()["sides"]["A"] \
        + "," + campaign_config().parameters()["sides"]["B"]
    args = perf_ab.build_parser().parse_args(["engines", "--graphs", "roadNet-PA"])
    from_command = engines_cmd.build_config(args).parameters()
    from_python = campaign_config(graphs=["roadNet-PA"]).parameters()
    assert from_python == from_command
    assert from_python["processes"] == 3 and from_python["rounds"] == 21


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = [m[1] for m in re.finditer(r"<!-- docs-test: python -->\n```python\n(.*?)\n```\n", text, re.S)
             if "run_campaign" in m[1]]
    assert len(found) == 1, "README.md shows one Python campaign example"
    return found[0]


@pytest.mark.slow
def test_the_readme_example_runs(tmp_path):
    body = _readme_example()
    assert 'sides="host,host"' in body
    done = subprocess.run([sys.executable, "-"], input=body, cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    said = re.search(r"^exit (\d) \((\w+)\): records and report in (.*)$", done.stdout, re.M)
    assert said, done.stdout[-3000:]
    assert said[2] in ("OK", "TOO_NOISY") and int(said[1]) == ExitCode[said[2]]
    records = Path(said[3])
    assert records.is_relative_to(tmp_path)
    assert f"report: {records / 'M7.md'}" in done.stderr
    campaign = json.loads((records / "campaign.json").read_text())
    assert campaign["parameters"]["sides"] == {"A": "host", "B": "host"}
    assert campaign["parameters"]["graph_file"]["name"] == "toy"
    assert "toy/local10k/0" in done.stdout
