# reel: two commands for a newcomer on a fresh Debian 12 machine.
#   make demo   install what is missing, build, record/open a task, check, summarise
#   make test   install what is missing, build, run every test (GoogleTest + pytest +
#               the fuzz corpora replayed under ASan/UBSan)
# Reliability (docs/reliability.md): make asan | make fuzz | make soak
# Every target is safe to run again; stamps make repeated runs cheap.

SHELL      := /bin/bash
VENV       := .venv
PY         := $(VENV)/bin/python
BUILD      := build/cmake
REEL       := $(BUILD)/tools/reel
DEMO_DIR   := out/demo
SUDO       := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := g++ cmake ninja-build pkg-config ffmpeg \
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev \
  nlohmann-json3-dev libcli11-dev libzip-dev zlib1g-dev libsqlite3-dev libcpp-httplib-dev libssl-dev curl \
  libgtest-dev libgmock-dev libbenchmark-dev \
  clang-16 libclang-rt-16-dev llvm-16 ccache chromium time

.PHONY: all demo test deps venv build python unit e2e layers lint bench docs clean peers \
  asan asan-configure asan-build fuzz fuzz-build replay-build fuzz-replay soak soak-recorder soak-serve soak-upload soak-e2e

all: build

# --- system packages (apt), installed only when missing -----------------------
build/.deps-stamp: Makefile
	@missing=$$(for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "reel: installing apt packages:" $$missing; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@mkdir -p build && touch $@
deps: build/.deps-stamp

# --- Python venv with pinned packages -----------------------------------------
$(VENV)/.stamp: requirements.txt
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	@touch $@
venv: $(VENV)/.stamp

# --- peer venvs with the real LeRobot, for the interop tests (docs/lerobot-peers.md) -----
# lerobot itself goes in --no-deps: its pins (torch<2.11, av<16, wandb, rerun...) are for training
# and recording; the requirements files hold what its dataset code needs. PyPI's torchvision is a
# CUDA build: reel_torchvision_ops(.pth) lets it import beside the CPU torch.
define peer_venv
	@test -x $(1)/bin/python || python3 -m venv $(1)
	$(1)/bin/python -m pip install -q -r $(2)
	$(1)/bin/python -m pip install -q --no-deps $(3)
	cp tests/e2e/peers/reel_torchvision_ops.py tests/e2e/peers/reel_torchvision_ops.pth \
	  "$$($(1)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
	@touch $(1)/.stamp
endef
.venv-lerobot/.stamp: requirements-lerobot.txt tests/e2e/peers/reel_torchvision_ops.py
	$(call peer_venv,.venv-lerobot,requirements-lerobot.txt,lerobot==0.4.4)
.venv-lerobot21/.stamp: requirements-lerobot21.txt tests/e2e/peers/reel_torchvision_ops.py
	$(call peer_venv,.venv-lerobot21,requirements-lerobot21.txt,lerobot==0.3.3)
peers: .venv-lerobot/.stamp .venv-lerobot21/.stamp

# --- C++ build: core library, reel CLI, unit tests ----------------------------
# One build tree for the CLI, the unit tests and the Python extension: `make python` (and the
# wheel test) hand scikit-build-core this tree with the same settings, so the core compiles once
# (issue 33). A plain `pip install .` keeps pyproject's own Release tree (build/py-<tag>).
SKBUILD_SHARED := -Cbuild-dir=$(BUILD) -Ccmake.build-type=RelWithDebInfo \
  -Ccmake.define.REEL_BUILD_TESTS=ON -Cinstall.strip=true
build: deps venv
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREEL_BUILD_PYTHON=ON \
	  -DPython_EXECUTABLE=$(abspath $(PY)) $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache) >/dev/null
	cmake --build $(BUILD)

# --- Python package (scikit-build-core + nanobind) into the venv ---------------
python: build
	$(PY) -m pip install -q --no-build-isolation $(SKBUILD_SHARED) .

# Both cores: ctest and pytest-xdist run tests side by side (each test owns its tmp dir and
# binds port 0), which halves `make test` on the 2-core reference machine.
JOBS ?= $(shell nproc)
unit: build
	cd $(BUILD) && ctest -j$(JOBS) --output-on-failure

e2e: build python peers
	REEL_BIN=$(abspath $(REEL)) REEL_WHEEL_CONFIG="$(SKBUILD_SHARED)" \
	  $(PY) -m pytest -q -n $(JOBS) --dist loadfile --no-loadscope-reorder tests

# Code rules (seconds; first, so a broken rule fails fast): the include layers of
# docs/architecture.md, one definition per type name in each program (C++'s ODR), and no
# function longer than 120 lines.
layers:
	python3 tools/check_layers.py
	python3 tools/check_odr.py
	python3 tools/check_function_length.py

# Python style (pyproject.toml [tool.ruff]): seconds, so it runs right after the code rules.
lint: deps venv
	$(PY) -m ruff check python tests bench tools fuzz

test: layers lint unit e2e fuzz-replay

demo: build python
	REEL_BIN=$(abspath $(REEL)) $(PY) tools/demo.py --reel $(REEL) --out $(DEMO_DIR)

bench: build python peers
	REEL_BIN=$(abspath $(REEL)) $(PY) bench/bench_foundation.py
	REEL_BIN=$(abspath $(REEL)) $(PY) bench/bench_recorder.py
	REEL_BIN=$(abspath $(REEL)) $(PY) bench/bench_recorder_video.py
	REEL_BIN=$(abspath $(REEL)) $(PY) bench/bench_video.py
	REEL_BIN=$(abspath $(REEL)) $(PY) bench/bench_serve.py
	REEL_BIN=$(abspath $(REEL)) $(PY) bench/bench_upload_pipeline.py
	REEL_BIN=$(abspath $(REEL)) $(PY) bench/bench_loader.py
	REEL_BIN=$(abspath $(REEL)) $(PY) bench/bench_interop.py
	REEL_BIN=$(abspath $(REEL)) $(PY) bench/bench_align.py
	REEL_BIN=$(abspath $(REEL)) $(PY) bench/bench_loader_streams.py
	REEL_BIN=$(abspath $(REEL)) $(PY) bench/bench_growth.py --sizes 1000,10000,100000 --reps 2

clean:
	rm -rf build out

# --- sanitizer build, fuzzing, soak (docs/reliability.md) -----------------------
# build/asan: clang, -fsanitize=address,undefined, libFuzzer coverage, -O1 with line
# tables only (the cheapest build that still gives file:line stacks).
ASAN_BUILD := build/asan
ASAN_REEL  := $(ASAN_BUILD)/tools/reel
CLANG_CXX  ?= clang++-16
CCACHE     = $(shell command -v ccache 2>/dev/null)
# ccache hits across checkouts and worktrees (paths hashed relative to the repository).
export CCACHE_BASEDIR := $(CURDIR)
ASAN_JOBS  ?= $(shell nproc)
FUZZ_SECONDS ?= 600
FUZZ_RUNS    ?=
FUZZ_CPU_SECONDS ?=
# e2e tests run with the sanitized CLI by `make asan` (a few minutes on 2 cores).
ASAN_E2E ?= tests/e2e/test_bad_input.py tests/e2e/test_check_rules.py tests/e2e/test_serve.py \
  tests/e2e/test_upload.py tests/e2e/test_foreign_read.py tests/e2e/test_layout.py
# Leaks are not checked under pytest (FFmpeg and Python own allocations at exit); the
# fuzz harnesses check them.
ASAN_E2E_ENV := ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1

asan-configure: deps venv
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_CXX_COMPILER=$(CLANG_CXX) \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
	  -DREEL_SANITIZE=ON -DREEL_BUILD_FUZZERS=ON -DPython_EXECUTABLE=$(abspath $(PY)) \
	  $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache) >/dev/null

# Everything: reel_core, the CLI, the unit tests and the fuzz harnesses, sanitized.
asan-build: asan-configure
	cmake --build $(ASAN_BUILD) -j$(ASAN_JOBS)

asan: asan-build
	cd $(ASAN_BUILD) && $(ASAN_E2E_ENV) ./reel_unit_tests --gtest_brief=1
	REEL_BIN=$(abspath $(ASAN_REEL)) $(ASAN_E2E_ENV) $(PY) -m pytest -q -p no:cacheprovider $(ASAN_E2E)

# Only what the harnesses need (reel_core + fuzz/), for `make fuzz`.
fuzz-build: asan-configure
	cmake --build $(ASAN_BUILD) -j$(ASAN_JOBS) --target fuzzers

# build/replay: the harnesses for `make test`'s replay. Each corpus file runs once, so the
# build needs the sanitizers but neither libFuzzer's coverage instrumentation nor
# optimisation: -O0 without coverage compiles in about 40% of build/asan's time.
REPLAY_BUILD := build/replay
replay-build: deps venv
	cmake -S . -B $(REPLAY_BUILD) -G Ninja -DCMAKE_CXX_COMPILER=$(CLANG_CXX) \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O0 -gline-tables-only" \
	  -DREEL_SANITIZE=ON -DREEL_BUILD_FUZZERS=ON -DREEL_FUZZ_COVERAGE=OFF \
	  -DREEL_BUILD_TOOLS=OFF -DREEL_BUILD_TESTS=OFF -DPython_EXECUTABLE=$(abspath $(PY)) \
	  $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache) >/dev/null
	cmake --build $(REPLAY_BUILD) -j$(ASAN_JOBS) --target fuzzers

# Each harness over fuzz/corpus/<name>/ and fuzz/crashes/<name>/, no fuzzing (part of make test).
fuzz-replay: replay-build
	cd $(REPLAY_BUILD) && ctest -L fuzz_replay -j$(ASAN_JOBS) --output-on-failure

# A campaign: FUZZ_SECONDS per harness (default 600; FUZZ_SECONDS_<name>=N for one),
# FUZZ_RUNS executions at most (default: no bound), FUZZ_JOBS processes (default nproc),
# FUZZ_ONLY="info_json slice" to pick harnesses. Crashes go to fuzz/crashes/<name>/.
fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) FUZZ_CPU_SECONDS=$(FUZZ_CPU_SECONDS) \
	  fuzz/run_campaign.sh $(ASAN_BUILD)

# Soak: SIGKILL rounds of the recorder, then the server under concurrent clients with
# random disconnects. Sizes by environment (docs/reliability.md "Soak"); the defaults are
# the full campaign (1000 kill rounds, 10 minutes of serving). REEL_BIN=... soaks that
# binary instead of building build/cmake.
SOAK_REEL := $(if $(REEL_BIN),$(abspath $(REEL_BIN)),$(abspath $(REEL)))
SOAK_DEPS := $(if $(REEL_BIN),venv,build)
soak: soak-recorder soak-serve soak-upload soak-e2e
soak-recorder: $(SOAK_DEPS)
	REEL_BIN=$(SOAK_REEL) $(PY) tests/soak/recorder_kill.py
soak-serve: $(SOAK_DEPS)
	REEL_BIN=$(SOAK_REEL) $(PY) tests/soak/serve_clients.py
# The upload outbox (docs/upload.md): >= 200 uploader and >= 50 server kills while recording.
soak-upload: $(SOAK_DEPS)
	REEL_BIN=$(SOAK_REEL) $(PY) -m tests.e2e.upload_campaign --uploader-kills 200 --server-kills 50 \
	  --work $$(mktemp -d /tmp/reel-upload-campaign.XXXXXX)

# The e2e kill campaigns at their full size (tests/e2e/kill_campaign.py): make test runs each
# with a few rounds, enough to reach the start, the middle and the end of the work.
KILL_CAMPAIGNS := tests/e2e/test_push.py tests/e2e/test_push_s3.py tests/e2e/test_import_s3.py \
  tests/e2e/test_split_episodes.py tests/e2e/test_migrate.py tests/e2e/test_keypoints.py \
  tests/e2e/test_rerecord.py
soak-e2e: $(SOAK_DEPS) python
	REEL_SOAK=1 REEL_BIN=$(SOAK_REEL) $(PY) -m pytest -q -n $(JOBS) --dist load -k kill $(KILL_CAMPAIGNS)

# docs/check-rules.md is generated from the rule catalog (src/reel/check/rules.cc).
docs: build
	@{ echo "# Conformance rules"; echo; \
	  echo "Generated by \`make docs\` from \`src/reel/check/rules.cc\` (\`reel check --list-rules --markdown\`)."; \
	  echo "Severity is the default of the rule; a few findings are reported one step lower where the"; \
	  echo "contract allows old data (for example the retired \`slam_pose\` column is a warning)."; echo; \
	  $(REEL) check --list-rules --markdown; } > docs/check-rules.md
