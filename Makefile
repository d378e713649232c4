# attnscope: the two commands are `make run` and `make test`.
# Both install missing Debian packages (scripts/install-deps.sh), configure
# and build first. Variables: BUILD (build dir), CMAKE_FLAGS, JOBS, RUN_ARGS.
#
# `make install [PREFIX=/usr/local] [DESTDIR=...]` installs the programs, their
# data, the launcher entry, icons, man pages and bash completion;
# `make package` builds a .deb of the same files in $(BUILD) (README, Install).
#
# `make test-sanitize` builds everything again with AddressSanitizer and
# UndefinedBehaviorSanitizer in SANITIZE_BUILD and runs the suite there with
# LeakSanitizer on, leaving out the tests labelled `torch`, which only compare
# our numbers with PyTorch's (docs/RELIABILITY.md); `make fuzz` runs
# scripts/fuzz.sh for FUZZ_SECONDS (20) per target, `make fuzz-long` for
# FUZZ_LONG_SECONDS (300). CI runs all three (.ci/run).

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

SANITIZE_BUILD ?= build-sanitize
# -O1 with line tables only (-g1): reports still name file and line, and the
# build takes about half the time of -O2 with full debug information. The
# benchmarks are left out, and so are the replays of the fuzz corpora:
# `make fuzz` runs the same inputs under the same sanitizers.
SANITIZE_FLAGS := -DATTNSCOPE_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DATTNSCOPE_BUILD_BENCH=OFF -DATTNSCOPE_FUZZ_REPLAY=OFF
FUZZ_SECONDS ?= 20
FUZZ_LONG_SECONDS ?= 300
# Every report fails the test that made it: abort on the first ASan/UBSan
# error, LeakSanitizer at exit. Leaks inside the GL driver, X11 and
# fontconfig (not our code) are suppressed by library name in scripts/lsan.supp.
SANITIZER_ENV := \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

PREFIX ?= /usr/local

.PHONY: all deps configure build run test test-sanitize fuzz fuzz-long format format-check clean \
        install package

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

# The build's programs, as configured (ATTNSCOPE_NATIVE=ON builds for this
# CPU only: for a package other machines can use, build with
# CMAKE_FLAGS=-DATTNSCOPE_NATIVE=OFF in a BUILD of its own). The launcher
# and icon caches are refreshed when their tools exist; desktops that watch
# these folders need nothing more.
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)
	@if [ -z "$(DESTDIR)" ]; then \
	  command -v update-desktop-database >/dev/null && update-desktop-database -q $(PREFIX)/share/applications 2>/dev/null; \
	  command -v gtk-update-icon-cache >/dev/null && gtk-update-icon-cache -q -t $(PREFIX)/share/icons/hicolor 2>/dev/null; \
	  echo "attnscope: installed into $(PREFIX); start it from the applications menu or run $(PREFIX)/bin/attnscope"; \
	fi

package: build
	@cd $(BUILD) && cpack -G DEB

test-sanitize: deps
	@cmake -S . -B $(SANITIZE_BUILD) $(SANITIZE_FLAGS) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(SANITIZE_BUILD) -j$(JOBS)
	@$(SANITIZER_ENV) ctest --test-dir $(SANITIZE_BUILD) --output-on-failure -j$(JOBS) -LE torch

fuzz: deps
	@scripts/fuzz.sh $(FUZZ_SECONDS)

fuzz-long: deps
	@scripts/fuzz.sh $(FUZZ_LONG_SECONDS)

clean:
	@rm -rf $(BUILD) $(SANITIZE_BUILD) build-fuzz

# clang-format (.clang-format) over every C++ file git tracks. `format`
# rewrites them in place; `format-check` lists the files that differ and
# fails, changing nothing (CI runs it first).
CXX_SOURCES = $(shell git ls-files '*.cpp' '*.hpp' '*.h')
CLANG_FORMAT ?= clang-format

format: deps
	@$(CLANG_FORMAT) -i $(CXX_SOURCES)

format-check: deps
	@$(CLANG_FORMAT) --dry-run --Werror $(CXX_SOURCES) 2>/dev/null || { \
	  echo "format-check: these files differ from .clang-format (run 'make format'):" >&2; \
	  for f in $(CXX_SOURCES); do $(CLANG_FORMAT) $$f | cmp -s - $$f || echo "  $$f" >&2; done; \
	  exit 1; }

