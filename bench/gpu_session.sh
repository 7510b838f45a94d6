#!/usr/bin/env bash
# One device session: the GPU tests, the golden replay on both CUDA engines, the engine table and
# the A/B campaign, each under its own time cap inside one overall budget, logs under $OUT.
# Usage (on the GPU machine, from the repository root):
#   OUT=/some/dir bash bench/gpu_session.sh [budget_seconds] [steps...]
# steps: tests compare table campaign bench planted sanitize asv ab sweep noise switches phases stream whole (default:
#   tests compare table campaign). tests: `make precompile`'s module build (66 modules, a process per
#   core), then pytest -m gpu under TESTS_CAP seconds (default 480). With pytest-xdist
#   and execnet importable (their wheels in .whl: the GPU machine has neither), the GPU tests but the
#   slow ones run in TEST_WORKERS worker processes on the one GPU (xdist's -n: default 4, or auto;
#   0 or 1 runs them in one process as before):
#   1,473 GPU tests took 299 s so on an H100 at 337fa74 against over 530 s for 1,138 in one
#   process, which no longer fits one device call. The slow ones (marker slow: they time updates,
#   and their guard rightly rejects rounds while another process uses the GPU) run after them,
#   alone, under SLOW_TESTS_CAP (default 120).
#   ab        an interleaved A/B of two configurations into $OUT/ab: AB_SIDES (default
#             cuda:fused+group,cuda:fused+batched), AB_GRAPHS (roadNet-PA), AB_BATCHES (safe50k
#             local10k), AB_ARGS (more perf_ab.py engines options)
#             Module switches the engines read at each run (not sides): the wide O(n) passes
#             (issue 34 step 2) A/B'd interleaved batch by batch with `python3 bench/update_anatomy.py
#             --graph roadNet-PA --batch-size 100 --ab-env ENGINES_WIDE_PASSES=0,1` (--engine
#             operators for the other engine); ENGINES_WIDE_PASSES=1 before this script runs every
#             step with them
#             The captured fused update (issue 27 step 2) likewise: `--graph luxembourg_osm
#             --batch-size 100 --ab-env ENGINES_FUSED_CAPTURE=0,1`; the step switches runs them all
#   switches  the engines' undecided switches, each A/B'd interleaved batch by batch with its
#             first value off by bench/update_anatomy.py --ab-env (SWITCH_BATCHES batches of 100
#             changes, default 1000; SWITCH_CAP seconds each, default 90) into
#             $OUT/switch_<graph>_<engine>_<name>.log: SWITCHES, entries
#             GRAPH[/ENGINE]:NAME=A,B[@BASE=VALUE...] (ENGINE fused unless given; each BASE set on both
#             sides); default: the operators engine's captured start (ENGINES_OPERATORS_CAPTURED_START)
#             on luxembourg_osm and multi-hop pointer jumping (ENGINES_MULTI_HOP_JUMP) on both
#             engines there and on the fused engine on roadNet-PA (each within 2 % of off on the H100
#             at 9514757), and the fused update's polling for the commit's record
#             (ENGINES_FUSED_POLL_RECORD, 0.98-1.00x on the H100 at 6b6e9bc) on luxembourg_osm. The read-ahead wait was decided with
#             luxembourg_osm/operators:ENGINES_OPERATORS_WAIT_READ_AHEAD=0,1 there (960e793). The block appends and the chains were decided with
#             luxembourg_osm:ENGINES_BLOCK_APPEND=0,1 and ...:ENGINES_PUSH_CHAIN=0,2@ENGINES_BLOCK_APPEND=1
#             on luxembourg_osm and roadNet-PA (55cf5ac); the solo push, the captured update and the
#             wide passes at 1b2fb4c (SWITCHES=... runs them again)
#   sweep     `make sweep` into results/sweep, resuming it (issue 33: several calls of under 10
#             minutes finish it), SWEEP_GRAPHS as the Makefile's
#   campaign  perf_ab.py engines on CAMPAIGN_GRAPHS, resuming results/ (--allow-dirty)
#   phases    switches of the fused launch A/B'd by their phases: bench/fused_phases.py (the phase
#             clock; the launch and each phase's µs) with each value in turn, PHASES_ROUNDS times
#             alternated (default 3), into $OUT/phases_<graph>_<batch>_<name>_<value>_<round>.log,
#             the launch line of each printed: PHASES, entries GRAPH/BATCH:NAME=A,B (BATCH a gate's
#             batch, or random for --random-graph 4039,176000's 1 % batch); default the push's racy
#             pre-check (ENGINES_PUSH_PRECHECK=1,0, issue 34) on roadNet-PA safe50k and local10k and
#             on the dense random graph, where its atomics contend; PHASES_ARGS adds options (e.g.
#             --compute splits compute() too)
#   stream    issue 27's streaming record into results/stream, replacing it: bench/stream.py on
#             luxembourg_osm, 10,000 batches of 100 changes, fused, operators and host one after
#             another (the issue's command); STREAM_ARGS adds options (e.g. --interleave, into
#             $OUT/stream with STREAM_OUT)
#   whole     issue 27's whole-update table, with the command of its committed record
#             (results/whole_update): bench/engine_table.py --graphs WHOLE_GRAPHS (default roadNet-PA
#             road_usa) --batches safe50k local10k --random-graph 4039,176000 --table, writing
#             engine_table.json, engine_table.md and whole_update.md into results/whole_update beside
#             the older records (the folder's README names each record and its numbers: update it
#             by hand, and drop the records the new one replaces); road_usa's first preparation
#             takes minutes on a bare machine, so give this step its own call
#   bench     `make bench-commit`: the campaign into results/, replacing the committed one
#             (--force), unless BENCH_ARGS=--resume continues a cut campaign
#   planted   the planted-slowdown proof (protocol.md §7): fused against fused twice into $OUT,
#             with --plant-delay $PLANT (default B:3) and without; PLANT_ARGS sets the campaign
#             The planted checks (issue 32 item 4, protocol.md §7) ride on any campaign instead, off
#             by default: e.g. BENCH_ARGS="--planted-check 1" (step bench) or AB_ARGS="--planted-check 1"
#             (step ab) adds side A against itself with 1 % planted on the campaign's shortest and
#             longest cell, after its cells, and shows detected / missed in the report
#   noise     issue 32 step 1, what each noise source contributes (docs/protocol.md §2.5): A/A
#             campaigns of cuda:fused against itself (6 processes, 24 rounds, no control) into
#             $OUT/noise/<experiment>, each under its own cap (NOISE_CAP, default 80 s; 30 s of the
#             budget kept for the table) and resumed when its folder holds one (a campaign cut by its
#             cap continues in the next call, e.g. road_usa's first preparation): base, alloc-alternate
#             (--alloc-order alternate), l2-flush (--l2-flush), all (the three options with
#             --discard-after-clock-change 2) on roadNet-PA safe50k; planted-2 (--plant-delay B:2,
#             roadNet-PA safe50k) and planted-1 (--plant-delay B:1, road_usa local10k).
#             NOISE_EXPERIMENTS picks some (default all six). Then bench/noise_sources.py over the
#             folders there into $OUT/noise/noise_sources.md and .json
# The steps that write the committed records (campaign, bench, stream, whole, sweep: results/ below)
#   write them into results/ only on the GPU model those records are of (RECORD_GPU, default H200);
#   on another (a lent machine may be an H100 whatever was asked for) into $OUT/results, said in
#   the log; RESULTS_DIR=DIR names the folder outright.
# What comes back: $OUT/session.log, and everything else the steps wrote packed into
#   $OUT/session.tgz (the device tool returns at most 8 files; PACK_OUT=0 keeps them loose), the
#   results archive and $OUT/kernel-cache.tgz (CUPY_CACHE_DIR, default .cache/cupy in the tree:
#   unpack it into .cache/cupy and carry that path, and the next call compiles nothing again).
# A copy of the tree without .git (an offline machine that received the files only) gets its
# history back from .devgit/ssspab.bundle (`git bundle create .devgit/ssspab.bundle HEAD`), so the
# campaign records and asv see the real commit and a real cleanliness check.
set -u
OUT=${OUT:-/tmp/ssspab-gpu}
mkdir -p "$OUT"
BUDGET=${1:-570}
shift || true
STEPS=${*:-tests compare table campaign}
TEST_PATHS=${TEST_PATHS:-tests}
# the golden replay's configurations (conformance/replay.py CONFIGS; engines.config spellings)
COMPARE_CONFIGS=${COMPARE_CONFIGS:-host,cuda:fused,cuda:operators,cuda:fused+group,cuda:operators+group,cuda:operators-host+group}
TABLE_GRAPHS=${TABLE_GRAPHS:-roadNet-PA roadNet-CA rgg_n_2_20_s0}
CAMPAIGN_GRAPHS=${CAMPAIGN_GRAPHS:-roadNet-PA roadNet-CA rgg_n_2_20_s0 road_usa}
# the user-path table (engine region beside the whole update() call) and the small-graph target
TABLE_ARGS=${TABLE_ARGS:---table --random-graph 4039,176000}
END=$((SECONDS + BUDGET))
export PYTHONUNBUFFERED=1
# CuPy's kernel cache in the tree (.cache/ is ignored), so that a call can carry the last call's
# compiled modules (the engines compile 15 module variants; a fresh machine has none): the end of
# the session packs it into $OUT/kernel-cache.tgz; unpacked into .cache/cupy here and carried
# (carry .cache/cupy), the next call skips those compilations
export CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.cache/cupy}
# the folder of the real graphs, for the tests and the tools alike (bench/gates.py); the old name
# is read once here and then unset, so the tools do not repeat the note
[ -n "${SSSPAB_SHARED_DATA:-}" ] && echo "note: SSSPAB_SHARED_DATA is deprecated: set SSSPAB_DATA_DIR instead (read for now)" >&2
export SSSPAB_DATA_DIR=${SSSPAB_DATA_DIR:-${SSSPAB_SHARED_DATA:-$PWD/.devdata}}
unset SSSPAB_SHARED_DATA
LOG="$OUT/session.log"

left() { local l=$((END - SECONDS)); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
step() {  # step NAME CAP command...
  local name=$1 cap; cap=$(left "$2"); shift 2
  if [ "$cap" -le 5 ]; then echo "== $name: skipped, budget spent" | tee -a "$LOG"; return; fi
  echo "== $name (cap ${cap}s) $(date -u +%H:%M:%S)" | tee -a "$LOG"
  timeout --signal=TERM --kill-after=10 "$cap" "$@" > "$OUT/$name.log" 2>&1
  echo "== $name rc=$? $(date -u +%H:%M:%S)" | tee -a "$LOG"
  tail -n 25 "$OUT/$name.log" | tee -a "$LOG"
}
make_can_take() {  # make_can_take FOLDER STEP: the Makefile passes --out $(OUT) unquoted, so make
  # splits a folder whose path holds a space (a folder under such an $OUT, on a GPU that is not
  # the committed records' model): that step is skipped, said in the log
  case $1 in
    *[[:space:]]*) echo "== $2: skipped: make cannot pass a folder whose path holds a space ($1); set RESULTS_DIR" | tee -a "$LOG"
                   return 1 ;;
  esac
}

if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
if command -v git >/dev/null && [ -f .devgit/ssspab.bundle ]; then
  # a copied tree may belong to another user than the one running here: git would refuse it
  git config --global --add safe.directory "$PWD" 2>/dev/null
  # The bundle names the commit the shipped files are (a copy may come with no .git, or with a
  # stale one). Mixed reset: the index becomes that commit, the files stay as shipped, so
  # `git status` shows exactly how they differ from it. File modes are not compared: the copy
  # does not keep them.
  if ! git rev-parse --git-dir >/dev/null 2>&1; then
    [ -e .git ] && mv .git "/tmp/ssspab-unusable-git.$$"
    git init -q
  fi
  { git config core.fileMode false && git fetch -q .devgit/ssspab.bundle HEAD \
    && git reset -q FETCH_HEAD; } 2>&1 | tee -a "$LOG"
fi
# the campaign record's own view of the code (protocol.environment.git_state): make bench refuses
# a dirty tree, so here the campaign goes on with --allow-dirty and its record says "dirty"
GIT_STATE=$(python3 -c 'from protocol.environment import git_state as s; g = s()
print(g["commit"] or "none", "dirty" if g["dirty"] else "clean")')
echo "git: $GIT_STATE" | tee -a "$LOG"
git status --porcelain 2>/dev/null | head -5 | tee -a "$LOG"
case $GIT_STATE in *" clean") DIRTY_ARG= ;; *) DIRTY_ARG=--allow-dirty ;; esac
GPU_FACTS=$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv)
echo "$GPU_FACTS" | tee -a "$LOG"
# The committed results/ are the project's record of one GPU model, the H200 (README): the steps
# that write there (campaign, bench, stream, whole, sweep) do so only on a GPU of that name. A lent
# machine may be another model than the one asked for (an H100 when no H200 came), and its records
# would replace the H200's by accident; there they go into $OUT/results instead, said in the log.
# RESULTS_DIR names the folder outright (results: the committed one whatever the GPU);
# RECORD_GPU another model's name.
GPU_NAME=$(echo "$GPU_FACTS" | sed -n 2p | cut -d, -f1)  # the first GPU's name, under the header
if [ -z "${RESULTS_DIR:-}" ]; then
  case $GPU_NAME in
    *"${RECORD_GPU:-H200}"*) RESULTS_DIR=results ;;
    *) RESULTS_DIR="$OUT/results"
       echo "note: this GPU (${GPU_NAME:-none found}) is not the committed records' ${RECORD_GPU:-H200}: the steps that write records write them into $RESULTS_DIR, not results/ (RESULTS_DIR=results overrides)" | tee -a "$LOG" ;;
  esac
fi

for s in $STEPS; do
  case $s in
    tests)  # the modules first, in parallel (a fresh cache compiles 66 one by one otherwise)
      step precompile 240 python3 -m engines.sssp.cuda.precompile
      # xdist's plugin needs execnet, which `import xdist` alone does not load; TEST_WORKERS is
      # xdist's -n (a count, or auto), 0 or 1 one process
      case ${TEST_WORKERS:-4} in 0|1) workers= ;; *) workers=${TEST_WORKERS:-4} ;; esac
      if [ -n "$workers" ] && python3 -c "import xdist, execnet" 2>/dev/null; then
        # each worker its own CUDA context, time-sliced on the one GPU (no GPU test asserts a time)
        step gpu_tests ${TESTS_CAP:-480} python3 -m pytest -m "gpu and not slow" -n "$workers" \
             --dist load -q -rfE -p no:cacheprovider ${TEST_PATHS:-tests}
        step gpu_tests_slow ${SLOW_TESTS_CAP:-120} python3 -m pytest -m "gpu and slow" -q -rfE \
             -p no:cacheprovider ${TEST_PATHS:-tests}
      else
        step gpu_tests ${TESTS_CAP:-480} python3 -m pytest -m gpu -q -rfE -p no:cacheprovider ${TEST_PATHS:-tests}
      fi ;;
    compare) [ -f conformance/compare.py ] && step compare 150 python3 -m conformance compare --configs "$COMPARE_CONFIGS" ;;
    table) step engine_table 240 python3 bench/engine_table.py --graphs $TABLE_GRAPHS $TABLE_ARGS --out "$OUT/table" ;;
    campaign) step campaign 600 python3 bench/perf_ab.py engines --graphs $CAMPAIGN_GRAPHS \
                --batches safe50k unsafe50k local10k --out "$RESULTS_DIR" --resume --allow-dirty --no-progress ;;
    bench)  # the session's purpose is to replace results/ (bench-commit adds --force unless --resume);
            # on another GPU model the same campaign goes into $RESULTS_DIR (make bench OUT=...)
      if [ "$(realpath -m "$RESULTS_DIR")" = "$(realpath -m results)" ]; then
        step bench 600 make bench-commit DATA_DIR="$SSSPAB_DATA_DIR" \
             BENCH_ARGS="${BENCH_ARGS:-} --no-progress $DIRTY_ARG"
      elif make_can_take "$RESULTS_DIR" bench; then
        # replacing what is there, as bench-commit does, unless BENCH_ARGS continues it
        case " ${BENCH_ARGS:-} " in *" --resume "*) replace= ;; *) replace=--force ;; esac
        step bench 600 make bench OUT="$RESULTS_DIR" DATA_DIR="$SSSPAB_DATA_DIR" \
             BENCH_ARGS="$replace ${BENCH_ARGS:-} --no-progress $DIRTY_ARG"
      fi ;;
    planted)
      for run in planted unplanted; do
        step "$run" 300 python3 bench/perf_ab.py engines ${PLANT_ARGS:---graphs roadNet-PA --batches safe50k local10k \
             --objectives 0 --sides cuda:fused,cuda:fused --rounds 21} \
             $([ "$run" = planted ] && echo --plant-delay "${PLANT:-B:3}") \
             --out "$OUT/$run" --force --no-progress $DIRTY_ARG
      done ;;
    sanitize)  # compute-sanitizer, one tool per step (make sanitize; exit 9 = findings)
      for tool in memcheck racecheck synccheck initcheck; do
        step "sanitize_$tool" 150 make sanitize SANITIZE_TOOLS="$tool"
      done ;;
    ab) step ab 540 python3 bench/perf_ab.py engines --graphs ${AB_GRAPHS:-roadNet-PA} \
          --batches ${AB_BATCHES:-safe50k local10k} --objectives 0 \
          --sides "${AB_SIDES:-cuda:fused+group,cuda:fused+batched}" ${AB_ARGS:-} \
          --out "$OUT/ab" --force --no-progress $DIRTY_ARG ;;
    stream) step stream 300 python3 bench/stream.py --graph luxembourg_osm --batches 10000 --batch-size 100 \
              --engines fused operators host --out "${STREAM_OUT:-$RESULTS_DIR/stream}" --no-progress ${STREAM_ARGS:-} ;;
    whole) step whole_update 540 python3 bench/engine_table.py --graphs ${WHOLE_GRAPHS:-roadNet-PA road_usa} \
             --batches safe50k local10k --random-graph 4039,176000 --table --out "$RESULTS_DIR/whole_update" ;;
    sweep) make_can_take "$RESULTS_DIR/sweep" sweep && step sweep 570 make sweep DATA_DIR="$SSSPAB_DATA_DIR" \
             SWEEP_OUT="$RESULTS_DIR/sweep" SWEEP_ARGS="--resume --no-progress $DIRTY_ARG ${SWEEP_ARGS:-}" ;;
    noise)
      NOISE_C="python3 bench/perf_ab.py engines --sides cuda:fused,cuda:fused --objectives 0 --processes 6
               --rounds 24 --no-control --no-progress --resume $DIRTY_ARG"
      NOISE_PA="--graphs roadNet-PA --batches safe50k"
      NOISE_TABLE=()  # LABEL=DIR of each experiment with a campaign (an array: $OUT may hold spaces)
      NOISE_BASE=
      mkdir -p "$OUT/noise"
      for e in ${NOISE_EXPERIMENTS:-base alloc-alternate l2-flush all planted-2 planted-1}; do
        case $e in
          base) a="$NOISE_PA" ;;
          alloc-alternate) a="$NOISE_PA --alloc-order alternate" ;;
          l2-flush) a="$NOISE_PA --l2-flush" ;;
          all) a="$NOISE_PA --alloc-order alternate --l2-flush --discard-after-clock-change 2" ;;
          planted-2) a="$NOISE_PA --plant-delay B:2" ;;
          planted-1) a="--graphs road_usa --batches local10k --plant-delay B:1" ;;
          *) echo "== noise: unknown experiment $e (skipped)" | tee -a "$LOG"; continue ;;
        esac
        c=$((END - SECONDS - 30)); [ "$c" -gt "${NOISE_CAP:-80}" ] && c=${NOISE_CAP:-80}  # 30 s kept for the table
        step "noise_$e" "$c" $NOISE_C $a --out "$OUT/noise/$e"
        if [ -f "$OUT/noise/$e/campaign.json" ]; then
          NOISE_TABLE+=("$e=$OUT/noise/$e")
          # the experiments are compared with "base", or with the first one there when it is not
          { [ -z "$NOISE_BASE" ] || [ "$e" = base ]; } && NOISE_BASE=$e
        fi
      done
      if [ ${#NOISE_TABLE[@]} -gt 0 ]; then
        step noise_table 60 python3 bench/noise_sources.py "${NOISE_TABLE[@]}" --base "$NOISE_BASE" --out "$OUT/noise"
      else
        echo "== noise_table: skipped, no experiment has a campaign yet" | tee -a "$LOG"
      fi ;;
    switches)
      for sw in ${SWITCHES:-luxembourg_osm/operators:ENGINES_OPERATORS_CAPTURED_START=0,1 \
                 luxembourg_osm:ENGINES_MULTI_HOP_JUMP=0,1 luxembourg_osm/operators:ENGINES_MULTI_HOP_JUMP=0,1 \
                 roadNet-PA:ENGINES_MULTI_HOP_JUMP=0,1 luxembourg_osm:ENGINES_FUSED_POLL_RECORD=0,1}; do
        g=${sw%%:*}; rest=${sw#*:}; ab=${rest%%@*}; name=${ab%%=*}
        e=fused; case $g in */*) e=${g#*/}; g=${g%%/*} ;; esac
        base=; [ "$rest" = "$ab" ] || base=${rest#*@}; base=${base//@/ }
        step "switch_${g}_${e}_${name}" "${SWITCH_CAP:-90}" env $base python3 bench/update_anatomy.py --engine "$e" \
          --graph "$g" --batch-size 100 --batches "${SWITCH_BATCHES:-1000}" --ab-env "$ab"
      done ;;
    phases)
      for ph in ${PHASES:-roadNet-PA/safe50k:ENGINES_PUSH_PRECHECK=1,0 roadNet-PA/local10k:ENGINES_PUSH_PRECHECK=1,0 \
                 random/random:ENGINES_PUSH_PRECHECK=1,0}; do
        where=${ph%%:*}; ab=${ph#*:}; name=${ab%%=*}; values=${ab#*=}
        g=${where%%/*}; b=${where#*/}
        if [ "$g" = random ]; then input="--random-graph 4039,176000"; else input="--graph $g --batch $b"; fi
        for r in $(seq 1 "${PHASES_ROUNDS:-3}"); do
          for v in ${values//,/ }; do
            step "phases_${g}_${b}_${name}_${v}_$r" "${PHASES_CAP:-60}" env "$name=$v" python3 bench/fused_phases.py \
              $input --repeats "${PHASES_REPEATS:-15}" ${PHASES_ARGS:-}
            grep -h "launch (first stamp" "$OUT/phases_${g}_${b}_${name}_${v}_$r.log" | sed "s/^/  $name=$v round $r: /" | tee -a "$LOG"
          done
        done
      done ;;
    asv) step asv 240 bash -c 'python3 -m asv machine --yes --machine h200 >/dev/null && \
           SSSPAB_ASV_SCALE=${SSSPAB_ASV_SCALE:-small} ASV_PYTHONPATH=$PWD python3 -m asv run \
           --environment existing:python3 --machine h200 --set-commit-hash "$(git rev-parse HEAD)" \
           --record-samples --show-stderr && python3 -m asv show --machine h200 "$(git rev-parse HEAD)"' ;;
  esac
done
[ -d "$OUT/table" ] && cp "$OUT"/table/engine_table.* "$OUT"/ && rm -r "$OUT/table"
tar czf "$OUT/results.tar.gz" $(ls -d results .asv/results 2>/dev/null)
[ -d "$CUPY_CACHE_DIR" ] && tar czf "$OUT/kernel-cache.tgz" -C "$CUPY_CACHE_DIR" .
echo "== done $(date -u +%H:%M:%S)" | tee -a "$LOG"
# The device tool brings back at most 8 files from $OUT, two folders deep: everything the steps
# wrote (logs, campaigns, tables) goes back as one archive, $OUT/session.tgz, beside the session
# log and the two archives above. PACK_OUT=0 leaves them as they are.
[ "${PACK_OUT:-1}" = 0 ] || (cd "$OUT" && files=$(ls -A | grep -vxE 'session\.log|session\.tgz|results\.tar\.gz|kernel-cache\.tgz') \
  && [ -n "$files" ] && tar czf session.tgz $files && rm -rf $files)
