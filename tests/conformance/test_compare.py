"""python -m conformance compare (and its alias bench/compare.py): the full host replay (the CI check), its exit codes and its mismatch report."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conformance import compare
from conformance.store import decode_json
from engines.sssp import backends

from .golden_helpers import corpus_copy, rewrite_consistently

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_full_corpus_replays_equal_on_host(capsys):
    """The CI check: every case of the stored corpus, host reference, exact comparison."""
    start = time.perf_counter()
    code = compare.main(["--configs", "host", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "all equal" in out and "host" in out
    assert time.perf_counter() - start < 120


@pytest.mark.slow
def test_module_entry_point_runs():
    """``python -m conformance compare`` from the repository root."""
    proc = subprocess.run([sys.executable, "-m", "conformance", "compare", "--configs", "host",
                           "--cases", "fixtures.empty*", "--quiet"], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all equal" in proc.stdout


@pytest.mark.slow
def test_script_entry_point_runs(tmp_path):
    """``python bench/compare.py`` (the alias kept for one release) works as a script from any
    working directory."""
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "compare.py"), "--configs", "host-delta1",
                           "--cases", "fixtures.*", "--quiet"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all equal" in proc.stdout


@pytest.mark.parametrize("argv, fragment", [
    (["--configs", "host,nope"], "unknown configuration"),
    (["--configs", "host,host"], "listed twice"),
    (["--configs", ""], "at least one"),
    (["--cases", "no-such-case*"], "no case matches"),
])
def test_usage_errors_exit_2(capsys, argv, fragment):
    assert compare.main(argv + ["--quiet"]) == 2
    assert fragment in capsys.readouterr().err


def test_bad_option_exits_2(capsys):
    assert compare.main(["--no-such-option"]) == 2


def test_missing_corpus_exits_77(tmp_path, capsys):
    assert compare.main(["--corpus", str(tmp_path / "none"), "--quiet"]) == 77
    assert "golden corpus missing" in capsys.readouterr().err


@pytest.mark.skipif(backends.cuda_available(), reason="a GPU is usable here")
@pytest.mark.parametrize("configs", ["cuda-fused", "host,cuda-operators", "cuda-automatic"])
def test_cuda_config_without_gpu_exits_3(capsys, configs):
    assert compare.main(["--configs", configs, "--quiet"]) == 3
    assert "CUDA GPU" in capsys.readouterr().err


def test_mutated_golden_file_fails_on_its_digest(tmp_path, capsys):
    copy = corpus_copy(tmp_path)
    path = copy / "random-tiny.npz"
    data = bytearray(path.read_bytes())
    data[-200] ^= 0xFF
    path.write_bytes(bytes(data))
    assert compare.main(["--corpus", str(copy), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "corrupt golden corpus" in err and "random-tiny.npz: sha256" in err


def test_consistent_rewrite_of_expected_parents_is_caught_by_the_comparison(tmp_path, capsys):
    """Expected arrays AND the manifest digest rewritten together: the digests pass, the exact
    comparison must still report the case and its first differing vertex."""
    copy = corpus_copy(tmp_path)
    name = "noncanonical.s03.local"
    changed = {}

    def edit(members):
        meta = decode_json(members["meta"])
        case = next(c for c in meta["cases"] if c["name"] == name)
        p = members[f"cases/{name}/p_out"].copy()
        v = int(np.flatnonzero(p >= 0)[0])
        p[v] = (p[v] + 1) % case["n_after"]
        changed["v"] = v
        members[f"cases/{name}/p_out"] = p

    rewrite_consistently(copy, "noncanonical.npz", edit)
    code = compare.main(["--corpus", str(copy), "--cases", "noncanonical.s03.*", "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    assert f"MISMATCH noncanonical.s03.local on host, first differing vertex {changed['v']}" in out
    assert f"update parents differ at vertex {changed['v']}" in out
    # the nine other cases of the seed still replay equal: 10 cases, 9 equal, 1 different
    assert re.search(r"host\s*\W\s*10\s*\W\s*9\s*\W\s*1\s", out), out


def _runnable_cuda_configs() -> list[str]:
    if not backends.cuda_available():
        return []
    return [name for name in ("cuda-fused", "cuda-operators") if compare.gpu_problem(compare.parse_configs(name)) is None]


@pytest.mark.gpu
@pytest.mark.skipif(not backends.cuda_available(), reason="needs CuPy and a CUDA GPU")
def test_full_corpus_replays_equal_on_cuda(capsys):
    """On a GPU: every case on every runnable CUDA engine, byte for byte against the host reference."""
    configs = _runnable_cuda_configs()
    assert "cuda-operators" in configs  # the operators engine runs on every GPU
    code = compare.main(["--configs", ",".join(["host"] + configs), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
