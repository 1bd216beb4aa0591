# crec: record/replay engine for Linux x86-64 programs.
#
#   make            build build/crec and build/libcrec.a (installs missing deps)
#   make demo       build, then run a sample program under crec
#   make test       build and run every unit and end-to-end test
#   make test SANITIZE=1   the same under AddressSanitizer + UBSan (build-san/)
#   make DEBUG=1    a debug build (build-debug/): corruption errors name the
#                   source line of the check that failed (common.h)
#   make fuzz       run the libFuzzer targets: reader, replay, gdb, fields (FUZZ_SECONDS=300 each)
#   make bench      benchmarks (see bench/README.md)
#   make format     clang-format every C file
#
# Every module is one folder; all its .c files go into libcrec.a.  The cli
# folder builds the `crec` command on top of it.

MODULES   := common format emu recorder replayer index analysis gdb
SANITIZE  ?= 0
CC        ?= cc

ifeq ($(SANITIZE),1)
BUILD     ?= build-san
SANFLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
DEBUG     := 1
else ifeq ($(DEBUG),1)
BUILD     ?= build-debug
SANFLAGS  :=
else
BUILD     ?= build
SANFLAGS  :=
endif
DEBUGFLAGS := $(if $(filter 1,$(DEBUG)),-DCREC_DEBUG)

# Debian package that provides each pkg-config module we need.
PKGS_BUILD := libunicorn-dev libcapstone-dev libzstd-dev libxxhash-dev libdw-dev pkg-config
PKGS_TEST  := libcriterion-dev busybox-static lua5.4 sqlite3 gzip clang faketime valgrind \
              g++ python3 gdb
PKG_MODS   := unicorn capstone libzstd libxxhash libdw

DEPS_CFLAGS = $(shell pkg-config --cflags $(PKG_MODS) 2>/dev/null)
DEPS_LIBS   = $(shell pkg-config --libs $(PKG_MODS) 2>/dev/null)

CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
            -Wno-missing-field-initializers $(SANFLAGS)
CPPFLAGS += -Iinclude -I. -D_GNU_SOURCE $(DEBUGFLAGS) $(DEPS_CFLAGS)
LDFLAGS  += $(SANFLAGS) $(UC_EXPORTS)
LDLIBS   += $(DEPS_LIBS) -lpthread -lm
# crec loads libunicorn when it first needs a CPU (emu/ucload.c), so it is
# not linked with it; ucfix.c's replacements of the library's internal
# functions are exported for it to bind to (emu/ucfix.sym).  The tests and
# tools still link it: dlopen then finds it loaded.
UC_EXPORTS := -Wl,--dynamic-list=emu/ucfix.sym
CREC_LIBS   = $(filter-out -lunicorn,$(DEPS_LIBS)) -ldl -lpthread -lm

LIB_SRC  := $(foreach m,$(MODULES),$(wildcard $(m)/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_SRC  := $(wildcard cli/*.c)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
# Programs the tests run as guests (built natively, outside the sanitizer).
GUEST_SRC := $(wildcard tests/guests/*.c) $(wildcard tests/guests/*.cpp)
GUEST_BIN := $(patsubst tests/guests/%.cpp,build/guests/%,$(GUEST_SRC:tests/guests/%.c=build/guests/%))
# Test tools that use libcrec directly (e.g. to tamper with a recording).
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BIN := $(TOOL_SRC:tests/%.c=$(BUILD)/%)

CREC := $(BUILD)/crec

.PHONY: all deps deps-test demo test unit e2e fuzz bench format clean guests check-includes
.DEFAULT_GOAL := all

all: deps $(CREC)

# --- dependencies ----------------------------------------------------------
# Checked before anything is compiled, so a missing package is reported as
# such and never as a compiler error about a header.
deps:
	@sh tools/deps.sh $(PKGS_BUILD)

deps-test:
	@sh tools/deps.sh $(PKGS_BUILD) $(PKGS_TEST)

# --- library and command ---------------------------------------------------
$(BUILD)/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libcrec.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(CREC): $(CLI_OBJ) $(BUILD)/libcrec.a emu/ucfix.sym
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libcrec.a $(CREC_LIBS)

# --- tests -----------------------------------------------------------------
# -MMD: a test is rebuilt when a header it includes changes.
$(BUILD)/tests/%: tests/%.c $(BUILD)/libcrec.a | deps-test
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -MMD -MP -MF $@.d -o $@ $< $(BUILD)/libcrec.a $(LDLIBS) -lcriterion

$(BUILD)/tools/%: tests/tools/%.c $(BUILD)/libcrec.a | deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -MMD -MP -MF $@.d -o $@ $< $(BUILD)/libcrec.a $(LDLIBS)

build/guests/%: tests/guests/%.c
	@mkdir -p $(dir $@)
	sh tests/guests/build.sh $< $@

build/guests/%: tests/guests/%.cpp
	@mkdir -p $(dir $@)
	sh tests/guests/build.sh $< $@

guests: $(GUEST_BIN)

unit: deps-test $(TEST_BIN)
	@sh tests/run_unit.sh $(TEST_BIN)

# Which module may include which (tools/includes.txt); run by `make test`.
check-includes:
	@sh tools/check-includes.sh

e2e: deps-test $(CREC) guests $(TOOL_BIN)
	@CREC=$(CREC) CRECTOOLS=$(BUILD)/tools sh tests/e2e/run.sh

test: deps-test check-includes $(CREC) $(TEST_BIN) guests $(TOOL_BIN)
	@CRECTOOLS=$(BUILD)/tools sh tests/run_all.sh $(BUILD) $(CREC) $(TEST_BIN)

# --- demo ------------------------------------------------------------------
demo: all
	@CREC=$(CREC) sh tools/demo.sh

# --- fuzzing (clang libFuzzer + ASan + UBSan) --------------------------------
# fuzz_reader: the .crec reader (format/).  fuzz_replay: replay and queries
# of a recording whose checksums are not enforced (format, replayer, index
# and emu's CPU layer, as the replay-only build of mk/s390x.mk).
FUZZ_SECONDS ?= 300
FUZZ_REPLAY_SECONDS ?= $(FUZZ_SECONDS)
FUZZ_GDB_SECONDS ?= $(FUZZ_SECONDS)
FUZZ_FIELDS_SECONDS ?= $(FUZZ_SECONDS)
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -I. -D_GNU_SOURCE \
               -DCREC_FUZZ -DCREC_DEBUG
FUZZ_SRC := $(foreach m,common format,$(wildcard $(m)/*.c))
FUZZ_REPLAY_SRC := $(foreach m,common format replayer index,$(wildcard $(m)/*.c)) \
                   emu/cpu.c emu/mem.c emu/blocks.c emu/cpuid.c emu/sysout.c emu/sigframe.c emu/ucfix.c \
                   emu/ucload.c emu/xdecode.c emu/xinsn.c emu/xfloat.c
build-fuzz/fuzz_reader: tests/fuzz/fuzz_reader.c $(FUZZ_SRC) | deps-test
	@mkdir -p build-fuzz
	clang $(FUZZ_CFLAGS) $(DEPS_CFLAGS) -o $@ $^ $(DEPS_LIBS)

build-fuzz/fuzz_replay: tests/fuzz/fuzz_replay.c $(FUZZ_REPLAY_SRC) | deps-test
	@mkdir -p build-fuzz
	clang $(FUZZ_CFLAGS) $(DEPS_CFLAGS) $(UC_EXPORTS) -o $@ $^ $(DEPS_LIBS) -lpthread -lm

# fuzz_gdb: the gdb server's packet parser and every packet handler, on
# traces-sample/segv.crec.
build-fuzz/fuzz_gdb: tests/fuzz/fuzz_gdb.c $(FUZZ_REPLAY_SRC) $(wildcard gdb/*.c) | deps-test
	@mkdir -p build-fuzz
	clang $(FUZZ_CFLAGS) $(DEPS_CFLAGS) $(UC_EXPORTS) -o $@ $^ $(DEPS_LIBS) -lpthread -lm

# fuzz_fields: a real recording with decoded fields changed and checksums
# right; each input within a time and memory budget (run.sh's last arguments).
build-fuzz/fuzz_fields: tests/fuzz/fuzz_fields.c tests/tools/refield.h $(FUZZ_REPLAY_SRC) | deps-test
	@mkdir -p build-fuzz
	clang $(FUZZ_CFLAGS) $(DEPS_CFLAGS) $(UC_EXPORTS) -o $@ tests/fuzz/fuzz_fields.c $(FUZZ_REPLAY_SRC) \
	    $(DEPS_LIBS) -lpthread -lm

# Each target is a run of its own, so that `make -j2 fuzz` builds and runs
# two at a time (each fuzzer is one process).
FUZZ_RUNS := fuzz-run-reader fuzz-run-replay fuzz-run-gdb fuzz-run-fields
fuzz: $(FUZZ_RUNS)
fuzz-run-reader: build-fuzz/fuzz_reader
	@sh tests/fuzz/run.sh build-fuzz/fuzz_reader $(FUZZ_SECONDS) tests/fuzz/corpus-reader
fuzz-run-replay: build-fuzz/fuzz_replay
	@sh tests/fuzz/run.sh build-fuzz/fuzz_replay $(FUZZ_REPLAY_SECONDS) tests/fuzz/corpus-replay
fuzz-run-gdb: build-fuzz/fuzz_gdb
	@sh tests/fuzz/run.sh build-fuzz/fuzz_gdb $(FUZZ_GDB_SECONDS) tests/fuzz/corpus-gdb
fuzz-run-fields: build-fuzz/fuzz_fields
	@sh tests/fuzz/run.sh build-fuzz/fuzz_fields $(FUZZ_FIELDS_SECONDS) tests/fuzz/corpus-fields 10 2048 512
.PHONY: $(FUZZ_RUNS)

# --- benchmarks ------------------------------------------------------------
# What bench/run.sh runs besides crec (bench/README.md).
PKGS_BENCH := time qemu-user gnuplot-nox gdb binutils lua5.4 sqlite3 python3 gzip zstd

bench: all guests
	@sh tools/deps.sh $(PKGS_BENCH)
	@CREC=$(CREC) QUICK=$(QUICK) bash bench/run.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-san build-debug build-fuzz

# Cross-building the replay side for a big-endian host (s390x): make
# cross-s390x, make test-s390x.
-include mk/s390x.mk

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_BIN:=.d) $(TOOL_BIN:=.d)
