# SPDX-License-Identifier: GPL-2.0
#
# migrc: deferred TLB flush for migration and reclaim, on Linux 6.12.
# "make help" lists the targets.

SHELL := /bin/sh
H := harness

.PHONY: help deps base sync kernel vanilla debug-kernel kasan-kernel kernels selftests tools \
	check demo bench bench-copy bench-write bench-large upstream-mm soak workload series series-check \
	clean distclean

help:
	@echo "make deps          check the Debian packages; as root, install the missing"
	@echo "make kernel        build the patched kernel (build/out/patched)"
	@echo "make vanilla       build the pristine 6.12 base, same config"
	@echo "make debug-kernel  patched kernel with the debug fragment (make check's)"
	@echo "make kasan-kernel  the debug kernel with KASAN (CHECK_KERNEL=kasan make check)"
	@echo "make demo          boot the tiered VM, run the demo workload, compare"
	@echo "make bench         the demo and the copy benchmarks: build/bench/report.md,"
	@echo "                   the README results block"
	@echo "make bench-copy    the migration copy, judged: 20 interleaved rounds (numa2 VM)"
	@echo "make bench-write   write1/page_fault3 writers beside migration, migrc off vs on;"
	@echo "                   the demo's background writer, in interleaved rounds"
	@echo "make bench-large   anonymous tiering in 4 kB pages, 64 kB mTHP and PMD THP, off vs on"
	@echo "make upstream-mm   upstream mm selftests: vanilla / migrc=off / migrc=on"
	@echo "make soak [SOAK_SECONDS=N]  the soak test (migrc=on, mt copy, tiering, memcg)"
	@echo "make workload CMD='...'  your workload: vanilla / migrc=off / migrc=on"
	@echo "make check         every test; ends with 'N passed, N failed'"
	@echo "make series        export the series to build/series/"
	@echo "make series-check  apply, build every step, checkpatch each patch"

# Everything that builds or boots checks the packages first (harness/deps):
# as root it installs what is missing, otherwise it prints the apt-get line
# to run and stops.  Silent in sub-makes when nothing is missing.
DEPS_QUIET := $(if $(filter 0,$(MAKELEVEL)),,-q)
deps:
	@$(H)/deps install $(DEPS_QUIET)

base: deps
	$(H)/prepare-base --base-only

sync: deps
	$(H)/prepare-base

kernel: sync
	$(H)/kbuild patched

vanilla: base
	$(H)/kbuild vanilla

debug-kernel: sync
	$(H)/kbuild debug

kasan-kernel: sync
	$(H)/kbuild kasan

kernels: kernel vanilla

# Userspace pieces built against the patched tree's headers and harness.
selftests: sync
	$(H)/build-selftests

tools: deps
	$(MAKE) -C tools/migrc

# CHECK_KERNEL=debug (default), patched or kasan: see harness/check.
check: deps
	$(H)/check

# harness/demo --build builds the kernels and tests itself, to say which.
demo: deps
	$(H)/demo --build

# Interleaved rounds in one boot, copy phase from the tracepoint, the
# kernel's own copy ceiling, intervals; harness/bench-copy without
# --interleave gives the older throughput tables against vanilla.
bench-copy: kernel selftests
	$(H)/bench-copy --interleave 20 --pages4k 1,16384 --pages2m 4,64,512

bench: kernel vanilla selftests
	$(H)/bench

# Writers beside migration (write1, page_fault3): migrc=off vs on.
bench-large: kernel selftests
	$(H)/bench-large

bench-write: kernel selftests
	$(H)/bench-write --kind write1
	$(H)/bench-write --kind fault3
	$(H)/bench-write --kind bg --rounds 12

# By hand, every category with migrc=off too (make check: migration only).
upstream-mm: kernel vanilla base
	$(H)/upstream-mm --off all

SOAK_SECONDS ?= 600
soak: kernel selftests
	$(H)/tests/soak.sh --seconds $(SOAK_SECONDS)

# make workload CMD='./llama-cli -m model.gguf -p hi -n 20' [ARGS='--damon']
# (ARGS: --tiering or --damon, --tcg-scale N, --cpus, --mem, --no-prealloc;
# harness/workload --help)
workload: kernel vanilla selftests
	@test -n "$(CMD)" || { echo "usage: make workload CMD='...'"; exit 2; }
	$(H)/workload $(ARGS) -- sh -c '$(CMD)'

series: sync
	$(H)/series export

series-check: sync
	$(H)/series check

clean:
	rm -rf build/out build/vm build/series build/selftests
	-$(MAKE) -C tools/migrc clean

distclean:
	rm -rf build
