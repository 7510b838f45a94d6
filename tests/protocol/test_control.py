"""The A/A control cell (protocol.md §7): side A against itself on the first graph and batch.

Run on the real host reference; the verdict on trust is a plain function tested on
hand-written summaries, so that it can be checked on both sides of its boundary.
"""

from __future__ import annotations

from protocol.exitcodes import ExitCode
from protocol.instruments import Instruments
from protocol.records import RecordStore
from protocol.report import render_report
from protocol.analysis import control_trust
from protocol.exitcodes import campaign_exit_code
from protocol.runner import CONTROL_SUFFIX, CampaignRunner

from .helpers import host_config, small_graph_input


def test_every_campaign_runs_one_control_cell_first(tmp_path):
    config = host_config(rounds=5, control=True)
    store = RecordStore(tmp_path)
    inputs = [small_graph_input(n=600, m=2400), small_graph_input(n=500, m=2000, name="toy2")]
    with Instruments.open(gpu=False) as inst:
        code = CampaignRunner(config, store, inst).run(inputs)
    campaign = store.read_campaign()
    keys = list(campaign["cells"])
    assert keys[0] == "toy/mixed/0" + CONTROL_SUFFIX and campaign["cells"][keys[0]]["control"] is True
    assert sum(1 for c in campaign["cells"].values() if c.get("control")) == 1  # once, not per graph
    rows = store.read_rounds()
    control_rows = rows[rows["cell"] == keys[0]]
    assert set(control_rows["side"]) == {"host"} and set(control_rows["role"]) == {"A", "B"}
    summary = store.read_summary()
    assert summary["control"]["cell"] == keys[0]
    assert [c["cell"] for c in summary["cells"]] == ["toy/mixed/0", "toy2/mixed/0"]  # not among the A/B cells
    trust = summary["trust"]
    assert trust["control"] == keys[0]
    assert code == (ExitCode.TOO_NOISY if trust["untrustworthy"] else ExitCode.OK)
    text = render_report(store).read_text()
    assert "**A/A control** (host against itself, `toy/mixed/0/control`)" in text


def test_no_control_is_said_in_the_report(tmp_path):
    store = RecordStore(tmp_path)
    with Instruments.open(gpu=False) as inst:
        assert CampaignRunner(host_config(rounds=5), store, inst).run([small_graph_input(n=600, m=2400)]) == ExitCode.OK
    assert store.read_summary()["control"] is None
    assert "No A/A control cell in this campaign (`--no-control`" in render_report(store).read_text()


def _control(lo, hi, status="done"):
    return {"cell": "g/b/0/control", "status": status, "ratio": (lo + hi) / 2, "ratio_lo": lo, "ratio_hi": hi}


def test_trust_follows_the_control_interval():
    assert not control_trust(_control(0.99, 1.01))["untrustworthy"]
    assert not control_trust(_control(1.0, 1.02))["untrustworthy"]  # the boundary counts as containing 1
    assert control_trust(_control(1.001, 1.02))["untrustworthy"]
    assert control_trust(_control(0.95, 0.999))["untrustworthy"]
    assert "excludes 1" in control_trust(_control(1.01, 1.03))["detail"]
    assert control_trust(_control(0.99, 1.01, status="too_noisy"))["untrustworthy"]
    assert not control_trust(None)["untrustworthy"]


def test_an_untrustworthy_control_makes_a_clean_campaign_too_noisy_but_not_a_wrong_one():
    assert campaign_exit_code(["done"], untrustworthy=True) == ExitCode.TOO_NOISY
    assert campaign_exit_code(["done", "check_failed"], untrustworthy=True) == ExitCode.CORRECTNESS
    assert campaign_exit_code(["done"]) == ExitCode.OK
