#!/usr/bin/env python3
"""Does ``make asv-compare`` judge the engine region right? A check on this machine, with asv.

    python benchmarks/asv_semantics.py [--rounds 4] [--factor 1.05] [--plant 10] [--bench REGEX]
                                  [--seed 0 | --real-clock]
    make asv-semantics            (the same, at SSSPAB_ASV_SCALE=tiny unless set)

Three result sets of the same code, their asv rounds interleaved as ``asv continuous
--interleave-rounds`` interleaves two commits' (so a drift of the machine hits all three): ``base``,
``again`` (unchanged) and ``planted`` (``SSSPAB_ASV_PLANT_PERCENT``: every engine region delayed by
that percentage of its warm-up median, ``benchmarks/common.py``). Each is an ``asv run
--environment existing`` of the engine-region benchmark (``EngineRegion.time_engine``) into its own
results folder, samples recorded; then asv's own comparison, the code ``asv continuous`` ends with
(``Compare.print_table``, statistics on, ``--factor``), judges ``base`` against ``again`` and
against ``planted``. Exit 0 when the unchanged engine is "not significantly changed" and the
planted slowdown is flagged as worse (the tables show each benchmark); 1 otherwise; 2 usage. No
virtualenv is built and nothing is installed (it runs where ``make asv`` does, the offline GPU
machine included).

The engines run for real, but by default every engine region lasts a seeded draw on a controlled
clock (``SSSPAB_ASV_SYNTHETIC``, ``benchmarks/synthetic.py``; ``--seed``), the planted delay
included: asv's runs, recorded samples and verdicts are then a function of the code alone, so the
check fails only when asv's pipeline, the benchmark's wiring (its clock, sample size, rounds and
the planted delay's calibration and place in the region) or the factor is wrong. On the real clock
a busy 2-core machine once read the planted 10 % as 1.00 and failed it. ``--real-clock`` measures
real time instead: a check of this machine and these settings, which its load can fail
(``tests/bench/test_asv_statistics.py`` tests asv's decision alone on seeded samples).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines import interrupt  # noqa: E402  (standard library only)

interrupt.guard(__name__, "asv_semantics.py")

from engines.exitcodes import ExitCode  # noqa: E402  (standard library only)

REPO = Path(__file__).resolve().parents[1]
# benchmarks/synthetic.py's switch, named here too: this script must not import asv's
# benchmark modules (they load the engines), only set their environment
SYNTHETIC_ENV = "SSSPAB_ASV_SYNTHETIC"
BENCH = r"^sssp_engines\.EngineRegion\.time_engine"
DEFAULT_FACTOR = 1.05  # the Makefile's ASV_FACTOR
SETS = ("base", "again", "planted")


def _config(tmp: Path, name: str) -> Path:
    """A copy of asv.conf.json whose results go to ``tmp/name`` (the repository's stay untouched)."""
    conf = json.loads((REPO / "asv.conf.json").read_text())
    conf.update(repo=str(REPO), benchmark_dir=str(REPO / conf["benchmark_dir"]),
                results_dir=str(tmp / name / "results"), html_dir=str(tmp / name / "html"),
                env_dir=str(tmp / "env"))
    path = tmp / f"asv.{name}.json"
    path.write_text(json.dumps(conf))
    return path


def _asv(*argv, env=None) -> None:
    cmd = [sys.executable, "-m", "asv", *map(str, argv)]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=REPO, env=env, check=True)


def _results(conf_path: Path, machine: str, commit: str):
    """The rows ``Compare.print_table`` reads, from one results folder."""
    from asv.config import Config
    from asv.results import iter_results_for_machine_and_hash

    conf = Config.load(str(conf_path))
    for result in iter_results_for_machine_and_hash(conf.results_dir, machine, commit):
        for key in result.get_all_result_keys():
            params = result.get_result_params(key)
            yield (key, params, result.get_result_value(key, params), result.get_result_stats(key, params),
                   result.get_result_samples(key, params), result.benchmark_version.get(key),
                   result.params["machine"], result.env_name)


def judge(confs: dict, machine: str, commit: str, before: str, after: str, factor: float) -> tuple[bool, bool]:
    """asv's verdict on ``after`` against ``before``: (worsened, improved), as asv continuous has it."""
    from asv.commands.compare import Compare
    from asv.config import Config

    print(f"\n== {before} -> {after} (factor {factor}, statistics on)", flush=True)
    return Compare.print_table(Config.load(str(confs[before])), commit, commit, factor=factor, split=True,
                               resultset_1=_results(confs[before], machine, commit),
                               resultset_2=_results(confs[after], machine, commit),
                               use_stats=True, machine=machine,
                               commit_names={commit: None})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4,
                        help="asv rounds (processes) per result set (default 4, EngineRegion.rounds)")
    parser.add_argument("--factor", type=float, default=DEFAULT_FACTOR,
                        help=f"asv's --factor, as make asv-compare uses it (default {DEFAULT_FACTOR})")
    parser.add_argument("--plant", type=float, default=10.0, help="the planted slowdown in percent (default 10)")
    parser.add_argument("--bench", default=BENCH, help=f"asv --bench regex (default {BENCH})")
    parser.add_argument("--machine", default="asv-semantics", help="asv machine name (default asv-semantics)")
    clock = parser.add_mutually_exclusive_group()
    clock.add_argument("--seed", type=int, default=0,
                       help="the seed of the engine regions' synthetic timings (default 0)")
    clock.add_argument("--real-clock", action="store_true",
                       help="time the engine regions on the real clock (a check of this machine: its load can fail it)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or not 0 < args.plant <= 100:
        parser.error("--rounds must be >= 1 and --plant in (0, 100]")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="asv-semantics-") as tmp_name:
        tmp = Path(tmp_name)
        confs = {name: _config(tmp, name) for name in SETS}
        _asv("machine", "--yes", "--machine", args.machine, "--config", confs["base"])
        base_env = {k: v for k, v in os.environ.items() if k not in ("SSSPAB_ASV_PLANT_PERCENT", SYNTHETIC_ENV)}
        base_env["ASV_PYTHONPATH"] = str(REPO)
        envs = {"base": base_env, "again": base_env,
                "planted": {**base_env, "SSSPAB_ASV_PLANT_PERCENT": f"{args.plant:g}"}}
        for round_index in range(args.rounds):  # interleaved, as asv continuous --interleave-rounds
            for name in SETS:
                env = envs[name]
                if not args.real_clock:  # each set and round (one process) draws its own timings
                    env = {**env, SYNTHETIC_ENV: f"{args.seed}/{name}/{round_index}"}
                _asv("run", "--config", confs[name], "--environment", f"existing:{sys.executable}",
                     "--machine", args.machine, "--set-commit-hash", commit, "--bench", args.bench,
                     "--attribute", "rounds=1", "--record-samples",
                     *(["--append-samples"] if round_index else []), "--show-stderr", env=env)
        unchanged = judge(confs, args.machine, commit, "base", "again", args.factor)
        planted = judge(confs, args.machine, commit, "base", "planted", args.factor)
    ok = True
    if any(unchanged):
        print(f"\nFAIL: the unchanged engine came out {'worse' if unchanged[0] else 'better'}", file=sys.stderr)
        ok = False
    else:
        print("\nunchanged engine: BENCHMARKS NOT SIGNIFICANTLY CHANGED")
    if not planted[0]:
        print(f"FAIL: the planted {args.plant:g} % slowdown was not flagged", file=sys.stderr)
        ok = False
    else:
        print(f"planted {args.plant:g} % slowdown: PERFORMANCE DECREASED (flagged)")
    return ExitCode.OK if ok else ExitCode.CORRECTNESS


if __name__ == "__main__":
    interrupt.run(main)
