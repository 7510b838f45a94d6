"""One exit-status table for every command (issue 30, item 2): engines.exitcodes.ExitCode, re-exported
by protocol.exitcodes; the errors that carry a status live in protocol.errors."""

from __future__ import annotations

import re
from pathlib import Path

import engines.exitcodes
import protocol.errors
import protocol.exitcodes
from engines.exitcodes import ExitCode

REPO = Path(__file__).resolve().parents[1]


def test_the_numbers_stay_what_the_documents_and_scripts_say():
    assert {code.name: int(code) for code in ExitCode} == {
        "OK": 0, "CORRECTNESS": 1, "USAGE": 2, "ENVIRONMENT": 3, "TOO_NOISY": 4, "NO_CORPUS": 77,
        "INTERRUPTED": 130}
    assert ExitCode.FAILURE is ExitCode.CORRECTNESS  # one status, two names


def test_protocol_reexports_the_one_table_and_keeps_the_errors_apart():
    assert protocol.exitcodes.ExitCode is engines.exitcodes.ExitCode
    for name in ("ProtocolError", "UsageError", "EnvironmentProblem", "CorrectnessFailure"):
        assert not hasattr(protocol.exitcodes, name)
    assert protocol.errors.UsageError.exit_code is ExitCode.USAGE
    assert protocol.errors.EnvironmentProblem.exit_code is ExitCode.ENVIRONMENT
    assert protocol.errors.CorrectnessFailure.exit_code is ExitCode.CORRECTNESS


def test_no_command_keeps_a_table_of_its_own():
    sources = [*REPO.glob("engines/**/*.py"), *REPO.glob("bench/*.py"), *REPO.glob("conformance/*.py"),
               *REPO.glob("protocol/*.py"), *REPO.glob("benchmarks/*.py")]
    for path in sources:
        text = path.read_text()
        assert not re.search(r"^\s*EXIT_[A-Z_]+\s*[,=]", text, re.MULTILINE), path
        assert not re.search(r"\bos\._exit\(\d", text), path
    makefile = (REPO / "Makefile").read_text()
    assert "echo 3 >" not in makefile and "else 3)" not in makefile


def test_run_command_turns_help_and_the_errors_that_carry_a_status_into_exit_codes(capsys):
    """protocol.errors.run_command, the end of a command's main(): its status, --help's 0, and a
    ProtocolError's one line on stderr with that error's status; a bug keeps its traceback."""
    import argparse

    import pytest

    from protocol.errors import EnvironmentProblem, UsageError, run_command

    def command(argv, outcome=None):
        def work():
            parser = argparse.ArgumentParser(prog="cmd.py")
            parser.add_argument("--n", type=int, default=0)
            args = parser.parse_args(argv)
            if outcome is not None:
                raise outcome
            return ExitCode.CORRECTNESS if args.n else ExitCode.OK
        return run_command(work, prefix="cmd.py: error: ")

    assert command([]) == 0 and type(command([])) is int
    assert command(["--n", "1"]) == 1  # the command's own status, passed on
    assert capsys.readouterr().err == ""
    assert command(["--help"]) == 0 and "usage: cmd.py" in capsys.readouterr().out
    assert command([], UsageError("--n 0: at least 1")) == 2
    assert capsys.readouterr().err == "cmd.py: error: --n 0: at least 1\n"
    assert command([], EnvironmentProblem("no CUDA GPU here")) == 3
    assert capsys.readouterr().err == "cmd.py: error: no CUDA GPU here\n"
    assert command(["--n", "x"]) == 2  # argparse's own usage exit
    capsys.readouterr()
    # SystemExit with a message (a command's own, or a library's): printed and status 1, as Python
    # does without the wrapper, never a ValueError from int() on the message
    assert command([], SystemExit("no such thing")) == 1
    assert capsys.readouterr().err == "no such thing\n"
    assert command([], SystemExit(4)) == 4 and command([], SystemExit(None)) == 0
    with pytest.raises(KeyError):
        command([], KeyError("a bug"))
