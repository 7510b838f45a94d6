"""bench/update_anatomy.py's refusals on any machine: a user's mistake is one line and exit 2
before anything is loaded, a machine without a CUDA GPU exit 3 (it raised ModuleNotFoundError for
cupy, or a ValueError for a bad --random-graph or --ab-env, with a traceback)."""

from __future__ import annotations

import pytest

from bench import update_anatomy


@pytest.fixture
def no_gpu(monkeypatch):
    from bench import has_gpu

    monkeypatch.setattr(has_gpu, "gpu_problem", lambda: "no CUDA driver (a test)")


@pytest.mark.parametrize("argv, words", [
    ([], "name one graph: --graph NAME or --random-graph N,M"),
    (["--graph", "uspowergrid", "--random-graph", "100,200"], "name one graph"),
    (["--graph", "no-such-gate"], "unknown gate name(s): no-such-gate"),
    (["--graph", "uspowergrid", "--batches", "0"], "--batches 0: at least 1"),
    (["--graph", "uspowergrid", "--batch-size", "6"], "--batch-size 6: a positive multiple of 4"),
    (["--graph", "uspowergrid", "--batch-size", "-4"], "--batch-size -4: a positive multiple of 4"),
    (["--graph", "uspowergrid", "--profile-top", "0"], "--profile-top 0: at least 1"),
])
def test_usage_errors_are_one_line_and_exit_2_before_the_gpu_is_asked(no_gpu, argv, words, capsys):
    assert update_anatomy.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("update_anatomy.py: ") and words in err


def test_a_profile_out_that_is_a_folder_is_refused_before_measuring(no_gpu, tmp_path, capsys):
    assert update_anatomy.main(["--graph", "uspowergrid", "--profile-out", str(tmp_path)]) == 2
    assert f"--profile-out: {tmp_path} is a folder, not a file" in capsys.readouterr().err


@pytest.mark.parametrize("argv, words", [
    (["--random-graph", "10,x"], "expected N,M"),
    (["--random-graph", "1,1"], "at least 2 vertices"),
    (["--graph", "uspowergrid", "--ab-env", "FOO"], "expected NAME=A,B"),
    (["--graph", "uspowergrid", "--ab-env", "FOO=1,2,3"], "expected NAME=A,B"),
    (["--graph", "uspowergrid", "--ab-env", "FOO=1,1"], "two different values"),
])
def test_malformed_values_are_argparse_errors(no_gpu, argv, words, capsys):
    assert update_anatomy.main(argv) == 2
    err = capsys.readouterr().err
    # one usage error naming the option once: argparse puts "argument --X:" before the type's words
    option = argv[-2]
    assert words in err and "Traceback" not in err
    assert f"argument {option}: '{argv[-1]}': " in err and f"{option} '" not in err


def test_ab_env_is_read_into_a_name_and_two_values():
    ab = update_anatomy.parse_ab_env("ENGINES_FUSED_GRID=work,device")
    assert (ab.name, ab.a, ab.b) == ("ENGINES_FUSED_GRID", "work", "device")
    args = update_anatomy.build_parser().parse_args(["--graph", "uspowergrid", "--ab-env", "X=0,1"])
    # parsed once, while the arguments are read: the parsed arguments hold the structured value,
    # with the text as given (gpu_session.sh's test reads it)
    assert args.ab_env == update_anatomy.AbEnv("X", "0", "1", "X=0,1")
    assert args.ab_env.text == str(args.ab_env) == "X=0,1"
    assert update_anatomy.build_parser().parse_args(["--graph", "uspowergrid"]).ab_env is None
    args = update_anatomy.build_parser().parse_args(["--random-graph", "4039,176000"])
    assert args.random_graph == (4039, 176000)


def test_launch_ab_takes_the_parsed_value_and_reads_no_text_again(monkeypatch, capsys):
    """--ab-env was parsed by argparse's type and again in launch_ab, from the text; now launch_ab
    takes the parsed value: each side's graph is made under its value, each side sets its value
    before its update, in the alternating order, and the first --warmup batches are not timed."""
    import os

    import numpy as np

    from engines import sssp

    monkeypatch.setattr(update_anatomy, "parse_ab_env", lambda text: pytest.fail("--ab-env parsed again"))
    monkeypatch.setenv("SSSPAB_TEST_SWITCH", "unset")
    seen = []

    class Result:
        def to_numpy(self):
            return np.zeros(3), np.zeros(3, dtype=np.int64)

    def update(graph, batch, result):
        seen.append((batch, os.environ["SSSPAB_TEST_SWITCH"], graph))

    monkeypatch.setattr(sssp, "update", update)
    made = []

    def fresh(launch=None):
        made.append((launch, os.environ["SSSPAB_TEST_SWITCH"]))
        return f"graph{len(made)}", Result()

    ab = update_anatomy.AbEnv("SSSPAB_TEST_SWITCH", "0", "1", "SSSPAB_TEST_SWITCH=0,1")
    assert update_anatomy.launch_ab(["b0", "b1", "b2"], fresh, warmup=1, ab_env=ab) == 0
    # one launch, a graph per value, made under that value (a switch read when a graph goes to the device)
    assert made == [("graph", "0"), ("graph", "1")]
    assert seen == [("b0", "0", "graph1"), ("b0", "1", "graph2"), ("b1", "1", "graph2"), ("b1", "0", "graph1"),
                    ("b2", "0", "graph1"), ("b2", "1", "graph2")]
    out = capsys.readouterr().out
    assert "1 / 0 per batch: median" in out and "trees equal: True" in out
    assert os.environ["SSSPAB_TEST_SWITCH"] == "unset"  # put back as it was before the A/B


def test_launch_ab_puts_an_unset_variable_back_even_when_an_update_fails(monkeypatch):
    import os

    import numpy as np

    from engines import sssp

    monkeypatch.delenv("SSSPAB_TEST_SWITCH", raising=False)

    class Result:
        def to_numpy(self):
            return np.zeros(3), np.zeros(3, dtype=np.int64)

    def update(graph, batch, result):
        if batch == "b1":
            raise RuntimeError("an update failed")

    monkeypatch.setattr(sssp, "update", update)
    ab = update_anatomy.AbEnv("SSSPAB_TEST_SWITCH", "0", "1", "SSSPAB_TEST_SWITCH=0,1")
    with pytest.raises(RuntimeError, match="an update failed"):
        update_anatomy.launch_ab(["b0", "b1"], lambda launch=None: ("g", Result()), warmup=0, ab_env=ab)
    assert "SSSPAB_TEST_SWITCH" not in os.environ


@pytest.mark.parametrize("argv", [["--graph", "uspowergrid"], ["--micro"]])
def test_without_a_gpu_it_is_exit_3_naming_what_is_missing(no_gpu, argv, capsys):
    assert update_anatomy.main(argv) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs a CUDA GPU" in err and "no CUDA driver (a test)" in err
