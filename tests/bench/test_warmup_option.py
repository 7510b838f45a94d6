"""``--warmup`` of engine_table.py, fused_phases.py, update_anatomy.py, host_bench.py, stream.py and
``perf_ab.py engines`` / ``sweep``: one declaration (bench/options.py), so every one refuses a count
below its least (0; 2 warm-up rounds per side for a campaign) with the same argparse usage error
(exit 2, before any input or GPU is touched) and keeps its own default."""

from __future__ import annotations

import pytest

from bench import engine_table, engines_cmd, fused_phases, host_bench, options, perf_ab, stream, sweep_cmd, update_anatomy

#: command -> (its main, the arguments it needs besides --warmup, its default)
COMMANDS = {
    "engine_table": (engine_table, ["--graphs", "roadNet-PA"], 2),
    "fused_phases": (fused_phases, ["--graph", "uspowergrid"], 3),
    "update_anatomy": (update_anatomy, ["--graph", "uspowergrid"], 20),
}


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    from bench import has_gpu

    monkeypatch.setattr(has_gpu, "gpu_problem", lambda: "no CUDA driver (a test)")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_warmup_parses_zero_and_keeps_the_default(command):
    module, argv, default = COMMANDS[command]
    assert module.build_parser().parse_args(argv).warmup == default
    assert module.build_parser().parse_args([*argv, "--warmup", "0"]).warmup == 0
    assert module.build_parser().parse_args([*argv, "--warmup", "7"]).warmup == 7


@pytest.mark.parametrize("value", ["-1", "x", "1.5"])
def test_the_three_commands_refuse_a_bad_warmup_alike(value, capsys):
    messages = set()
    for command, (module, argv, _) in COMMANDS.items():
        assert module.main([*argv, "--warmup", value]) == 2, command
        err = capsys.readouterr().err
        assert "Traceback" not in err and "usage:" in err, command
        last = err.strip().splitlines()[-1]
        assert last.endswith(f"error: argument --warmup: {value!r}: expected a whole number, at least 0"), last
        messages.add(last.split(": ", 1)[1])  # without the program's name
    assert len(messages) == 1


def test_one_declaration():
    for module, _, _ in COMMANDS.values():
        action = module.build_parser()._option_string_actions["--warmup"]
        assert action.type is options.non_negative_count


# -- host_bench.py, stream.py, perf_ab.py engines and sweep (each declared its own --warmup) --------
class _Sub:
    """A perf_ab.py subcommand as a command: its parser is perf_ab's, its arguments after its name."""

    def __init__(self, name, module):
        self.name, self.module = name, module

    def build_parser(self):
        import argparse

        parser = argparse.ArgumentParser(prog=f"perf_ab.py {self.name}")
        self.module.add_arguments(parser)
        return parser

    def main(self, argv):
        return perf_ab.main([self.name, *argv])


#: command -> (a command-like object, the arguments it needs besides --warmup, its default, its least,
#: the function that would start the work, the prefix of its error line)
MORE = {
    "host_bench": (host_bench, ["--graphs", "uspowergrid"], 1, 0, (host_bench, "run")),
    "stream": (stream, ["--graph", "uspowergrid", "--engines", "host"], stream.DEFAULT_WARMUP, 0, (stream, "run")),
    "engines": (_Sub("engines", engines_cmd), ["--sides", "host,host", "--graphs", "uspowergrid"], 2, 2,
                (engines_cmd, "main")),
    "sweep": (_Sub("sweep", sweep_cmd), ["--engines", "host", "--graphs", "uspowergrid"], 2, 2,
              (sweep_cmd, "main")),
}


@pytest.mark.parametrize("command", sorted(MORE))
def test_each_command_keeps_its_default_and_accepts_its_least(command):
    module, argv, default, least, _ = MORE[command]
    assert module.build_parser().parse_args(argv).warmup == default
    assert module.build_parser().parse_args([*argv, "--warmup", str(least)]).warmup == least
    assert module.build_parser().parse_args([*argv, "--warmup", "7"]).warmup == 7


@pytest.mark.parametrize("command", sorted(MORE))
@pytest.mark.parametrize("below", ["-1", "least - 1", "x", "1.5"])
def test_each_command_refuses_a_count_below_its_least_when_parsed(command, below, monkeypatch, capsys):
    """host_bench checked --warmup after parsing, in its own words; stream in its size check (its
    own words); engines and sweep only when the campaign's configuration was built (engines after
    a graph file was hashed, sweep once its instruments were open and its first graph prepared)."""
    module, argv, _, least, (owner, name) = MORE[command]
    value = str(least - 1) if below == "least - 1" else below
    monkeypatch.setattr(owner, name, lambda *a, **k: pytest.fail(f"{command} started with --warmup {value}"))
    assert module.main([*argv, "--warmup", value]) == 2, command
    err = capsys.readouterr().err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.endswith(f"argument --warmup: {value!r}: expected a whole number, at least {least}"), last
    if command == "stream":  # stream's usage errors are one line, without the usage block
        assert err.count("\n") == 1 and last.startswith("stream.py: ")
    else:
        assert "usage:" in err and ": error: argument --warmup: " in last


def test_every_command_says_it_in_the_same_words(capsys):
    messages = set()
    for name, (module, argv, _, least, _) in {**{k: (m, a, d, 0, None) for k, (m, a, d) in COMMANDS.items()},
                                              **MORE}.items():
        with pytest.raises(SystemExit) if name != "stream" else pytest.raises(stream.UsageError) as caught:
            module.build_parser().parse_args([*argv, "--warmup", "-1"])
        if name == "stream":
            text = str(caught.value)
        else:
            assert caught.value.code == 2, name
            text = capsys.readouterr().err.strip().splitlines()[-1].split(" error: ", 1)[1]
        messages.add(text.replace(f"at least {least}", "at least LEAST"))
    assert messages == {"argument --warmup: '-1': expected a whole number, at least LEAST"}


@pytest.mark.parametrize("command", sorted(MORE))
def test_one_declaration_everywhere(command):
    module, argv, _, least, _ = MORE[command]
    action = module.build_parser()._option_string_actions["--warmup"]
    assert action.type is options.count_at_least(least)
    assert (f"at least {least}; " in action.help) == (least > 0)


@pytest.mark.parametrize("command", ["engines", "sweep"])
def test_the_campaigns_least_has_one_owner(command):
    """The campaigns' least (2 warm-up rounds per side) was written three times: in CampaignConfig's
    check and in both commands' declarations; now protocol.config.MIN_WARMUP, which all three read."""
    from protocol.config import MIN_WARMUP

    module, _, _, least, _ = MORE[command]
    assert least == MIN_WARMUP
    action = module.build_parser()._option_string_actions["--warmup"]
    assert action.type is options.count_at_least(MIN_WARMUP)
