# fabench - build, run and test.
#
#   make            build build/fabench (and build/libfabench-cuda.so where nvcc is)
#   make run        the main job: suites/smoke.yaml on the best backend present
#   make test       every test that can run on this machine; ends "N passed, N failed"
#   make VARIANT=san test   the same under AddressSanitizer and UBSan
#   make install-sdk PREFIX=DIR   install the plugin SDK header (DIR/include/fabench/plugin.h)
#
# Missing Debian packages are installed first by tools/ensure-deps (as root
# through apt-get; otherwise it prints the command to run and stops).

.DEFAULT_GOAL := all
SHELL := /bin/bash
# every core by default: the CUDA plugin's instances take minutes one by one
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)

VARIANT ?= release
ifeq ($(VARIANT),release)
BUILD := build
VARIANT_CFLAGS := -O2
VARIANT_LDFLAGS :=
else ifeq ($(VARIANT),san)
BUILD := build/san
VARIANT_CFLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
VARIANT_LDFLAGS := -fsanitize=address,undefined
else
$(error unknown VARIANT '$(VARIANT)': use release or san)
endif

CC := gcc
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla -Werror
# -ffp-contract=off: no fused multiply-adds, so the reference and the input
# generator give the same bits on every x86-64 machine and match the GPU's.
CFLAGS := -std=c11 -g $(VARIANT_CFLAGS) $(WARN) -D_GNU_SOURCE -ffp-contract=off -pthread -MMD -MP
# libyaml is linked statically so build/ runs where libyaml is not installed
# (the GPU machine); SQLite is there as libsqlite3.so.0.
LDLIBS := -Wl,-Bstatic -lyaml -Wl,-Bdynamic -lsqlite3 -ldl -lm -pthread
LDFLAGS := $(VARIANT_LDFLAGS)

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
CFLAGS += -DFA_VERSION='"$(VERSION)"'

LIB_SRC := $(filter-out harness/main.c,$(wildcard harness/*.c)) \
	$(wildcard kernels/cpu/*.c) $(wildcard reference/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
MAIN_OBJ := $(BUILD)/harness/main.o
TEST_SRC := $(wildcard tests/*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
PLUGIN_TEST_SRC := $(wildcard tests/plugin/*.c)
PLUGIN_TEST_OBJ := $(PLUGIN_TEST_SRC:%.c=$(BUILD)/pic/%.o) $(BUILD)/pic/harness/parallel.o

FABENCH := $(BUILD)/fabench
TESTBIN := $(BUILD)/fabench-test
TEST_PLUGIN := $(BUILD)/libfabench-test.so
TEST_PLUGIN_SLOW := $(BUILD)/slow/libfabench-test.so

DEPS_OK := build/.deps-ok

# ---- CUDA plugin: built where nvcc is, skipped (with a note) where it is not.
NVCC ?= $(shell command -v nvcc 2>/dev/null || (test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc))
CUDA_SRC := $(wildcard kernels/cuda/*.cu kernels/cuda/instances/*.cu)
CUDA_OBJ := $(CUDA_SRC:%.cu=$(BUILD)/cuda/%.o)
CUDA_PLUGIN := $(BUILD)/libfabench-cuda.so
NVCC_GENCODE ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90a,code=sm_90a
NVCC_FLAGS := -std=c++17 -O3 -lineinfo $(NVCC_GENCODE) -Xcompiler -fPIC,-Wall \
	-Xptxas -warn-spills --expt-relaxed-constexpr -MMD -MP $(NVCC_EXTRA)
# The plugin is not built with sanitizers (nvcc's device code cannot be),
# so the san variant leaves it out rather than build it twice.
ifneq ($(NVCC),)
ifneq ($(CUDA_SRC),)
ifneq ($(VARIANT),san)
ALL_CUDA := $(CUDA_PLUGIN)
endif
endif
endif

.PHONY: all run test test-unit cuda deps clean help install-sdk
all: $(FABENCH) $(ALL_CUDA)
ifeq ($(NVCC),)
	@echo "note: nvcc not found; the CUDA plugin was not built"
endif

help:
	@sed -n '2,10p' Makefile | sed 's/^# \{0,1\}//'

deps: $(DEPS_OK)
$(DEPS_OK): tools/ensure-deps
	@mkdir -p $(@D)
	@tools/ensure-deps
	@touch $@

# V=1 shows the full commands
Q := $(if $(V),,@)
say = $(if $(V),,@echo "  $(1) $(2)")

$(BUILD)/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/pic/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(call say,CC,$< (pic))
	$(Q)$(CC) $(CFLAGS) -fPIC -c -o $@ $<

$(FABENCH): $(MAIN_OBJ) $(LIB_OBJ)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(TESTBIN): $(TEST_OBJ) $(LIB_OBJ)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(TEST_PLUGIN): $(PLUGIN_TEST_OBJ)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -shared -o $@ $^ -lm -pthread

# The same test plugin, 10% slower in test_correct: the B side of the A/B tests.
$(TEST_PLUGIN_SLOW): $(PLUGIN_TEST_SRC) harness/parallel.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -fPIC -DFA_TEST_EXTRA_PCT=10 $(LDFLAGS) -shared -o $@ $^ -lm -pthread

cuda: $(CUDA_PLUGIN)
$(BUILD)/cuda/%.o: %.cu
	@mkdir -p $(@D)
	$(call say,NVCC,$<)
	$(Q)$(NVCC) $(NVCC_FLAGS) -c -o $@ $<

$(CUDA_PLUGIN): $(CUDA_OBJ)
	$(call say,LINK,$@)
	$(Q)$(NVCC) $(NVCC_GENCODE) -shared -cudart shared -o $@ $^ -ldl

# ---- plugin SDK: one header (docs/plugins.md); examples/plugins/ build
# against the installed copy only.
PREFIX ?= /usr/local
install-sdk:
	install -d $(DESTDIR)$(PREFIX)/include/fabench
	install -m 644 include/fabench/plugin.h $(DESTDIR)$(PREFIX)/include/fabench/plugin.h

# Plugins for the ABI tests (tests/test_plugins.c): one built against the
# frozen version 1 header, and bad ones, each refused for one reason.
ABI_BAD := future nolaunch noalloc kfuture knolaunch kclash kerr
ABI_PLUGINS := $(BUILD)/abi/libfabench-abiv1.so $(ABI_BAD:%=$(BUILD)/abi/libbad-%.so)
$(BUILD)/abi/libfabench-abiv1.so: tests/abi/plugin_v1.c tests/abi/plugin_v1.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -fPIC $(LDFLAGS) -shared -o $@ $< -lm
$(BUILD)/abi/libbad-%.so: tests/abi/plugin_bad.c include/fabench/plugin.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -fPIC -DBAD_VARIANT='"$*"' $(if $(filter k%,$*),-DBAD_KERNEL_PLUGIN) \
		$(LDFLAGS) -shared -o $@ $<

# The main job. FABENCH_ARGS adds options (e.g. FABENCH_ARGS="--backend cpu").
run: all
	@mkdir -p results reports
	$(FABENCH) run suites/smoke.yaml --backend auto --db results/fabench.db \
		--report reports/latest.md $(FABENCH_ARGS)

test-unit: $(TESTBIN)
	$(TESTBIN)

test: $(FABENCH) $(TESTBIN) $(TEST_PLUGIN) $(TEST_PLUGIN_SLOW) $(ABI_PLUGINS) $(ALL_CUDA)
	@BUILD=$(BUILD) VARIANT=$(VARIANT) tools/run-tests

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(PLUGIN_TEST_OBJ:.o=.d) $(CUDA_OBJ:.o=.d)
