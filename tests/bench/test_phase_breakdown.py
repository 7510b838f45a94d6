"""bench/phase_breakdown.py on the CPU: ncu's CSV summarized per kernel, and the refusal without
ncu."""

from __future__ import annotations

import pytest

from bench import phase_breakdown as pb

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
