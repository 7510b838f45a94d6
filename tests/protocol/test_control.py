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


def test_a_control_with_an_open_interval_is_not_called_unmeasured():
    # a round timed at 0 ms makes a bound infinite, null in summary.json beside a measured ratio:
    # the trust line said "the A/A control cell did not measure (done)", which it had
    control = {"cell": "g/b/0/control", "status": "done", "ratio": 1.0, "ratio_lo": 0.9, "ratio_hi": None}
    trust = control_trust(control)
    assert trust["untrustworthy"]
    assert "did not measure" not in trust["detail"]
    assert trust["detail"].startswith("A/A ratio 1.000 [0.900, unbounded] is open")
    assert "did not measure (not_measured)" in control_trust({**control, "status": "not_measured", "ratio": None})["detail"]


def test_an_untrustworthy_control_makes_a_clean_campaign_too_noisy_but_not_a_wrong_one():
    assert campaign_exit_code(["done"], untrustworthy=True) == ExitCode.TOO_NOISY
    assert campaign_exit_code(["done", "check_failed"], untrustworthy=True) == ExitCode.CORRECTNESS
    assert campaign_exit_code(["done"]) == ExitCode.OK


# -- --control every-gate (issue 32 item 4) -------------------------------------------------------
def _virtual_campaign(tmp_path, monkeypatch, **options):
    """Two graphs, host sides on a virtual clock (helpers.VirtualSide): every interval is a pure
    function of the seed, so the control's verdict is the rule's, never the machine's."""
    import numpy as np

    import protocol.region

    from .helpers import VirtualClock, VirtualSide

    clock = VirtualClock()
    monkeypatch.setattr(protocol.region, "time", clock)
    rng = np.random.default_rng(1)
    sides = (VirtualSide("host", clock, rng, sigma=0.01), VirtualSide("host-b", clock, rng, sigma=0.01))
    config = host_config(sides=sides, rounds=6, control=True, **options)
    store = RecordStore(tmp_path)
    inputs = [small_graph_input(n=600, m=2400), small_graph_input(n=500, m=2000, name="toy2")]
    with Instruments.open(gpu=False) as inst:
        code = CampaignRunner(config, store, inst).run(inputs)
    return code, store


def test_every_gate_runs_one_control_per_graph_and_reports_a_row_each(tmp_path, monkeypatch):
    code, store = _virtual_campaign(tmp_path, monkeypatch, control_scope="every-gate")
    assert code == ExitCode.OK
    campaign = store.read_campaign()
    assert campaign["parameters"]["control_scope"] == "every-gate"
    controls = [k for k, c in campaign["cells"].items() if c.get("control")]
    assert controls == ["toy/mixed/0" + CONTROL_SUFFIX, "toy2/mixed/0" + CONTROL_SUFFIX]
    # each graph's control runs before that graph's cells
    assert list(campaign["cells"]) == [controls[0], "toy/mixed/0", controls[1], "toy2/mixed/0"]
    summary = store.read_summary()
    assert [c["cell"] for c in summary["controls"]] == controls and summary["control"]["cell"] == controls[0]
    assert [c["cell"] for c in summary["cells"]] == ["toy/mixed/0", "toy2/mixed/0"]
    assert not summary["trust"]["untrustworthy"] and summary["trust"]["detail"] == "all 2 A/A controls contain 1"
    text = render_report(store).read_text()
    assert "**A/A controls** (host against itself on every gate's first batch and objective" in text
    table = [line for line in text.splitlines() if line.startswith("| `") and "/control`" in line]
    assert [line.split("`")[1] for line in table] == controls
    for line, c in zip(table, summary["controls"]):
        assert f"{c['ratio']:.3f} [{c['ratio_lo']:.3f}, {c['ratio_hi']:.3f}]" in line and "contains 1" in line
        half = 100 * (c["ratio_hi"] - c["ratio_lo"]) / 2 / c["ratio"]
        assert f"±{half:.2f} %" in line and f"| {c['accepted']['A']} |" in line


def test_the_default_keeps_one_control_and_its_sentence(tmp_path, monkeypatch):
    code, store = _virtual_campaign(tmp_path, monkeypatch)
    campaign = store.read_campaign()
    assert "control_scope" not in campaign["parameters"]  # recorded campaigns resume unchanged
    assert [k for k, c in campaign["cells"].items() if c.get("control")] == ["toy/mixed/0" + CONTROL_SUFFIX]
    assert "controls" not in store.read_summary()
    text = render_report(store).read_text()
    assert "**A/A control** (host against itself, `toy/mixed/0/control`)" in text and "A/A controls" not in text


def test_any_control_excluding_1_makes_the_campaign_untrustworthy():
    from protocol.analysis import controls_trust

    good = dict(_control(0.99, 1.01), cell="g1/b/0/control")
    bad = dict(_control(1.01, 1.03), cell="g2/b/0/control")
    assert not controls_trust([good, dict(good, cell="g3/b/0/control")])["untrustworthy"]
    trust = controls_trust([good, bad])
    assert trust["untrustworthy"] and trust["control"] == "g2/b/0/control" and "excludes 1" in trust["detail"]
    assert controls_trust([good, dict(good, status="too_noisy")])["untrustworthy"]
    assert controls_trust([good]) == control_trust(good) and controls_trust([]) == control_trust(None)


def test_every_gate_options_are_checked_and_wired(tmp_path):
    import pytest

    from bench import perf_ab
    from bench.engines_cmd import _rebuild_argv, build_config
    from protocol.errors import UsageError

    with pytest.raises(UsageError, match="--control every-gate and --no-control"):
        host_config(control=False, control_scope="every-gate")
    with pytest.raises(UsageError, match="--control 'all'"):
        host_config(control=True, control_scope="all")
    parse = perf_ab.build_parser().parse_args
    args = parse(["engines", "--sides", "host,host", "--graphs", "uspowergrid", "--control", "every-gate"])
    assert build_config(args).control_scope == "every-gate"
    argv = _rebuild_argv(args, out=tmp_path)
    assert argv[argv.index("--control") + 1] == "every-gate"
    plain = parse(["engines", "--sides", "host,host", "--graphs", "uspowergrid"])
    assert build_config(plain).control_scope == "first" and "--control" not in _rebuild_argv(plain)
