"""bench/gpu_session.sh without a GPU: the shell parses, and the steps its usage names are the steps
its case statement runs (a step added on one side only would be skipped silently on the device)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_session.sh"


def _usage_steps(text: str) -> set[str]:
    usage = re.search(r"^# steps: (.*?)\(default", text, re.M | re.S)
    assert usage, "the usage's steps line"
    return set(usage.group(1).replace("#", " ").split())


def _case_steps(text: str) -> set[str]:
    loop = text[text.index('for s in $STEPS; do'):]
    return set(re.findall(r"^    (\w+)\)", loop, re.M))


def test_usage_names_every_step_the_script_runs():
    text = SCRIPT.read_text()
    assert _usage_steps(text) == _case_steps(text)
    assert {"tests", "compare", "ab", "sweep"} <= _case_steps(text)


def test_default_steps_exist():
    text = SCRIPT.read_text()
    default = re.search(r'STEPS=\$\{\*:-([^}]*)\}', text).group(1).split()
    assert set(default) <= _case_steps(text)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_script_parses():
    run = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
