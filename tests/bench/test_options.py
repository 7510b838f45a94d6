"""The shared command-line options (bench/options.py, issue 29 step 4): declared once, so each one
parses the same, with the same help text, in every command that takes it."""

from __future__ import annotations

import argparse

import pytest

from bench import engine_table, host_bench, options, perf_ab, phase_breakdown, stream, update_anatomy
from bench.gates import DATA_DIR_VARIABLE, GATE_NAMES


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = perf_ab.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


COMMANDS = {
    "perf_ab engines": lambda: _subparser("engines"),
    "perf_ab prepare": lambda: _subparser("prepare"),
    "perf_ab report": lambda: _subparser("report"),
    "engine_table": engine_table.build_parser,
    "host_bench": host_bench.build_parser,
    "stream": stream.build_parser,
    "phase_breakdown": phase_breakdown.build_parser,
    "update_anatomy": update_anatomy.build_parser,
}
#: A command's own required options, given with every parse.
REQUIRED = {"phase_breakdown": ["--graph", "g", "--batch", "b"]}
#: option -> the commands that take it in its shared meaning.
TAKERS = {
    "--graphs": ("perf_ab engines", "perf_ab prepare", "engine_table", "host_bench"),
    "--data-dir": ("perf_ab engines", "perf_ab prepare", "engine_table", "host_bench", "stream", "phase_breakdown",
                   "update_anatomy"),
    "--cache-dir": ("perf_ab engines", "perf_ab prepare", "engine_table", "host_bench", "stream", "phase_breakdown",
                    "update_anatomy"),
    "--no-progress": ("perf_ab engines", "perf_ab prepare", "host_bench", "stream"),
    "--sides": ("perf_ab engines",),
}
CAMPAIGN_OUT = ("perf_ab engines", "perf_ab report")
TABLE_OUT = {"engine_table": "engine_table.json and engine_table.md", "host_bench": "host_bench.json and host_bench.md",
             "stream": "stream.json and stream.md"}


def action(parser: argparse.ArgumentParser, option: str) -> argparse.Action:
    return parser._option_string_actions[option]


def parse(command: str, *argv: str) -> argparse.Namespace:
    return COMMANDS[command]().parse_args([*REQUIRED.get(command, []), *argv])


def reference(option: str, **kw) -> argparse.Action:
    """The option as the shared helper declares it, on a parser of its own."""
    parser = argparse.ArgumentParser()
    {"--graphs": options.add_graphs_option, "--data-dir": options.add_data_dir_option,
     "--cache-dir": options.add_cache_dir_option, "--no-progress": options.add_no_progress_option,
     "--sides": options.add_sides_option}[option](parser, **kw)
    return action(parser, option)


def test_every_command_that_takes_a_shared_option_is_listed():
    for command, build in COMMANDS.items():
        parser = build()
        for option, takers in TAKERS.items():
            assert (option in parser._option_string_actions) == (command in takers), (command, option)


@pytest.mark.parametrize("option, command", [(o, c) for o, cs in TAKERS.items() for c in cs if o != "--graphs"])
def test_shared_option_same_everywhere(option, command):
    mine, ref = action(COMMANDS[command](), option), reference(option)
    assert (mine.help, mine.default, mine.metavar, mine.nargs, type(mine)) == \
           (ref.help, ref.default, ref.metavar, ref.nargs, type(ref))
    dest = option.lstrip("-").replace("-", "_")
    if option == "--no-progress":
        assert getattr(parse(command, option), dest) is True and getattr(parse(command), dest) is False
    else:
        value = "host,host" if option == "--sides" else "/some/folder"
        assert getattr(parse(command, option, value), dest) == value


def test_data_dir_help_names_the_one_variable():
    assert f"${DATA_DIR_VARIABLE}" in reference("--data-dir").help and DATA_DIR_VARIABLE == "SSSPAB_DATA_DIR"


@pytest.mark.parametrize("command", TAKERS["--graphs"])
def test_graphs_parse_the_same(command):
    for argv in (["roadNet-PA", "road_usa"], ["roadNet-PA,road_usa"], ["roadNet-PA,", "road_usa"]):
        assert parse(command, "--graphs", *argv).graphs == ["roadNet-PA", "road_usa"]
    help_text = action(COMMANDS[command](), "--graphs").help
    assert help_text.startswith("gate names, space- or comma-separated, of ")


def test_graphs_defaults_kept():
    assert parse("perf_ab engines").graphs is None and parse("perf_ab prepare").graphs is None  # the four gates
    assert parse("engine_table").graphs == list(GATE_NAMES)
    assert parse("engine_table", "--graphs").graphs == []  # only --random-graph
    assert parse("host_bench").graphs == ["roadNet-PA"]
    for command in ("perf_ab engines", "perf_ab prepare", "host_bench"):
        with pytest.raises(SystemExit):
            parse(command, "--graphs")


@pytest.mark.parametrize("command", CAMPAIGN_OUT)
def test_campaign_out_same(command):
    parser = argparse.ArgumentParser()
    options.add_campaign_out_option(parser)
    assert action(COMMANDS[command](), "--out").help == action(parser, "--out").help
    assert parse(command).out is None and parse(command, "--out", "x").out == "x"


@pytest.mark.parametrize("command, files", TABLE_OUT.items())
def test_table_out_same(command, files):
    assert action(COMMANDS[command](), "--out").help == f"folder for {files}"
    assert parse(command).out is None and parse(command, "--out", "x").out == "x"


def test_phase_breakdown_table_file_keeps_out():
    assert parse("phase_breakdown", "--table-file", "t.md").out == "t.md"
    assert parse("phase_breakdown", "--out", "t.md").out == "t.md"


def test_objectives_are_integers_and_a_word_that_is_none_is_named():
    from protocol.errors import UsageError

    assert options.parse_objectives(None) is None
    assert options.parse_objectives(["0,2", "1"]) == [0, 2, 1]
    with pytest.raises(UsageError, match=r"^--objectives: 'two' is not an objective \(a weight column's number"):
        options.parse_objectives(["0", "two"])


def test_a_negative_objective_is_named_by_the_one_parser():
    """engines and sweep each refused a negative objective in words of their own; the parser of
    ``--objectives`` is now the one place that does."""
    from protocol.errors import UsageError

    with pytest.raises(UsageError, match=r"^--objectives: objective -1 is negative \(objectives are numbered from 0\)$"):
        options.parse_objectives(["0", "-1"])


def test_an_objective_beyond_the_weight_columns_is_named_with_what_has_them():
    """engines (for the gates and for a file's own weights) and sweep (before sweep.json and per
    graph) each wrote this refusal out, and so did the runner; protocol.config.check_objectives_fit
    is its one owner (options.check_objectives_fit is the same function)."""
    from protocol.errors import UsageError

    options.check_objectives_fit([0, 2], 3, "every graph")
    options.check_objectives_fit([], 0, "g.mtx")  # nothing asked: nothing to refuse
    with pytest.raises(UsageError, match=r"^--objectives: objective 3 is outside \[0, 3\): every graph has 3 weight "
                                         r"column\(s\), numbered from 0$"):
        options.check_objectives_fit([0, 3, 4], 3, "every graph")
    with pytest.raises(UsageError, match=r"^--objectives: objective 1 is outside \[0, 1\): g.mtx has 1 weight"):
        options.check_objectives_fit([1], 1, "g.mtx")


@pytest.mark.parametrize("word, message", [
    ("x", "--objectives: 'x' is not an objective"),
    ("-1", "--objectives: objective -1 is negative"),
])
def test_engines_names_an_objective_that_is_no_number_before_any_record(tmp_path, capsys, word, message):
    from bench import perf_ab

    out = tmp_path / "out"
    assert perf_ab.main(["engines", "--sides", "host,host", "--graphs", "uspowergrid", f"--objectives={word}",
                         "--allow-dirty", "--no-progress", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and "invalid literal" not in err
    assert not out.exists()


def test_only_commas_is_no_name_given_not_every_one(capsys):
    """``--graphs ,`` ran nothing and exited 0 (host_bench printed an empty table); ``--objectives ,``
    ended a campaign in an IndexError after campaign.json was written; ``--batches ,`` measured every
    batch."""
    from protocol.errors import UsageError

    from bench.batches import check_batch_names

    with pytest.raises(UsageError, match="^--objectives: no objective given"):
        options.parse_objectives([","])
    with pytest.raises(UsageError, match=r"^--batches: no batch named \(every graph has safe50k"):
        check_batch_names([])
    check_batch_names(None)  # not given: every batch
    assert host_bench.main(["--graphs", ","]) == 2
    assert "argument --graphs: no name given (only commas)" in capsys.readouterr().err
    assert perf_ab.main(["prepare", "--graphs", ",", "--no-progress"]) == 2
    assert "argument --graphs: no name given" in capsys.readouterr().err
    # a command whose --graphs may be empty keeps the empty list (engine_table: only --random-graph)
    assert engine_table.build_parser().parse_args(["--graphs", ","]).graphs == []


@pytest.mark.parametrize("command", [
    lambda cache, out: stream.main(["--graph", "uspowergrid", "--engines", "host", "--batches", "3", "--batch-size", "4",
                                    "--warmup", "0", "--no-progress", "--cache-dir", cache]),
    lambda cache, out: host_bench.main(["--graphs", "uspowergrid", "--repeats", "1", "--no-progress",
                                        "--cache-dir", cache]),
    lambda cache, out: perf_ab.main(["sweep", "--engines", "host", "--graphs", "uspowergrid", "--allow-dirty",
                                     "--no-progress", "--out", out, "--cache-dir", cache]),
    lambda cache, out: perf_ab.main(["prepare", "--graphs", "uspowergrid", "--no-progress", "--cache-dir", cache]),
    lambda cache, out: perf_ab.main(["engines", "--sides", "host,host", "--graphs", "uspowergrid", "--allow-dirty",
                                     "--no-progress", "--out", out, "--cache-dir", cache]),
], ids=["stream", "host_bench", "sweep", "prepare", "engines"])
def test_a_cache_dir_that_is_a_file_is_one_usage_line_before_any_input(command, tmp_path, capsys):
    """stream, host_bench and sweep found it only when the first prepared input was saved (exit 3,
    after the hashing); prepare and engines checked it first: now one check, options.check_cache_dir."""
    cache = tmp_path / "cache.txt"
    cache.write_text("x")
    assert command(str(cache), str(tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert f"the cache folder cannot be written: {cache} exists and is not a folder" in err
    assert "hashing" not in err and cache.read_text() == "x"
    assert not (tmp_path / "out" / "sweep.json").exists() and not (tmp_path / "out" / "campaign.json").exists()
