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


def test_the_switches_step_ab_tests_every_engine_switch():
    """The step ``switches``: each default entry is a valid update_anatomy.py command line (an
    engine after the graph's /, fused unless given; a base setting after @, an ``env`` assignment
    of a switch the engines know), each A/B's first value is off, and together they A/B the
    undecided switches: the operators engine's captured start on luxembourg_osm, multi-hop pointer
    jumping on both engines there and on the fused engine on roadNet-PA, and the fused update's
    polling for the commit's record on luxembourg_osm."""
    import shlex

    from bench import update_anatomy
    from engines.sssp.cuda import fused, jumps, operators

    text = SCRIPT.read_text()
    block = text[text.index("    switches)\n"):text.index("    asv)")]
    entries = re.search(r"\$\{SWITCHES:-(.*?)\}", block, re.S).group(1).replace("\\\n", " ").split()
    command = re.search(r'python3 bench/update_anatomy.py (.*?)\n\s*(--graph.*?)\n', block, re.S)
    argv_text = (command.group(1).rstrip("\\ ") + " " + command.group(2)).replace('"${SWITCH_BATCHES:-1000}"', "1000")
    switched = set()
    assert "env $base python3 bench/update_anatomy.py" in block
    assert 'e=fused; case $g in */*) e=${g#*/}; g=${g%%/*} ;; esac' in block
    for entry in entries:
        where, rest = entry.split(":", 1)
        graph, _, engine = where.partition("/")
        engine = engine or "fused"
        ab, *base = rest.split("@")
        argv = shlex.split(argv_text.replace('"$e"', engine).replace('"$g"', graph).replace('"$ab"', ab))
        args = update_anatomy.build_parser().parse_args(argv)
        assert (args.engine, args.graph, args.batch_size, args.batches, args.ab_env.text) == (
            engine, graph, 100, 1000, ab)
        name, values = ab.split("=")
        assert values.split(",")[0] in ("0", "off")  # each against off
        assert base == [], entry
        switched.add((graph, engine, name))
    assert switched == {
        ("luxembourg_osm", "operators", operators.CAPTURED_START_ENV),
        ("luxembourg_osm", "fused", jumps.JUMP_ENV), ("luxembourg_osm", "operators", jumps.JUMP_ENV),
        ("roadNet-PA", "fused", jumps.JUMP_ENV), ("luxembourg_osm", "fused", fused.POLL_RECORD_ENV)}


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("tar") is None, reason="needs bash and tar")
def test_the_session_packs_its_output_for_the_device_tool(tmp_path):
    """The device tool returns at most 8 files from $OUT: after its steps the script leaves the
    session log, the results archive, the kernel cache's archive and one archive of everything
    else there (the steps' logs, campaign folders, tables), which holds all of it."""
    import tarfile

    work = tmp_path / "work"  # outside any repository: no wheels, no bundle, no git state
    (work / "results").mkdir(parents=True)
    (work / "results" / "campaign.json").write_text("{}")
    out = tmp_path / "out"
    (out / "noise" / "base" / "rounds").mkdir(parents=True)
    for name in ("gpu_tests.log", "compare.log", "engine_table.md", "noise/base/campaign.json",
                 "noise/base/rounds/r1.json"):
        (out / name).write_text(name)
    cache = tmp_path / "cupy"
    cache.mkdir()
    (cache / "k.cubin").write_bytes(b"\0cubin")
    env = {"PATH": "/usr/bin:/bin", "OUT": str(out), "CUPY_CACHE_DIR": str(cache), "HOME": str(tmp_path)}
    run = subprocess.run(["bash", str(SCRIPT), "30", "no-such-step"], cwd=work, env=env,
                         capture_output=True, text=True, timeout=120)
    assert "== done" in run.stdout, run.stdout + run.stderr
    left = sorted(p.name for p in out.iterdir())
    assert left == ["kernel-cache.tgz", "results.tar.gz", "session.log", "session.tgz"], left
    with tarfile.open(out / "session.tgz") as archive:
        names = {n.rstrip("/") for n in archive.getnames()}
    assert {"gpu_tests.log", "compare.log", "engine_table.md", "noise/base/campaign.json",
            "noise/base/rounds/r1.json"} <= names
    with tarfile.open(out / "kernel-cache.tgz") as archive:
        assert "./k.cubin" in archive.getnames()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("importable, workers, spread", [
    ("xdist execnet", None, "4"), ("xdist execnet", "auto", "auto"), ("xdist execnet", "1", None),
    ("xdist execnet", "0", None), ("xdist", None, None), ("", None, None)])
def test_the_tests_step_spreads_the_gpu_tests_over_workers_when_it_can(tmp_path, importable, workers, spread):
    """The step ``tests`` with a stand-in python3 that logs its command lines: with pytest-xdist
    and execnet importable (xdist's plugin needs both; ``import xdist`` alone succeeds without
    execnet), the GPU tests but the slow ones go to TEST_WORKERS worker processes (xdist's -n:
    default 4, or auto), then the slow ones alone (their guard rejects rounds while another process
    uses the GPU); without them, or with TEST_WORKERS 0 or 1, every GPU test in one process."""
    env = {} if workers is None else {"TEST_WORKERS": workers}
    calls = _run_with_stand_ins(tmp_path, "tests", importable=importable, gpu="NVIDIA H200", env=env)
    pytest_calls = [c[2:] for c in calls if c[:3] == ["python3", "-m", "pytest"]]
    if spread is not None:
        assert len(pytest_calls) == 2, pytest_calls
        first, second = pytest_calls
        assert first[first.index("-m") + 1] == "gpu and not slow"
        assert first[first.index("-n") + 1] == spread and "--dist" in first
        assert second[second.index("-m") + 1] == "gpu and slow" and "-n" not in second
    else:
        assert len(pytest_calls) == 1, pytest_calls
        only = pytest_calls[0]
        assert only[only.index("-m") + 1] == "gpu" and "-n" not in only


def _run_with_stand_ins(tmp_path, steps, *, importable="", gpu="NVIDIA H200", env=None,
                        out_name="out") -> list[list[str]]:
    """Run the script's ``steps`` with stand-ins for python3 (``-c "import a, b"`` succeeds when
    every module named is in ``importable``), make and nvidia-smi (which names ``gpu``) that log
    their command lines; those lines, each split as the script passed it. $OUT is
    ``tmp_path / out_name``."""
    import shlex

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    log = tmp_path / "calls.log"
    logged = f'printf "%s\\n" "$(printf "%q " "$(basename "$0")" "$@")" >> {shlex.quote(str(log))}\n'
    stand_ins = {
        "python3": ('case "$*" in\n'
                    '  *git_state*) echo "none clean" ;;\n'
                    '  *"import "*) all="$*"; mods=${all##*import }\n'
                    '    for m in ${mods//,/ }; do\n'
                    f'      case " {importable} " in *" $m "*) ;; *) exit 1 ;; esac\n'
                    "    done ;;\n"
                    "esac\n"),
        "make": "",
        "nvidia-smi": f'echo "name, driver_version"; echo {shlex.quote(gpu + ", 580.00")}\n',
    }
    for name, body in stand_ins.items():
        path = bin_dir / name
        path.write_text("#!/bin/bash\n" + logged + body + "exit 0\n")
        path.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    full_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "OUT": str(tmp_path / out_name), "HOME": str(tmp_path),
                "CUPY_CACHE_DIR": str(tmp_path / "cupy"), **(env or {})}
    run = subprocess.run(["bash", str(SCRIPT), "60", *steps.split()], cwd=work, env=full_env,
                         capture_output=True, text=True, timeout=120)
    assert "== done" in run.stdout, run.stdout + run.stderr
    return [shlex.split(line) for line in log.read_text().splitlines()]


def _option(call: list[str], name: str) -> str:
    return call[call.index(name) + 1]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_committed_records_are_written_only_on_their_gpu(tmp_path):
    """The steps that write the committed records (campaign, bench, stream, whole, sweep) write into
    results/ on an H200 and into $OUT/results on any other GPU (a lent H100 must not replace the
    H200's records by accident); RESULTS_DIR=results overrides, RECORD_GPU names another model."""
    steps = "campaign bench stream whole sweep"

    def destinations(calls, out):
        table = next(c for c in calls if "bench/engine_table.py" in c)
        campaign = next(c for c in calls if "bench/perf_ab.py" in c and "engines" in c)
        stream = next(c for c in calls if "bench/stream.py" in c)
        makes = [c for c in calls if c[0] == "make"]
        bench = next(c for c in makes if c[1] in ("bench", "bench-commit"))
        sweep = next(c for c in makes if c[1] == "sweep")
        sweep_out = next(a.split("=", 1)[1] for a in sweep if a.startswith("SWEEP_OUT="))
        bench_out = next((a.split("=", 1)[1] for a in bench if a.startswith("OUT=")), None)
        return (_option(campaign, "--out"), bench[1], bench_out, _option(stream, "--out"),
                _option(table, "--out"), sweep_out)

    on_h200 = destinations(_run_with_stand_ins(tmp_path / "a", steps, gpu="NVIDIA H200"), None)
    assert on_h200 == ("results", "bench-commit", None, "results/stream", "results/whole_update", "results/sweep")
    out = tmp_path / "b" / "out"
    on_h100 = destinations(_run_with_stand_ins(tmp_path / "b", steps, gpu="NVIDIA H100 80GB HBM3"), out)
    assert on_h100 == (f"{out}/results", "bench", f"{out}/results", f"{out}/results/stream",
                       f"{out}/results/whole_update", f"{out}/results/sweep")
    assert "not the committed records' H200" in (out / "session.log").read_text()
    forced = destinations(_run_with_stand_ins(tmp_path / "c", steps, gpu="NVIDIA H100 80GB HBM3",
                                              env={"RESULTS_DIR": "results"}), None)
    assert forced == on_h200
    other = destinations(_run_with_stand_ins(tmp_path / "d", steps, gpu="NVIDIA H100 80GB HBM3",
                                             env={"RECORD_GPU": "H100"}), None)
    assert other == on_h200


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_bench_step_off_the_record_gpu_replaces_or_resumes_like_bench_commit(tmp_path):
    """On another GPU the step ``bench`` runs ``make bench`` into $OUT/results with --force (as
    bench-commit replaces, so ``campaign bench`` in one call does not stop at the campaign the
    first step wrote), or with the user's --resume instead; RESULTS_DIR naming the committed
    folder in another spelling is still bench-commit."""
    def bench_args(calls):
        bench = next(c for c in calls if c[0] == "make" and c[1] in ("bench", "bench-commit"))
        return bench[1], next(a.split("=", 1)[1] for a in bench if a.startswith("BENCH_ARGS=")).split()

    h100 = "NVIDIA H100 80GB HBM3"
    target, args = bench_args(_run_with_stand_ins(tmp_path / "a", "bench", gpu=h100))
    assert target == "bench" and "--force" in args and "--resume" not in args
    target, args = bench_args(_run_with_stand_ins(tmp_path / "b", "bench", gpu=h100, env={"BENCH_ARGS": "--resume"}))
    assert target == "bench" and "--resume" in args and "--force" not in args
    work = tmp_path / "c" / "work"
    target, _ = bench_args(_run_with_stand_ins(tmp_path / "c", "bench", gpu=h100,
                                               env={"RESULTS_DIR": f"{work}/results/"}))
    assert target == "bench-commit"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_records_folder_with_a_space_is_not_handed_to_make(tmp_path):
    """make splits the Makefile's unquoted --out at spaces: off the record GPU, under an $OUT that
    holds one, the make steps (bench, sweep) are skipped with a line saying why, and the steps
    that call Python directly get the whole path."""
    calls = _run_with_stand_ins(tmp_path, "bench sweep whole", gpu="NVIDIA H100 80GB HBM3", out_name="my out")
    assert not [c for c in calls if c[0] == "make"]
    table = next(c for c in calls if "bench/engine_table.py" in c)
    assert _option(table, "--out") == f"{tmp_path / 'my out'}/results/whole_update"
    log = (tmp_path / "my out" / "session.log").read_text()
    assert "== bench: skipped: make cannot pass a folder whose path holds a space" in log
    assert "== sweep: skipped: make cannot pass a folder whose path holds a space" in log
