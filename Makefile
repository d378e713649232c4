# attnscope: the two commands are `make run` and `make test`.
# Both install missing Debian packages (scripts/install-deps.sh), configure
# and build first. Variables: BUILD (build dir), CMAKE_FLAGS, JOBS, RUN_ARGS.

MAKEFLAGS += --no-print-directory

BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
RUN_ARGS ?=
ifeq ($(CI),true)
  CMAKE_FLAGS += -DATTNSCOPE_WERROR=ON
endif

GUI := $(BUILD)/app/gui/attnscope
CLI := $(BUILD)/app/cli/attnscope-cli

.PHONY: all deps configure build run test clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

# Launches the app on the book's example. Without a display (no X11/Wayland
# session) it says so and prints the same run as text instead.
run: build
	@if [ -x $(GUI) ] && [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
	  $(GUI) $(RUN_ARGS); \
	else \
	  if [ -x $(GUI) ]; then echo "attnscope: no graphical session (DISPLAY is not set); showing the book example as text instead." >&2; fi; \
	  $(CLI) trace --preset book --variant causal --format text $(RUN_ARGS); \
	fi

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

clean:
	@rm -rf $(BUILD)
