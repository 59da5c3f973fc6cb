# reel: two commands for a newcomer on a fresh Debian 12 machine.
#   make demo   install what is missing, build, record/open a task, check, summarise
#   make test   install what is missing, build, run every test (GoogleTest + pytest)
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
  nlohmann-json3-dev libcli11-dev libzip-dev libcpp-httplib-dev \
  libgtest-dev libgmock-dev libbenchmark-dev

.PHONY: all demo test deps venv build python unit e2e bench clean

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

# --- C++ build: core library, reel CLI, unit tests ----------------------------
build: deps venv
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DPython_EXECUTABLE=$(abspath $(PY)) >/dev/null
	cmake --build $(BUILD)

# --- Python package (scikit-build-core + nanobind) into the venv ---------------
python: deps venv
	$(PY) -m pip install -q --no-build-isolation .

unit: build
	cd $(BUILD) && ctest --output-on-failure

e2e: build python
	REEL_BIN=$(abspath $(REEL)) $(PY) -m pytest -q tests

test: unit e2e

demo: build python
	REEL_BIN=$(abspath $(REEL)) $(PY) tools/demo.py --reel $(REEL) --out $(DEMO_DIR)

bench: build python
	REEL_BIN=$(abspath $(REEL)) $(PY) bench/bench_foundation.py

clean:
	rm -rf build out
