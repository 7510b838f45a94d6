"""``--warmup`` of engine_table.py, fused_phases.py and update_anatomy.py: one declaration
(bench/options.py), so the three refuse a negative count with the same argparse usage error
(exit 2, before any GPU is asked for) and keep their own defaults."""

from __future__ import annotations

import pytest

from bench import engine_table, fused_phases, options, update_anatomy

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
