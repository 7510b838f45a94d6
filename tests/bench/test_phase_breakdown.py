"""bench/phase_breakdown.py on the CPU: ncu's CSV summarized per kernel, and the refusal without
ncu."""

from __future__ import annotations

import re

import pytest

from bench import phase_breakdown as pb
from engines.exitcodes import ExitCode

CSV = '''==PROF== Connected to process 1
==PROF== Profiling "ops_push": 0%....50%....100% - 1 pass
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","python3","h","void ops_push<int, int>(int, const int *)","1","7","(256, 1, 1)","(264, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","4.50"
"1","1","python3","h","void ops_pack<int, int>(int)","1","7","(256, 1, 1)","(264, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","12,000"
"2","1","python3","h","void ops_push<int, int>(int, const int *)","1","7","(256, 1, 1)","(264, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","5.50"
'''


def test_summarize_sums_per_kernel_in_microseconds():
    rows = pb.summarize(CSV)
    assert rows == [("ops_pack", 1, pytest.approx(12.0)), ("ops_push", 2, pytest.approx(10.0))]
    text = pb.table(rows)
    assert "| ops_push | 2 | 10.0 | 5.00 | 45.5 % |" in text
    assert "| all | 3 | 22.0 |" in text


def test_summarize_refuses_output_without_a_table():
    with pytest.raises(ValueError, match="no ncu CSV table"):
        pb.summarize("==PROF== nothing profiled\n")


def test_without_ncu_it_says_so(monkeypatch, capsys):
    monkeypatch.delenv(pb.CHILD_ENV, raising=False)
    monkeypatch.setattr(pb.shutil, "which", lambda name: None)
    assert pb.main(["--graph", "roadNet-PA", "--batch", "safe50k"]) == 3
    assert "needs Nsight Compute" in capsys.readouterr().err


# -- the table file ------------------------------------------------------------------------------
@pytest.fixture
def profiled(monkeypatch):
    """ncu 'found' and 'run': its CSV output is CSV above, the writing of the table is under test."""
    monkeypatch.delenv(pb.CHILD_ENV, raising=False)
    monkeypatch.setattr(pb.shutil, "which", lambda name: "/opt/nsight/ncu")
    monkeypatch.setattr(pb.subprocess, "run",
                        lambda *args, **kwargs: pb.subprocess.CompletedProcess(args, 0, stdout=CSV, stderr=""))


def test_the_table_file_holds_the_printed_table(profiled, tmp_path, capsys):
    path = tmp_path / "phases.md"
    assert pb.main(["--graph", "g", "--batch", "b", "--table-file", str(path)]) == 0
    text = "g b objective 0, operators host loop:\n\n" + pb.table(pb.summarize(CSV))
    assert path.read_text() == text and capsys.readouterr().out == text + "\n"


def test_an_interrupted_write_keeps_the_earlier_table(profiled, tmp_path, interrupted_write, capsys):
    path = interrupted_write.of(tmp_path / "phases.md")
    assert pb.main(["--graph", "g", "--batch", "b", "--out", str(path)]) == ExitCode.ENVIRONMENT
    interrupted_write.check_kept()
    captured = capsys.readouterr()
    assert captured.out.startswith("g b objective 0, operators host loop:")  # printed whatever the file
    assert captured.err.endswith(f"phase_breakdown.py: cannot write {path}: No space left on device\n")


def test_a_table_file_that_cannot_be_written_is_refused_before_profiling(monkeypatch, tmp_path, capsys):
    """--table-file below a file: one line naming it, exit 2, and ncu never started."""
    monkeypatch.delenv(pb.CHILD_ENV, raising=False)
    monkeypatch.setattr(pb.shutil, "which", lambda name: "/opt/nsight/ncu")
    monkeypatch.setattr(pb.subprocess, "run", lambda *args, **kwargs: pytest.fail("profiled before the check"))
    (tmp_path / "file").write_text("")
    path = tmp_path / "file" / "phases.md"
    assert pb.main(["--graph", "g", "--batch", "b", "--table-file", str(path)]) == ExitCode.USAGE
    assert capsys.readouterr().err == (f"phase_breakdown.py: --table-file {path}: cannot write there "
                                       f"({tmp_path / 'file'} is not a folder)\n")


# -- what is profiled ----------------------------------------------------------------------------
@pytest.mark.parametrize("argv, kernel_filter, header", [
    ([], True, "g b objective 0, operators host loop:"),
    (["--part", "apply"], False, "g b objective 0, device apply (launch graph):"),
    (["--part", "apply", "--apply-launch", "python"], False, "g b objective 0, device apply (launch python):"),
])
def test_the_part_sets_the_kernel_filter_and_the_header(monkeypatch, capsys, argv, kernel_filter, header):
    """The engine's phases are the ops_ kernels and the change lists' staging (apply_changes, not
    the commit's apply_ kernels); the apply's are its own kernels and the library's sort and scan,
    so its profile takes every kernel of the range (the child's profiled range holds the commit
    only). The child gets the same arguments."""
    monkeypatch.delenv(pb.CHILD_ENV, raising=False)
    monkeypatch.setattr(pb.shutil, "which", lambda name: "/opt/nsight/ncu")
    seen = []

    def run(command, **kwargs):
        seen.append((command, kwargs["env"][pb.CHILD_ENV]))
        return pb.subprocess.CompletedProcess(command, 0, stdout=CSV, stderr="")

    monkeypatch.setattr(pb.subprocess, "run", run)
    assert pb.main(["--graph", "g", "--batch", "b", *argv]) == 0
    (command, child), = seen
    assert ("--kernel-name" in command) is kernel_filter and (pb.ENGINE_KERNELS in command) is kernel_filter
    assert re.fullmatch(pb.ENGINE_KERNELS[len("regex:"):] + ".*", "ops_push")
    assert re.fullmatch(pb.ENGINE_KERNELS[len("regex:"):] + ".*", "apply_changes")
    assert not re.match(pb.ENGINE_KERNELS[len("regex:"):], "apply_move")
    assert command[-len(argv) - 4:] == ["--graph", "g", "--batch", "b", *argv] and child == "1"
    assert capsys.readouterr().out.startswith(header + "\n\n| kernel |")


def test_a_bad_part_or_launch_is_a_usage_error(capsys):
    for argv in (["--part", "push"], ["--part", "apply", "--apply-launch", "cuda"]):
        with pytest.raises(SystemExit) as stop:
            pb.build_parser().parse_args(["--graph", "g", "--batch", "b", *argv])
        assert stop.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
