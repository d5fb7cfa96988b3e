# fabench - build, run and test.
#
#   make            build build/fabench (and build/libfabench-cuda.so where nvcc is,
#                   build/libfabench-hip.so where clang++-19 and ROCm's headers are)
#   make hip        install the HIP packages, build build/libfabench-hip.so
#   make run        the main job: suites/smoke.yaml on the best backend present
#                   (builds the CUDA plugin only where a GPU is usable)
#   make test       every test that can run on this machine; ends "N passed, N failed"
#   make VARIANT=san test   the same under AddressSanitizer and UBSan
#   make test-fresh the README's two commands on a bare Debian 12 chroot (root)
#   make install-sdk PREFIX=DIR   install the plugin SDK header (DIR/include/fabench/plugin.h)
#
# Missing Debian packages are installed first by tools/ensure-deps (as root
# through apt-get, else through sudo; otherwise it prints the command and
# stops). On a machine without make, ./fabench.sh run|test does that first.

.DEFAULT_GOAL := all
SHELL := /bin/bash
# every core by default: the CUDA plugin's instances take minutes one by one
# (a sub-make, as `make hip` runs, shares its parent's jobs instead)
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif

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

LIB_SRC := $(filter-out harness/cli/main.c,$(wildcard harness/*/*.c)) \
	$(wildcard kernels/cpu/*.c) $(wildcard reference/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
MAIN_OBJ := $(BUILD)/harness/cli/main.o
TEST_SRC := $(wildcard tests/*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
PLUGIN_TEST_SRC := $(wildcard tests/plugin/*.c)
PLUGIN_TEST_OBJ := $(PLUGIN_TEST_SRC:%.c=$(BUILD)/pic/%.o) $(BUILD)/pic/harness/base/parallel.o

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
# sm_80 (A100; Ada and other 8.x cards run it) and sm_90a (every compute
# capability 9.0 device: H100, H200, GH200): a plain sm_90 copy would never
# be the one an H100 runs
NVCC_GENCODE ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a
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

.PHONY: all run test test-unit test-fresh cuda deps clean help sanitize-gpu install-sdk
all: $(FABENCH) $(ALL_CUDA)
ifeq ($(NVCC),)
	@echo "note: nvcc not found; the CUDA plugin was not built"
endif
	$(if $(HIP_WHY),@echo "note: the HIP plugin was not built ($(HIP_WHY)); \`make hip\` installs the packages and builds it")

help:
	@sed -n '2,16p' Makefile | sed 's/^# \{0,1\}//'

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
$(TEST_PLUGIN_SLOW): $(PLUGIN_TEST_SRC) harness/base/parallel.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -fPIC -DFA_TEST_EXTRA_PCT=10 $(LDFLAGS) -shared -o $@ $^ -lm -pthread

cuda: $(CUDA_PLUGIN)
$(BUILD)/cuda/%.o: %.cu
	@mkdir -p $(@D)
	$(call say,NVCC,$<)
	$(Q)$(NVCC) $(NVCC_FLAGS) -c -o $@ $<

# cuda_flash_wgmma, cuda_flash_bwd_wgmma and the Hopper decode path of
# cuda_flash_mma (wgmma, setmaxnreg, TMA) are sm_90a
# code only: their objects get that one target whatever NVCC_GENCODE lists,
# so an H100 can only pick them (CI, which has no GPU, sets PTX alone)
WGMMA_GENCODE ?= -gencode arch=compute_90a,code=sm_90a
$(BUILD)/cuda/kernels/cuda/flash_wgmma.o $(BUILD)/cuda/kernels/cuda/flash_bwd_wgmma.o $(BUILD)/cuda/kernels/cuda/flash_decode_wg.o: NVCC_FLAGS := $(subst $(NVCC_GENCODE),$(WGMMA_GENCODE),$(NVCC_FLAGS))

$(CUDA_PLUGIN): $(CUDA_OBJ)
	$(call say,LINK,$@)
	$(Q)$(NVCC) $(NVCC_GENCODE) -shared -cudart shared -o $@ $^ -ldl

# ---- HIP plugin (docs/hip.md): build/libfabench-hip.so, the CUDA plugin's
# kernel sources built as HIP by clang (kernels/common/fa_gpu.h maps cuda* to
# hip*, pre-included as nvcc pre-includes cuda_runtime.h) plus
# kernels/hip/*.cpp, one fat binary for HIP_ARCHS. Built by `make` and
# `make test` where clang++-19 and the ROCm headers and device libraries
# are (release variant only), skipped with a note otherwise; `make hip`
# installs the packages first (tools/ensure-deps --hip). The device
# libraries are linked through $(HIP_DEVLIBS), which tools/hip-devlibs fills
# with links to ROCm's plus an oclc_isa_version file for each arch they lack
# (Debian 12's ROCm 5.2 stops at gfx940 and gfx1036). An AMD user's newer
# ROCm: make ROCM_PATH=/opt/rocm HIPCXX=/opt/rocm/llvm/bin/clang++. Linked
# with -z defs: a shared source missing from HIP_SRC fails the link, not the
# dlopen.
HIPCXX ?= $(shell command -v clang++-19 2>/dev/null)
ROCM_PATH ?= /usr
HIP_ARCHS ?= gfx90a gfx942 gfx1100 gfx1151 gfx1201
HIP_BITCODE ?= $(firstword $(wildcard $(ROCM_PATH)/lib/x86_64-linux-gnu/amdgcn/bitcode \
	$(ROCM_PATH)/amdgcn/bitcode $(ROCM_PATH)/lib/llvm/lib/clang/*/lib/amdgcn/bitcode))
HIP_LLVM_AS ?= $(or $(shell command -v llvm-as-19 2>/dev/null),$(dir $(HIPCXX))llvm-as)
HIP_DEVLIBS := build/hip-devlibs
HIP_DEVLIBS_STAMP := $(HIP_DEVLIBS)/.stamp-$(subst $(eval) ,-,$(strip $(HIP_ARCHS)))
HIP_SRC := kernels/cuda/cuda_dense.cu kernels/cuda/flash_simt.cu kernels/cuda/flash_bwd_simt.cu \
	kernels/cuda/data_gpu.cu \
	kernels/cuda/ref_gpu.cu kernels/cuda/test_kernels.cu kernels/cuda/problem_check.cu \
	$(wildcard kernels/hip/*.cpp) \
	$(wildcard kernels/hip/*.hip)
HIP_OBJ := $(addsuffix .o,$(HIP_SRC:%=$(BUILD)/hip/%))
HIP_PLUGIN := $(BUILD)/libfabench-hip.so
HIP_FLAGS := -x hip -std=c++17 -O3 -g0 -fPIC --rocm-path=$(ROCM_PATH) \
	--rocm-device-lib-path=$(HIP_DEVLIBS) $(HIP_ARCHS:%=--offload-arch=%) \
	-Wall -Wextra -Werror -include kernels/common/fa_gpu.h -MMD -MP $(HIP_EXTRA)
# why it cannot be built, "" when it can (each reason after "; ", the first
# "; " dropped)
HIP_WHY := $(wordlist 2,99,$(if $(HIPCXX),,; clang++-19 not found)$(if \
	$(wildcard $(ROCM_PATH)/include/hip/hip_runtime.h),,; no HIP headers in $(ROCM_PATH)/include)$(if \
	$(HIP_BITCODE),,; no ROCm device libraries under $(ROCM_PATH)))
ifeq ($(HIP_WHY),)
ifeq ($(VARIANT),release)
ALL_HIP := $(HIP_PLUGIN)
endif
endif
all: $(ALL_HIP)

.PHONY: hip hip-plugin
hip:
	@sh tools/ensure-deps --hip
	@$(MAKE) --no-print-directory hip-plugin
hip-plugin:
ifneq ($(HIP_WHY),)
	$(error cannot build the HIP plugin: $(HIP_WHY))
endif
hip-plugin: $(HIP_PLUGIN)

$(HIP_DEVLIBS_STAMP): tools/hip-devlibs
	$(call say,GEN,$(HIP_DEVLIBS) ($(HIP_ARCHS)))
	$(Q)rm -rf $(HIP_DEVLIBS) && LLVM_AS=$(HIP_LLVM_AS) CLANG=$(HIPCXX) \
		sh tools/hip-devlibs $(HIP_BITCODE) $(HIP_DEVLIBS) $(HIP_ARCHS) && touch $@
$(BUILD)/hip/%.o: % $(HIP_DEVLIBS_STAMP)
	@mkdir -p $(@D)
	$(call say,HIPCC,$<)
	$(Q)$(HIPCXX) $(HIP_FLAGS) -c -o $@ $<
$(HIP_PLUGIN): $(HIP_OBJ)
	$(call say,LINK,$@)
	$(Q)$(HIPCXX) --hip-link --rocm-path=$(ROCM_PATH) -shared -Wl,-z,defs -o $@ $^ -lamdhip64

# ---- cuDNN plugin (plugins/cudnn, docs/cudnn.md): C built with gcc against
# the CUDA headers (cuDNN's included); cuDNN itself is opened with dlopen when
# the plugin starts, so this builds where cuDNN is absent. Part of `all` and
# `test` where $(CUDA_HOME) has the CUDA runtime and cuDNN headers (release
# variant only: the runtime under ASan reports its own leaks):
# build/plugins/libfabench-cudnn.so, a kernel plugin found next to
# build/fabench, and build/cudnn-selftest, which runs the kernel on a GPU
# without the harness. `make cudnn-plugin` builds both.
CUDA_HOME ?= /usr/local/cuda
CUDNN_SRC := $(filter-out plugins/cudnn/selftest.c,$(wildcard plugins/cudnn/*.c))
CUDNN_PLUGIN := $(BUILD)/plugins/libfabench-cudnn.so
CUDNN_SELFTEST := $(BUILD)/cudnn-selftest
CUDNN_OBJ := $(CUDNN_SRC:%.c=$(BUILD)/pic/%.o)
CUDNN_TEST_OBJ := $(BUILD)/plugins/cudnn/selftest.o $(CUDNN_SRC:%.c=$(BUILD)/%.o)
CUDNN_LDLIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -ldl -lm -pthread
$(BUILD)/plugins/cudnn/%.o $(BUILD)/pic/plugins/cudnn/%.o: CFLAGS += -I$(CUDA_HOME)/include
# Own rules, without the harness's dependency check: the GPU machine, which
# has no SQLite or libyaml headers, builds the plugin and the self-test too.
$(BUILD)/plugins/cudnn/%.o: plugins/cudnn/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<
$(BUILD)/pic/plugins/cudnn/%.o: plugins/cudnn/%.c
	@mkdir -p $(@D)
	$(call say,CC,$< (pic))
	$(Q)$(CC) $(CFLAGS) -fPIC -c -o $@ $<
ifneq ($(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h),)
ifneq ($(wildcard $(CUDA_HOME)/include/cudnn_graph.h),)
ifeq ($(VARIANT),release)
ALL_CUDNN := $(CUDNN_PLUGIN) $(CUDNN_SELFTEST)
endif
endif
endif
all: $(ALL_CUDNN)

.PHONY: cudnn-plugin
cudnn-plugin: $(CUDNN_PLUGIN) $(CUDNN_SELFTEST)
$(CUDNN_PLUGIN): $(CUDNN_OBJ)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -shared -o $@ $^ $(CUDNN_LDLIBS)
$(CUDNN_SELFTEST): $(CUDNN_TEST_OBJ)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CUDNN_LDLIBS)

# ---- plugin SDK: one header (docs/plugins.md); examples/plugins/ build
# against the installed copy only.
PREFIX ?= /usr/local
install-sdk:
	install -d $(DESTDIR)$(PREFIX)/include/fabench
	install -m 644 include/fabench/plugin.h $(DESTDIR)$(PREFIX)/include/fabench/plugin.h

# Plugins for the ABI tests (tests/test_plugins.c): one built against the
# frozen version 1 header, and bad ones, each refused for one reason.
ABI_BAD := future nolaunch noalloc kfuture knolaunch kclash kerr knofwd kv2 kbwd kdupparam \
	kdigitparam kwide kstuck kcrash kneg
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
# It builds the CUDA plugin only where a GPU can load it: compiling it takes
# minutes, wasted on a machine with nvcc and no GPU. A GPU is usable when
# /dev/nvidia0 exists or `nvidia-smi -L` lists one (asked only for make run).
ifneq ($(filter run,$(MAKECMDGOALS)),)
ifneq ($(ALL_CUDA),)
GPU_WHY := $(shell test -e /dev/nvidia0 || nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || \
	echo 'no NVIDIA GPU here (no /dev/nvidia0, nvidia-smi lists none)')
RUN_CUDA := $(if $(GPU_WHY),,$(ALL_CUDA))
endif
endif
run: $(FABENCH) $(RUN_CUDA)
ifeq ($(NVCC),)
	@echo "note: nvcc not found; the CUDA plugin was not built"
else ifneq ($(GPU_WHY),)
	@echo "note: $(GPU_WHY): the CUDA plugin is not built for this run; \`make cuda\` builds it"
endif
	@mkdir -p results reports
	$(FABENCH) run suites/smoke.yaml --backend auto --db results/fabench.db \
		--report reports/latest.md $(FABENCH_ARGS)

test-unit: $(TESTBIN)
	$(TESTBIN)

test: $(FABENCH) $(TESTBIN) $(TEST_PLUGIN) $(TEST_PLUGIN_SLOW) $(ABI_PLUGINS) $(ALL_CUDA) $(ALL_CUDNN) $(ALL_HIP)
	@BUILD=$(BUILD) VARIANT=$(VARIANT) FABENCH_TEST_CUDNN=$(filter %.so,$(ALL_CUDNN)) \
		FABENCH_TEST_HIP=$(ALL_HIP) FABENCH_TEST_HIP_WHY="$(or $(HIP_WHY),not built in the $(VARIANT) variant)" tools/run-tests

# The README's two commands on a bare Debian 12 chroot (root, Debian's mirror):
# tools/test-fresh says what it checks.
test-fresh:
	@sh tools/test-fresh

# compute-sanitizer (memcheck, racecheck, initcheck) over suites/sanitize.yaml
# for every CUDA kernel; fails on any report. Builds nothing (run make first,
# where nvcc is): tools/sanitize-gpu says what is missing (sanitizer, GPU,
# plugin). SANITIZE_ARGS adds options (--dry-run, --log DIR, --kernels ...).
sanitize-gpu:
	@BUILD=$(BUILD) tools/sanitize-gpu $(SANITIZE_ARGS)

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(PLUGIN_TEST_OBJ:.o=.d) $(CUDA_OBJ:.o=.d)
-include $(CUDNN_OBJ:.o=.d) $(CUDNN_TEST_OBJ:.o=.d) $(HIP_OBJ:.o=.d)
