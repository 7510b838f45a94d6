"""Ctrl-C at any moment of a command exits 130 with one line (issue 28, item 4; engines/interrupt.py).

The moment is made deterministic: a ``sitecustomize`` put on the command's path installs an import
hook that, the first time a chosen module is imported, writes a marker file and sleeps. The test
waits for the marker, sends SIGINT, and the command is then inside that import: during the
command's own imports (NumPy, rich) or inside ``main`` (perf_ab.py imports its subcommands there).
Before engines/interrupt.py each of these printed a ``KeyboardInterrupt`` traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

HOOK = """
import importlib.abc, os, sys, time

class _SleepOnImport(importlib.abc.MetaPathFinder):
    armed = True

    def find_spec(self, name, path=None, target=None):
        if self.armed and name == os.environ["TEST_SLEEP_ON_IMPORT"]:
            type(self).armed = False
            open(os.environ["TEST_SLEEP_MARKER"], "w").close()
            time.sleep(60)
        return None  # the normal finders import it

sys.meta_path.insert(0, _SleepOnImport())
"""

COMMANDS = {
    # name: (argv after the interpreter, module the command is interrupted importing, its line's prefix)
    "engines.cli": (["-m", "engines.cli", "compute", "--help"], "numpy", "engines.cli"),
    "engines": (["-m", "engines", "compute", "--help"], "numpy", "engines"),
    "perf_ab.py in main": (["bench/perf_ab.py", "report", "--out", "nowhere"], "numpy", "perf_ab.py"),
    "compare.py": (["bench/compare.py", "--help"], "rich", "compare.py"),
    "engine_table.py": (["bench/engine_table.py", "--help"], "numpy", "engine_table.py"),
    "golden": (["-m", "bench.golden", "--help"], "numpy", "golden.py"),
    "conformance": (["-m", "conformance", "list", "--help"], "numpy", "conformance"),
    "stream.py": (["bench/stream.py", "--help"], "numpy", "stream.py"),
    "host_bench.py": (["bench/host_bench.py", "--help"], "numpy", "host_bench.py"),
    "update_anatomy.py": (["bench/update_anatomy.py", "--help"], "numpy", "update_anatomy.py"),
    "cuda-check": (["-m", "engines.cuda_check", "--help"], "numpy", "cuda-check"),
}


def _default_sigint():
    """In a child before its exec: Ctrl-C at its default, whatever this process inherited (pytest
    run in the background, nohup or `cmd &` without job control, ignores SIGINT; the child would
    inherit that, and guard() rightly leaves an ignored SIGINT alone:
    test_an_ignored_sigint_stays_ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("name", COMMANDS)
def test_ctrl_c_exits_130_with_one_line(tmp_path, name):
    argv, module, prog = COMMANDS[name]
    (tmp_path / "sitecustomize.py").write_text(HOOK)
    marker = tmp_path / "importing"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]),
               TEST_SLEEP_ON_IMPORT=module, TEST_SLEEP_MARKER=str(marker))
    proc = subprocess.Popen([sys.executable, *argv], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the command never imported " + module
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert err == f"{prog}: interrupted\n"
    assert out == ""


def test_an_imported_entry_point_leaves_sigint_alone():
    # a spawned worker re-imports the main script as __mp_main__: it must keep its own handling
    code = ("import signal, bench.perf_ab, engines.cli; "
            "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=120,
                   preexec_fn=_default_sigint)


def test_an_ignored_sigint_stays_ignored():
    code = ("import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); from engines import interrupt; "
            "interrupt.guard('__main__', 'x'); assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)


def test_ctrl_c_is_ignored_inside_ignored_and_restored_after(python_sigint):
    from engines import interrupt

    with interrupt.ignored():
        os.kill(os.getpid(), signal.SIGINT)  # would raise KeyboardInterrupt under the default handler
        time.sleep(0.01)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):  # and after the block Ctrl-C interrupts again
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)


def test_ignored_takes_the_signals_it_shields_and_restores_each(python_sigint):
    """bench/stream.py shields its partial record's writes from SIGINT and SIGTERM alike."""
    from engines import interrupt

    term_before = signal.getsignal(signal.SIGTERM)
    with interrupt.ignored(signal.SIGINT, signal.SIGTERM):
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGTERM)  # would end the process under the default action
        time.sleep(0.01)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) == term_before
