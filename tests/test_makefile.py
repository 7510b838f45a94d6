"""The Makefile's targets as a newcomer meets them (issue 31, item 4): `make help` names every one,
`make bench` writes a new campaign outside the committed results/, `make bench-commit` is the one
target that replaces it, `make report` needs the records folder named."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")


def _make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60)


def _targets() -> set[str]:
    text = (REPO / "Makefile").read_text()
    # rule lines: `name: prerequisites`, not variable assignments (`:=`) nor special targets (.PHONY)
    return {m.group(1) for m in re.finditer(r"^([a-z][a-z0-9-]*)\s*:(?!=)", text, re.MULTILINE)}


def test_help_names_every_target():
    targets = _targets()
    assert {"bench", "bench-commit", "test", "test-fast", "prepare", "report", "compare", "asv"} <= targets
    listed = set(re.findall(r"[a-z][a-z0-9-]*", _make("help").stdout))
    assert targets - listed == set()


def test_bench_writes_a_new_campaign_under_runs():
    dry = _make("-n", "bench").stdout
    [out] = set(re.findall(r"--out (\S+)", dry))
    assert re.fullmatch(r"runs/\d{8}-\d{6}", out)  # one time stamp for every step of one make
    assert "--force" not in dry
    assert subprocess.run(["git", "check-ignore", "-q", f"{out}/M7.md"], cwd=REPO).returncode == 0


def test_bench_commit_replaces_the_committed_campaign():
    dry = _make("-n", "bench-commit").stdout
    assert re.search(r"make .*bench OUT=results\s.*BENCH_ARGS=\"--force ", dry.replace("\\\n", " "))
    resumed = _make("-n", "bench-commit", "BENCH_ARGS=--resume").stdout
    assert "--force" not in resumed and "--resume" in resumed


def test_bench_measures_the_floor_unless_told_not_to():
    def campaign_lines(*variables):
        lines = _make("-n", "bench", *variables).stdout.splitlines()
        return [line for line in lines if "perf_ab.py engines" in line]

    perf_ab = campaign_lines()
    assert perf_ab and all("--floor" in line for line in perf_ab)
    without = campaign_lines("BENCH_FLOOR=")
    assert without and not any("--floor" in line for line in without)


def test_report_wants_the_records_folder_named():
    proc = _make("report")
    assert proc.returncode == 2 and "usage: make report OUT=" in proc.stdout
    assert "--out results --write" in _make("-n", "report", "OUT=results").stdout


def test_the_data_folder_has_one_name_in_the_environment(tmp_path):
    dry = _make("-n", "prepare", f"DATA_DIR={tmp_path}").stdout
    assert f"--data-dir {tmp_path}" in dry
    env_line = subprocess.run(["make", "--no-print-directory", "-n", "prepare"], cwd=REPO, capture_output=True,
                              text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "SSSPAB_SHARED_DATA": str(tmp_path)})
    assert f"--data-dir {tmp_path}" in env_line.stdout  # the old name, read for now
    assert "SSSPAB_SHARED_DATA is deprecated" in env_line.stdout + env_line.stderr
