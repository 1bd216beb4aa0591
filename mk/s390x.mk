# mk/s390x.mk - the replay side of crec, cross-built for a big-endian host
# (s390x) and tested there under qemu-user.  Included by the Makefile.
#
#   make cross-s390x    build-s390x/crec: info, replay (and query, when... as
#                       they appear), with Debian's s390x cross compiler
#   make test-s390x     run the traces-sample/ answers and the replay-side
#                       unit tests under qemu-s390x (installs what it needs)
#
# docs/PORTABILITY.md says which parts run where and what was measured.
#
# What goes into the replay side is listed here, in one place:
#   S390X_MODULES  whole modules (every .c file in the folder);
#   S390X_EMU      emu/'s CPU layer only: never the loader, process, syscall
#                  or strace code (a replay needs no OS);
#   S390X_CLI      the replay-side subcommands.  A file named here that does
#                  not exist yet is skipped, so a new replay-side command is
#                  picked up by adding its name once;
#   S390X_TESTS    (below) the unit tests that need no recorder.
# The recorder (recorder/, cli/cmd_record.c, cli/cmd_run.c) needs an x86-64
# host: the cross build compiles with -DCREC_NO_RECORDER, which takes
# `record` and `run` out of cli/main.c's command table.

S390X_MODULES := common format replayer index analysis gdb
S390X_EMU     := emu/cpu.c emu/mem.c emu/blocks.c emu/cpuid.c emu/sysout.c emu/sigframe.c emu/ucfix.c emu/ucload.c \
                 emu/sysnames.c emu/xdecode.c emu/xinsn.c emu/xfloat.c
S390X_CLI     := cli/main.c cli/cmd_info.c cli/cmd_replay.c cli/cmd_query.c \
                 cli/cmd_when.c cli/cmd_races.c cli/analysis.c cli/cmd_trace.c cli/cmd_profile.c \
                 cli/cmd_calls.c cli/cmd_backtrace.c cli/cmd_syscalls.c cli/cmd_find.c \
                 cli/cmd_printf.c cli/cmd_gdb.c cli/cmd_keyframes.c cli/cmd_index.c
# analysis/ is built without libdw there (-DCREC_NO_DWARF: no source lines),
# so its pkg-config modules are the native ones less libdw.
S390X_PKG_MODS := $(filter-out libdw,$(PKG_MODS))

S390X_BUILD   := build-s390x
S390X_CC      := s390x-linux-gnu-gcc
S390X_AR      := s390x-linux-gnu-ar
S390X_RUN     := qemu-s390x
S390X_PKGCFG  := PKG_CONFIG_LIBDIR=/usr/lib/s390x-linux-gnu/pkgconfig:/usr/share/pkgconfig pkg-config
# Debian packages: the s390x libraries install beside the amd64 ones.
S390X_PKGS    := gcc-s390x-linux-gnu libc6-dev-s390x-cross qemu-user pkg-config \
                 libunicorn-dev:s390x libcapstone-dev:s390x libzstd-dev:s390x \
                 libxxhash-dev:s390x

S390X_DEPS_CFLAGS = $(shell $(S390X_PKGCFG) --cflags $(S390X_PKG_MODS) 2>/dev/null)
S390X_DEPS_LIBS   = $(shell $(S390X_PKGCFG) --libs $(S390X_PKG_MODS) 2>/dev/null)
S390X_CFLAGS  := -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
                 -Wno-missing-field-initializers
# One thread's replay at a time in an execution run (index/exec.c): under
# qemu-user 7.2 the third Unicorn engine of a process breaks
# (docs/PORTABILITY.md), and a query may need one beside it.
S390X_CPPFLAGS = -Iinclude -I. -D_GNU_SOURCE -DCREC_NO_RECORDER -DCREC_NO_DWARF \
                 -DCREC_EXEC_MAX_LANES=1 $(S390X_DEPS_CFLAGS)

S390X_LIB_SRC := $(foreach m,$(S390X_MODULES),$(wildcard $(m)/*.c)) $(S390X_EMU)
S390X_CLI_SRC := $(wildcard $(S390X_CLI))
S390X_LIB_OBJ := $(S390X_LIB_SRC:%.c=$(S390X_BUILD)/obj/%.o)
S390X_CLI_OBJ := $(S390X_CLI_SRC:%.c=$(S390X_BUILD)/obj/%.o)
S390X_CREC    := $(S390X_BUILD)/crec

# Unit tests of the replay-side modules that need no recorder, built against
# a small stand-in for Criterion (tests/s390x/criterion/criterion.h): Debian
# has no libcriterion for s390x.  A name here whose file is missing is skipped.
S390X_TESTS   := tests/test_format.c tests/test_common.c tests/test_gdb.c tests/test_ring.c
S390X_UNIT    := $(patsubst tests/%.c,$(S390X_BUILD)/tests/%,$(wildcard $(S390X_TESTS)))

.PHONY: deps-s390x cross-s390x test-s390x clean-s390x

deps-s390x:
	@sh tools/deps.sh $(S390X_PKGS)

cross-s390x: deps-s390x $(S390X_CREC)
	@echo "cross-s390x: $(S390X_CREC) replays only ($(patsubst cli/cmd_%.c,%,$(filter cli/cmd_%,$(S390X_CLI_SRC)))); the recorder (record, run) needs an x86-64 host"

$(S390X_BUILD)/obj/%.o: %.c | deps-s390x
	@mkdir -p $(dir $@)
	$(S390X_CC) $(S390X_CPPFLAGS) $(S390X_CFLAGS) -MMD -MP -c $< -o $@

$(S390X_BUILD)/libcrec.a: $(S390X_LIB_OBJ)
	@rm -f $@
	$(S390X_AR) rcs $@ $^

$(S390X_CREC): $(S390X_CLI_OBJ) $(S390X_BUILD)/libcrec.a
	$(S390X_CC) -Wl,--dynamic-list=emu/ucfix.sym -o $@ $(S390X_CLI_OBJ) $(S390X_BUILD)/libcrec.a $(S390X_DEPS_LIBS) -lpthread -lm

$(S390X_BUILD)/tests/%: tests/%.c tests/s390x/criterion/criterion.h $(S390X_BUILD)/libcrec.a | deps-s390x
	@mkdir -p $(dir $@)
	$(S390X_CC) -Itests/s390x $(S390X_CPPFLAGS) $(S390X_CFLAGS) -Wl,--dynamic-list=emu/ucfix.sym -o $@ $< \
	    $(S390X_BUILD)/libcrec.a $(S390X_DEPS_LIBS) -lpthread -lm

# Everything runs under qemu-s390x without -L: the s390x libraries are found
# in the multiarch paths; -L would mix two glibc builds.
test-s390x: cross-s390x $(S390X_UNIT)
	@S390X_RUN="$(S390X_RUN)" sh tests/s390x/run.sh $(S390X_CREC) $(S390X_UNIT)

clean-s390x:
	rm -rf $(S390X_BUILD)

-include $(S390X_LIB_OBJ:.o=.d) $(S390X_CLI_OBJ:.o=.d)
