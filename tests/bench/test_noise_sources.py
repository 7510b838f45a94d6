"""bench/noise_sources.py and protocol/noise.py (issue 32, step 1): the table of what each noise
source contributes, over campaigns run here with host sides on a virtual clock (tests/protocol/
helpers.py: the engine regions last exactly the durations the sides draw, so the statistics are a
pure function of the seeds and no test reads the machine's time).

A planted within-process noise must show in the within spread, a planted per-process offset in the
between spread, the share against the base must be the half-widths' own arithmetic, a missing or
non-campaign folder must exit 2 with one line, and clocks must read as constant, varying (with
their correlation) or not recorded.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bench import noise_sources
from protocol import noise
from protocol.analysis import build_summary
from protocol.exitcodes import ExitCode
from protocol.instruments import Instruments
from protocol.records import RecordStore
from protocol.runner import CampaignRunner

from tests.protocol.helpers import VirtualClock, VirtualSide, host_config, small_graph_input

KEY = "toy/mixed/0"
PROCESSES, ROUNDS = 4, 24  # ROUNDS: the pairs of the cell, spread over its processes


class OffsetSide(VirtualSide):
    """A VirtualSide whose slowdown is ``offsets[k]`` in the k-th worker process it runs in (a new
    worker makes a new result): a per-process offset, constant within the process."""

    def __init__(self, label, clock, rng, offsets, **kw):
        super().__init__(label, clock, rng, **kw)
        object.__setattr__(self, "offsets", tuple(offsets))
        object.__setattr__(self, "made", [0])

    def make_result(self, graph, source, objective, distances, parents):
        object.__setattr__(self, "slowdown", self.offsets[self.made[0] % len(self.offsets)])
        self.made[0] += 1
        return super().make_result(graph, source, objective, distances, parents)


def _campaign(toy, out, make_sides, *, clocks=None, **config):
    """A host campaign on the virtual clock into ``out``; ``clocks(n)``: the n-th round's SM clock
    (recorded as its NVML median and minimum), else none recorded."""
    import protocol.region

    clock = VirtualClock()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(protocol.region, "time", clock)
        config = host_config(sides=make_sides(clock, np.random.default_rng(11)), rounds=ROUNDS,
                             processes=PROCESSES, **config)
        store = RecordStore(out)
        with Instruments.open(gpu=False) as inst:
            if clocks is not None:
                real_end, calls = inst.end_round, [0]

                def end_round(window):
                    fields, reason = real_end(window)
                    calls[0] += 1
                    fields["sm_clock_median_mhz"] = fields["sm_clock_min_mhz"] = clocks(calls[0])
                    return fields, reason

                inst.end_round = end_round
            code = CampaignRunner(config, store, inst, in_process=True).run([toy])
    assert code == ExitCode.OK
    return out


def _quiet(sigma):
    return lambda clock, rng: (VirtualSide("host", clock, rng, sigma=sigma), VirtualSide("host-b", clock, rng, sigma=sigma))


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    toy = small_graph_input()
    root = tmp_path_factory.mktemp("noise")
    return {
        "base": _campaign(toy, root / "base", _quiet(0.005)),
        # within-process noise: every round's draw 8 times as spread
        "jitter": _campaign(toy, root / "jitter", _quiet(0.04)),
        # a per-process offset of side B: +6 %, -4 %, +1 %, -3 % by worker, the rounds as quiet as the base's
        "offset": _campaign(toy, root / "offset", lambda clock, rng: (
            VirtualSide("host", clock, rng, sigma=0.005),
            OffsetSide("host-b", clock, rng, (0.06, -0.04, 0.01, -0.03), sigma=0.005))),
        "clock": _campaign(toy, root / "clock", _quiet(0.005), clocks=lambda n: 1755.0),
    }


@pytest.fixture(scope="module")
def table(campaigns):
    return noise_sources.build_table(list(campaigns.items()), base="base")


def _cell(table, label, key=KEY):
    entry = next(e for e in table["experiments"] if e["label"] == label)
    return next(c for c in entry["cells"] if c["cell"] == key)


def test_a_planted_within_process_noise_shows_in_the_within_spread(table):
    base, jitter = _cell(table, "base"), _cell(table, "jitter")
    assert jitter["within"] > 4 * base["within"]
    assert jitter["half_width"] > 2 * base["half_width"]
    assert jitter["share"] < -1.0  # the jitter widens the interval: a negative share


def test_a_planted_per_process_offset_shows_in_the_between_spread(table):
    base, offset = _cell(table, "base"), _cell(table, "offset")
    assert offset["processes"] == PROCESSES
    # the four workers' medians sit at about 1.06, 0.96, 1.01, 0.97: a range of about 10 %
    assert 0.07 < offset["between"] < 0.13 and base["between"] < 0.02
    assert offset["within"] < 2 * base["within"] + 0.01  # within each process nothing changed
    assert offset["half_width"] > 2 * base["half_width"]


def test_the_share_is_the_change_of_the_half_width_against_the_base(table, campaigns):
    def summary_half(folder):
        store = RecordStore(folder)
        campaign = store.read_campaign()
        cell = build_summary(store.read_rounds(campaign), campaign)["cells"][0]
        return (cell["ratio_hi"] - cell["ratio_lo"]) / 2 / cell["ratio"]

    base_half = summary_half(campaigns["base"])
    assert _cell(table, "base")["half_width"] == pytest.approx(base_half)
    for label in ("jitter", "offset"):
        cell, half = _cell(table, label), summary_half(campaigns[label])
        assert cell["half_width"] == pytest.approx(half)
        assert cell["base_half_width"] == pytest.approx(base_half)
        assert cell["delta"] == pytest.approx(half - base_half)
        assert cell["share"] == pytest.approx((base_half - half) / base_half)
    assert _cell(table, "base")["share"] is None and _cell(table, "base")["delta"] is None


def test_share_of_base_by_hand():
    assert noise.share_of_base(0.01, 0.05) == pytest.approx(0.8)  # 80 % of the base's width removed
    assert noise.share_of_base(0.10, 0.05) == pytest.approx(-1.0)
    assert noise.share_of_base(None, 0.05) is None and noise.share_of_base(0.01, 0.0) is None
    assert noise.half_width({"median": 1.0, "lo": 0.95, "hi": 1.05}) == pytest.approx(0.05)
    assert noise.half_width({"median": None, "lo": None, "hi": None}) is None


def test_a_cell_the_base_lacks_has_no_share(campaigns, tmp_path):
    toy = small_graph_input(name="other")
    other = _campaign(toy, tmp_path / "other", _quiet(0.005))
    table = noise_sources.build_table([("base", campaigns["base"]), ("other", other)])
    cell = _cell(table, "other", "other/mixed/0")
    assert cell["half_width"] is not None and cell["share"] is None and cell["delta"] is None
    assert "| other | other/mixed/0 |" in noise_sources.markdown(table)


# -- clocks ---------------------------------------------------------------------------------------
def test_host_sides_record_no_clock_and_no_event_time(table):
    cell = _cell(table, "base")
    assert cell["clock"]["state"] == noise.NOT_RECORDED
    assert cell["host_event"]["state"] == noise.NOT_RECORDED and cell["host_event"]["rounds"] == 0
    text = noise_sources.markdown(table)
    assert "| base | toy/mixed/0 | not recorded (no NVML clock readings) |" in text
    assert "not recorded (no CUDA-event times: host sides)" in text


def test_constant_clocks_are_reported_as_such(table):
    clock = _cell(table, "clock")["clock"]
    assert clock["state"] == noise.CONSTANT and clock["min_mhz"] == clock["max_mhz"] == 1755.0
    assert clock["rounds"] == 2 * ROUNDS and clock["r_pair_ratio"] is None
    assert f"| clock | {KEY} | clock constant (1755 MHz, {2 * ROUNDS} rounds) | – | – |" \
        in noise_sources.markdown(table)


def _rounds(times, clocks, *, host=None):
    """A cell's accepted rounds: pairs (A, B) of ``times`` at ``clocks`` in worker 0."""
    rows = []
    for i, ((ta, tb), (ca, cb)) in enumerate(zip(times, clocks)):
        for role, t, c in (("A", ta, ca), ("B", tb, cb)):
            rows.append({"warmup": False, "accepted": True, "role": role, "process": 0, "session": 0,
                         "pair_index": i, "engine_device_ms": t, "sm_clock_median_mhz": c,
                         "engine_host_ms": None if host is None else t + host})
    return pd.DataFrame(rows)


def test_a_ratio_that_follows_the_clock_correlates_with_it():
    rng = np.random.default_rng(3)
    clocks = rng.choice([1980.0, 1890.0, 1755.0], size=(40, 2))
    times = 2000.0 / clocks  # a round's time as 1 / clock, exactly
    result = noise.clock_correlation(_rounds(times, clocks), "engine_device_ms")
    assert result["state"] == noise.VARIES and (result["min_mhz"], result["max_mhz"]) == (1755.0, 1980.0)
    assert result["r_pair_ratio"] == pytest.approx(1.0) and result["r_round_time"] == pytest.approx(-1.0, abs=0.02)
    # the same clocks beside times that ignore them: no correlation to speak of
    flat = 1.0 + 0.01 * rng.standard_normal((40, 2))
    loose = noise.clock_correlation(_rounds(flat, clocks), "engine_device_ms")
    assert abs(loose["r_pair_ratio"]) < 0.4 and abs(loose["r_round_time"]) < 0.4


def test_pearson_needs_points_and_variation():
    assert noise.pearson([1, 2], [2, 4]) is None
    assert noise.pearson([1, 1, 1], [1, 2, 3]) is None
    assert noise.pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_host_time_against_event_time():
    times = np.full((10, 2), 2.0)
    result = noise.host_event_difference(_rounds(times, np.full((10, 2), 1980.0), host=0.05))
    assert result["state"] == "recorded" and result["rounds"] == 20
    assert result["median_ms"] == pytest.approx(0.05) and result["median_relative"] == pytest.approx(0.025)
    assert "50.0 µs [50.0, 50.0] (+2.50 %)" == noise_sources.host_event_text(result)


# -- the command line -----------------------------------------------------------------------------
def test_the_command_writes_the_markdown_and_the_json(campaigns, tmp_path, capsys):
    code = noise_sources.main([f"base={campaigns['base']}", f"jitter={campaigns['jitter']}", "--out", str(tmp_path)])
    assert code == ExitCode.OK
    text = (tmp_path / "noise_sources.md").read_text()
    assert text == capsys.readouterr().out
    record = json.loads((tmp_path / "noise_sources.json").read_text())
    assert record["base"] == "base" and [e["label"] for e in record["experiments"]] == ["base", "jitter"]
    share = record["experiments"][1]["cells"][0]["share"]
    assert f"| jitter | {KEY} |" in text and f"{100 * share:+.2f} % |" in text
    # the experiments' folders are only read: no summary, report or plot written into them
    assert not (campaigns["base"] / "M7.md").exists()


def _fails(argv, capsys, *words):
    code = noise_sources.main(argv)
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    for word in words:
        assert word in err, err
    return err


def test_a_missing_experiment_folder_is_a_usage_error(campaigns, tmp_path, capsys):
    _fails([f"base={campaigns['base']}", f"l2-flush={tmp_path / 'nowhere'}"], capsys,
           "experiment l2-flush", "nowhere", "is not a folder")


def test_a_folder_without_a_campaign_is_a_usage_error(campaigns, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("not a campaign\n")
    _fails([f"base={campaigns['base']}", f"all={tmp_path}"], capsys, "experiment all", "holds no campaign")


def test_damaged_records_are_a_usage_error(campaigns, tmp_path, capsys):
    (tmp_path / "campaign.json").write_text("{")
    _fails([f"base={tmp_path}"], capsys, "damaged record")


@pytest.mark.parametrize("argv, words", [
    (["base"], ("LABEL=DIR",)),
    (["l2=/x"], ("--base base", "l2")),
    (["base=/x", "base=/y"], ("given twice",)),
    ([], ("required",)),
])
def test_bad_arguments_are_usage_errors(argv, words, capsys):
    _fails(argv, capsys, *words)


def test_the_out_option_is_the_shared_one():
    from bench import options
    import argparse

    reference = argparse.ArgumentParser()
    options.add_table_out_option(reference, "noise_sources.json and noise_sources.md")
    mine = noise_sources.build_parser()._option_string_actions["--out"]
    theirs = reference._option_string_actions["--out"]
    assert (mine.help, mine.default, mine.metavar) == (theirs.help, theirs.default, theirs.metavar)


# -- the gpu_session.sh step ----------------------------------------------------------------------
def test_the_session_step_runs_the_experiments_of_issue_32():
    """Each experiment of bench/gpu_session.sh's noise step is a valid perf_ab.py engines command
    line with the options it is named for (the step itself runs only on a GPU)."""
    import re
    import shlex
    from pathlib import Path

    from bench import perf_ab

    script = (Path(__file__).resolve().parents[2] / "bench" / "gpu_session.sh").read_text()
    block = script[script.index("    noise)\n"):script.index("    asv)")]
    common = " ".join(re.search(r'NOISE_C="python3 bench/perf_ab.py (.*?)"', block, re.S).group(1).split())
    pa = re.search(r'NOISE_PA="(.*?)"', block).group(1)
    default = re.search(r"NOISE_EXPERIMENTS:-([^}]*)\}", block).group(1).split()
    arms = dict(re.findall(r"^ {10}([\w-]+)\) a=\"(.*?)\" ;;$", block, re.M))
    assert default == list(arms) == ["base", "alloc-alternate", "l2-flush", "all", "planted-2", "planted-1"]
    parsed = {}
    for label, extra in arms.items():
        argv = shlex.split(f"{common} {extra.replace('$NOISE_PA', pa)} --out /tmp/x".replace("$DIRTY_ARG", ""))
        parsed[label] = args = perf_ab.build_parser().parse_args(argv)
        assert (args.sides, args.objectives, args.processes, args.rounds, args.resume) == \
            ("cuda:fused,cuda:fused", ["0"], 6, 24, True)
    on_pa = [k for k, a in parsed.items() if (a.graphs, a.batches) == (["roadNet-PA"], ["safe50k"])]
    assert on_pa == ["base", "alloc-alternate", "l2-flush", "all", "planted-2"]
    assert (parsed["planted-1"].graphs, parsed["planted-1"].batches) == (["road_usa"], ["local10k"])
    assert parsed["alloc-alternate"].alloc_order == "alternate" and parsed["l2-flush"].l2_flush
    assert (parsed["all"].alloc_order, parsed["all"].l2_flush, parsed["all"].discard_after_clock_change) == \
        ("alternate", True, 2)
    assert parsed["planted-2"].plant_delay == "B:2" and parsed["planted-1"].plant_delay == "B:1"
    assert parsed["base"].plant_delay is None and not parsed["base"].l2_flush
    # the table over the experiments that have a campaign, compared with base or the first there
    assert 'bench/noise_sources.py "${NOISE_TABLE[@]}" --base "$NOISE_BASE" --out "$OUT/noise"' in block
    assert 'NOISE_TABLE+=("$e=$OUT/noise/$e")' in block


# -- the files written ---------------------------------------------------------------------------
@pytest.fixture
def built(monkeypatch):
    """The table built without campaigns: the writing alone is under test."""
    monkeypatch.setattr(noise_sources, "build_table", lambda experiments, base: {"base": base, "experiments": []})
    monkeypatch.setattr(noise_sources, "markdown", lambda table: "| the table |\n")


def test_the_files_hold_the_table_and_its_record(built, tmp_path, capsys):
    assert noise_sources.main(["base=somewhere", "--out", str(tmp_path)]) == ExitCode.OK
    assert (tmp_path / "noise_sources.md").read_text() == "| the table |\n"
    record = {"command": f"python bench/noise_sources.py base=somewhere --out {tmp_path}", "base": "base",
              "experiments": []}
    assert (tmp_path / "noise_sources.json").read_text() == json.dumps(record, indent=2) + "\n"


@pytest.mark.parametrize("name", ["noise_sources.json", "noise_sources.md"])
def test_an_interrupted_write_keeps_the_earlier_file_and_is_one_line(name, built, tmp_path, interrupted_write,
                                                                    capsys):
    """A write that fails after the table is printed: the shared line naming the file (not the
    refusal before work), exit 3, no traceback and no 'wrote' line."""
    interrupted_write.of(tmp_path / name)
    assert noise_sources.main(["base=somewhere", "--out", str(tmp_path)]) == ExitCode.ENVIRONMENT
    captured = capsys.readouterr()
    assert captured.out == "| the table |\n"  # printed whatever the files
    assert captured.err == f"noise_sources.py: cannot write {tmp_path / name}: No space left on device\n"
    interrupted_write.check_kept()
