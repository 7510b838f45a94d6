# ssspab: `make bench` (the A/B campaign on a CUDA GPU) and `make test` (the test suite).
# Both install what is missing first (pip, with registry access) and install nothing on a
# machine that already has every dependency (the offline GPU machine). What is installed:
# `pip install -e .` the engines and their readers (REQUIRED), the `bench` extra the A/B service
# (BENCH_REQUIRED), the `test` extra the test tools and the service (TEST_REQUIRED).

PYTHON ?= python3
PYTEST_ARGS ?=
# The folder of the real graph files: DATA_DIR=, else $SSSPAB_DATA_DIR (the one environment
# variable the tools and tests read), else ../shared/data (also the tools' own default). A folder
# that is given is exported to every recipe as SSSPAB_DATA_DIR, so `make test DATA_DIR=...` finds
# the same graphs as `make bench`; the default is not, so records name no folder nobody chose.
ifneq ($(SSSPAB_SHARED_DATA),)
ifeq ($(SSSPAB_DATA_DIR),)
$(info note: SSSPAB_SHARED_DATA is deprecated: set SSSPAB_DATA_DIR instead (read for now))
SSSPAB_DATA_DIR := $(SSSPAB_SHARED_DATA)
endif
endif
DATA_DIR ?= $(or $(SSSPAB_DATA_DIR),$(abspath ../shared/data))
ifneq ($(origin DATA_DIR)$(SSSPAB_DATA_DIR),file)
export SSSPAB_DATA_DIR := $(abspath $(DATA_DIR))
endif
unexport SSSPAB_SHARED_DATA
# make bench writes a new campaign into a fresh folder under runs/ (git-ignored), never into the
# committed one: `make bench-commit` is the one target that replaces results/ (the campaign the
# engine issues cite). Simply expanded, so the time stamp is taken once per make.
ifeq ($(origin OUT),undefined)
OUT := runs/$(shell date +%Y%m%d-%H%M%S)
endif
GATES ?= roadNet-PA roadNet-CA rgg_n_2_20_s0 road_usa
BATCHES ?= safe50k unsafe50k local10k
# extra options of `perf_ab.py engines` for make bench, e.g. --resume (continue a cut campaign) or
# --force (replace the campaign recorded in OUT: without one of them a folder that holds one is refused)
BENCH_ARGS ?=
# the measurement protocol preset of make bench (perf_ab.py engines --protocol; BENCH_ARGS options
# win over it): standard, each option's own default; precise, 6 worker processes, alternating
# allocation order, the cell's adaptive stop at +-1 %, an A/A control on every gate and the 1 %
# planted check (docs/protocol.md 2.5). standard stays the default until a full H200 campaign with
# precise has met issue 32's targets; a campaign is resumed with the preset it was started with.
BENCH_PROTOCOL ?= standard
# make bench measures the fused engine's latency floor on the GPU first (perf_ab.py engines --floor:
# one grid barrier + one dependent chain, a few seconds; a resumed campaign keeps its own) so the
# report shows each fused cell beside its floor (issue 34); BENCH_FLOOR= leaves it out
BENCH_FLOOR ?= --floor
REQUIRED = numpy scipy numba pandas
BENCH_REQUIRED = pyarrow jinja2 matplotlib psutil rich tqdm
TEST_REQUIRED = pytest hypothesis
# make reports every failing recipe as status 2; `make test` leaves pytest's own status here
# (0 passed, 1 failures, 2 interrupted, 3 internal error, 4 usage, 5 no tests) for .ci/run
PYTEST_STATUS ?= .cache/pytest-status
# ... and `make bench` the status of its failing step (or of the campaign): protocol.md §8, e.g.
# 3 without a GPU, 2 when --out holds a campaign (BENCH_ARGS=--force replaces it, --resume continues it)
BENCH_STATUS ?= .cache/bench-status

.PHONY: compare help deps bench-deps test-deps test test-fast test-gpu cuda-check precompile prepare bench bench-commit \
	bench-host report

# every target a user runs (tests/test_makefile.py checks that none is missing)
help:
	@echo "make bench          A/B campaign fused vs operators on the four gates (CUDA GPU) into a new"
	@echo "                    runs/<date-time>/ (OUT=DIR elsewhere; BENCH_ARGS=--resume continues one;"
	@echo "                    BENCH_PROTOCOL=precise: 6 processes, alternate allocation, adaptive +-1 % per cell,"
	@echo "                    A/A on every gate, 1 % planted check; default standard)"
	@echo "make bench-commit   the same into results/, replacing the committed campaign (--force)"
	@echo "make bench-host     a small host-vs-host campaign that runs anywhere (report: .cache/bench-host/M7.md)"
	@echo "make sweep          update() against compute() over batch sizes 10..1M (SWEEP_ENGINES, default the CUDA"
	@echo "                    engines) into a new runs/sweep-<date-time>/ (SWEEP_OUT=DIR; SWEEP_ARGS=--resume)"
	@echo "make sweep-host     the sweep with the host engine on uspowergrid (report: .cache/sweep-host/sweep.md)"
	@echo "make prepare        build and cache the gate graphs, weights, trees and batches (DATA_DIR=real files)"
	@echo "make report OUT=DIR re-render DIR/M7.md and its plots from the records in DIR"
	@echo "make test           the test suite (GPU tests skip without a GPU)"
	@echo "make test-fast      the tests not marked slow or gpu (under 2 minutes on 2 cores)"
	@echo "make test-gpu       only the GPU tests"
	@echo "make compare        replay the golden corpus on CONFIGS (default host; e.g. host,cuda:fused,cuda:operators)"
	@echo "make cuda-check     compile every CUDA source with nvcc -arch=sm_90 (register/spill report)"
	@echo "make precompile     build every CUDA module variant into CuPy's cache, in parallel (needs a GPU)"
	@echo "make sanitize       compute-sanitizer memcheck/racecheck/synccheck/initcheck on both CUDA engines"
	@echo "make asv            asv benchmarks of HEAD in this Python (results under .asv/results)"
	@echo "make asv-compare BASE=REV          asv continuous BASE against HEAD (builds virtualenvs)"
	@echo "make asv-compare-offline BASE=REV  the same comparison in this Python, without virtualenvs"
	@echo "make asv-semantics  check that asv flags a planted 10 % slowdown and not an unchanged engine"
	@echo "make deps / bench-deps / test-deps / asv-deps   install what the others need, only if missing"
	@echo "make help           this list (the default target)"

# Install only when an import fails, so an offline machine with everything installed is untouched:
# $(call install_missing,MODULES,PIP TARGET) is one shell command whose status is pip's when it ran.
install_missing = $(PYTHON) -c "import importlib, sys; [importlib.import_module(m) for m in sys.argv[1:]]" $(1) \
	  2>/dev/null || $(PYTHON) -m pip install -e "$(2)"

deps:
	@$(call install_missing,$(REQUIRED),.)

bench-deps:
	@$(call install_missing,$(REQUIRED) $(BENCH_REQUIRED),.[bench])

test-deps:
	@$(call install_missing,$(REQUIRED) $(BENCH_REQUIRED) $(TEST_REQUIRED),.[test])

test: test-deps
	@mkdir -p $(dir $(PYTEST_STATUS)); rm -f $(PYTEST_STATUS)
	$(PYTHON) -m pytest $(PYTEST_ARGS); status=$$?; echo $$status > $(PYTEST_STATUS); exit $$status

# the CPU tests that take seconds: the slow ones (campaigns, stand-in graphs, subprocess sweeps,
# marked `slow`) and the GPU ones (skipped without a GPU anyway) are left to `make test`
test-fast: test-deps
	$(PYTHON) -m pytest -m "not slow and not gpu" $(PYTEST_ARGS)

test-gpu: test-deps
	$(PYTHON) -m pytest -m gpu tests/gpu $(PYTEST_ARGS)

cuda-check: deps
	$(PYTHON) -m engines.cuda_check

precompile: deps
	$(PYTHON) -m engines.sssp.cuda.precompile

prepare: bench-deps
	$(PYTHON) bench/perf_ab.py prepare --graphs $(GATES) --data-dir $(DATA_DIR)

# the campaign's command line, printed and then run (the sync check and BENCH_ARGS follow it)
BENCH_CAMPAIGN = $(PYTHON) bench/perf_ab.py engines --graphs $(GATES) --batches $(BATCHES) --data-dir $(DATA_DIR) \
  --out $(OUT) --protocol $(BENCH_PROTOCOL) $(BENCH_FLOOR)

# The GPU is checked first, by the driver alone (bench/has_gpu.py imports only the standard
# library): without one nothing is installed or prepared. CuPy is checked after the install.
bench:
	@mkdir -p $(dir $(BENCH_STATUS)); rm -f $(BENCH_STATUS)
	@$(PYTHON) bench/has_gpu.py || { status=$$?; \
	  echo "make bench needs CuPy and a CUDA GPU (pip install -e '.[cuda]' on a GPU machine): status $$status"; \
	  echo "(make itself exits 2 for any failed step; the step's own status is in $(BENCH_STATUS))."; \
	  echo "Without one, 'make bench-host' runs a small host-vs-host campaign to show the machinery."; \
	  echo $$status > $(BENCH_STATUS); exit $$status; }
	@$(call install_missing,$(REQUIRED) $(BENCH_REQUIRED),.[bench]) || { status=$$?; echo $$status > $(BENCH_STATUS); exit $$status; }
	@$(PYTHON) -c "import sys, engines.sssp.cuda as c; from engines.exitcodes import ExitCode as E; \
	  sys.exit(E.OK if c.is_available() else E.ENVIRONMENT)" || { status=$$?; \
	  echo "make bench needs CuPy and a CUDA GPU (pip install -e '.[cuda]' on a GPU machine): status $$status"; \
	  echo "(make itself exits 2 for any failed step; the step's own status is in $(BENCH_STATUS))."; \
	  echo "Without one, 'make bench-host' runs a small host-vs-host campaign to show the machinery."; \
	  echo $$status > $(BENCH_STATUS); exit $$status; }
	@echo "make bench: the campaign goes into $(OUT)/"
	$(PYTHON) bench/perf_ab.py prepare --graphs $(GATES) --data-dir $(DATA_DIR) \
	  || { status=$$?; echo $$status > $(BENCH_STATUS); exit $$status; }
	@verify=$$($(PYTHON) -c "import engines.sssp.cuda.syncs as s; print('--verify-syncs' if s.is_available() else '')"); \
	  [ -n "$$verify" ] || echo "make bench: CUPTI (cupti-python) is not importable: the sync counts stay unverified"; \
	  echo "$(BENCH_CAMPAIGN) $$verify $(BENCH_ARGS)"; \
	  $(BENCH_CAMPAIGN) $$verify $(BENCH_ARGS); \
	  status=$$?; echo $$status > $(BENCH_STATUS); \
	  if [ -f $(OUT)/campaign.json ]; then echo "make bench: the campaign's records are in $(OUT)/, its report $(OUT)/M7.md"; \
	    [ $$status -eq 0 ] || echo "(make bench OUT=$(OUT)$(if $(filter-out standard,$(BENCH_PROTOCOL)), BENCH_PROTOCOL=$(BENCH_PROTOCOL)) BENCH_ARGS=--resume continues it)"; fi; \
	  exit $$status

# The committed campaign (results/), replaced: the one target that writes there. BENCH_ARGS=--resume
# continues a cut one instead of starting over; BENCH_PROTOCOL reaches make bench as make passes
# every command-line variable to the sub-make.
bench-commit:
	@$(MAKE) --no-print-directory bench OUT=results \
	  BENCH_ARGS="$(if $(filter --resume,$(BENCH_ARGS)),$(BENCH_ARGS),--force $(BENCH_ARGS))"

bench-host: bench-deps
	$(PYTHON) bench/perf_ab.py engines --sides host,host --graphs uspowergrid --batches safe50k local10k \
	  --rounds 21 --max-foreign-cpu 2 --allow-dirty --data-dir $(DATA_DIR) --out .cache/bench-host --force

# OUT must be named: the default is a new, empty runs/ folder
report: bench-deps
	@[ "$(origin OUT)" = "command line" ] || [ "$(origin OUT)" = "environment" ] \
	  || { echo "usage: make report OUT=<records folder> (re-renders its M7.md and plots there)"; exit 2; }
	$(PYTHON) bench/perf_ab.py report --out $(OUT) --write

# -- asv (protocol.md §11) --------------------------------------------------------------------------
# `make asv`: HEAD in the current Python ("existing" environment: installs nothing, works offline),
# results stored per commit under .asv/results. `make asv-compare BASE=<rev>`: asv continuous, which
# builds BASE and HEAD into one virtualenv in turn (needs registry access) and interleaves their
# rounds, so a drift of the machine hits both. `make asv-compare-offline BASE=<rev>`: the same
# comparison where no environment can be built (the offline GPU machine): each side runs in the
# current Python importing its own tree (asv passes ASV_PYTHONPATH), then asv compare.
# ASV_ARGS adds options (e.g. --quick, -b Update); the input size comes from
# SSSPAB_ASV_SCALE=full|small|tiny (default full: about 2 M vertices).
# A change is flagged when asv's statistics (Mann-Whitney on the recorded samples, p < 0.002) say
# the two commits differ AND their medians differ by more than ASV_FACTOR; the engine region is a
# time_ benchmark (EngineRegion) so that it has samples. --quick leaves one sample: factor only.
# `make asv-semantics` checks that choice on this machine: an unchanged engine must come out "not
# significantly changed", a planted 10 % slowdown flagged (benchmarks/asv_semantics.py, no virtualenv).
ASV_ARGS ?=
ASV_FACTOR ?= 1.05
ASV_MACHINE ?= $(shell hostname 2>/dev/null || echo local)
ASV_BASE_TREE ?= .asv/base-tree
ASV_RUN = $(PYTHON) -m asv run --environment existing:$(PYTHON) --machine $(ASV_MACHINE) --record-samples

.PHONY: asv-deps asv asv-compare asv-compare-offline asv-semantics

asv-deps:
	@$(call install_missing,$(REQUIRED) $(BENCH_REQUIRED) asv,.[asv])
	$(PYTHON) -m asv machine --yes --machine $(ASV_MACHINE) >/dev/null

asv: asv-deps
	ASV_PYTHONPATH=$(CURDIR) $(ASV_RUN) --set-commit-hash $$(git rev-parse HEAD) $(ASV_ARGS)

asv-compare: asv-deps
	@test -n "$(BASE)" || { echo "usage: make asv-compare BASE=<rev>"; exit 2; }
	$(PYTHON) -m asv continuous --interleave-rounds --record-samples --split --factor $(ASV_FACTOR) \
	  --machine $(ASV_MACHINE) $(ASV_ARGS) $(BASE) HEAD

asv-compare-offline: asv-deps
	@test -n "$(BASE)" || { echo "usage: make asv-compare-offline BASE=<rev>"; exit 2; }
	rm -rf $(ASV_BASE_TREE) && git worktree prune
	git worktree add --detach $(ASV_BASE_TREE) $(BASE)
	ASV_PYTHONPATH=$(CURDIR)/$(ASV_BASE_TREE) $(ASV_RUN) --set-commit-hash $$(git rev-parse $(BASE)) $(ASV_ARGS) \
	  || { git worktree remove --force $(ASV_BASE_TREE); exit 1; }
	git worktree remove --force $(ASV_BASE_TREE)
	ASV_PYTHONPATH=$(CURDIR) $(ASV_RUN) --set-commit-hash $$(git rev-parse HEAD) $(ASV_ARGS)
	$(PYTHON) -m asv compare --machine $(ASV_MACHINE) --split --factor $(ASV_FACTOR) $$(git rev-parse $(BASE)) $$(git rev-parse HEAD)

asv-semantics: asv-deps
	SSSPAB_ASV_SCALE=$${SSSPAB_ASV_SCALE:-tiny} $(PYTHON) benchmarks/asv_semantics.py --factor $(ASV_FACTOR)

# compute-sanitizer (CUDA toolkit) over a small golden subset on both CUDA engines, one tool after
# the other; exit 9 when a tool reports an error. Small cases keep each tool to minutes.
SANITIZE_TOOLS ?= memcheck racecheck synccheck initcheck
SANITIZE_CASES ?= fixtures.* packing.* random-tiny.s00.* grid-small.s00.* grid-medium.s00.*
# both engines, the operators engine in both loop modes (engines.config spellings)
SANITIZE_CONFIGS ?= cuda:fused,cuda:operators,cuda:operators-host
# racecheck looks for shared-memory hazards within a block, at a cost that grows with blocks x
# block barriers: the fused kernel's per-phase block reads over its full grid (528 blocks on an
# H200) did not finish in 420 s. A few blocks run the same code (results never depend on the grid).
SANITIZE_RACECHECK_BLOCKS ?= 8
# and fewer cases: on the H200 racecheck took 18 / 37 / 21 s over the 40 fixtures on cuda:fused /
# cuda:operators / cuda:operators-host (0 hazards), and did not finish in 100 s once the packing
# and random-tiny cases were added
SANITIZE_RACECHECK_CASES ?= fixtures.*

.PHONY: sanitize
sanitize: bench-deps
	@for tool in $(SANITIZE_TOOLS); do echo "== compute-sanitizer --tool $$tool"; \
	  grid=; cases="$(foreach c,$(SANITIZE_CASES),--cases '$(c)')"; \
	  if [ $$tool = racecheck ]; then grid="ENGINES_FUSED_MAX_BLOCKS=$(SANITIZE_RACECHECK_BLOCKS) ENGINES_OPERATORS_LOOP_BLOCKS=$(SANITIZE_RACECHECK_BLOCKS)"; \
	    cases="$(foreach c,$(SANITIZE_RACECHECK_CASES),--cases '$(c)')"; fi; \
	  eval env $$grid compute-sanitizer --tool $$tool --error-exitcode 9 --print-limit 20 $(PYTHON) -m conformance compare \
	    --configs $(SANITIZE_CONFIGS) --quiet $$cases || exit $$?; \
	done

# The golden corpus replayed on every configuration this machine can run (CUDA ones need a GPU);
# CONFIGS: engine configurations as engines.config spells them (host,cuda:fused,cuda:operators-host+group).
compare: bench-deps
	$(PYTHON) -m conformance compare --configs $(or $(CONFIGS),host)

# Issue 33: update or recompute? `perf_ab.py sweep` (bench/sweep_cmd.py): per graph, locality and engine,
# update() against compute() from scratch over batch sizes, and the crossover. A new folder each time.
SWEEP_ENGINES ?= cuda:fused,cuda:operators
SWEEP_GRAPHS ?= $(GATES)
SWEEP_ARGS ?=
ifeq ($(origin SWEEP_OUT),undefined)
SWEEP_OUT := runs/sweep-$(shell date +%Y%m%d-%H%M%S)
endif
.PHONY: sweep sweep-host
sweep: bench-deps
	$(PYTHON) bench/perf_ab.py sweep --engines $(SWEEP_ENGINES) --graphs $(SWEEP_GRAPHS) --data-dir $(DATA_DIR) \
	  --out $(SWEEP_OUT) $(SWEEP_ARGS)

sweep-host: bench-deps
	$(PYTHON) bench/perf_ab.py sweep --engines host --graphs uspowergrid --max-foreign-cpu 2 --allow-dirty \
	  --data-dir $(DATA_DIR) --out .cache/sweep-host --force
