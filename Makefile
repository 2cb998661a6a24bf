# mgpu - one non-recursive build; every output goes under build/.
#   make [CUDA=auto|0|1] [MPI=auto|0|1] [CUDA_ARCHS=80,90] [SANITIZE=address,undefined]
#        [WERROR=1]
#   make help   lists the targets.

CUDA ?= auto
MPI ?= auto
# GPU code: empty builds every architecture users have that nvcc supports
# (mk/configure.sh); "80,90" builds exactly those, PTX for the newest.
CUDA_ARCHS ?=
PREFIX ?= /usr/local
DESTDIR ?=
VERSION := 0.1.0

B ?= build
ifneq ($(SANITIZE),)
override B := $(B)/san
endif

CC ?= cc
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes \
	-Wpointer-arith -Wcast-qual -Wwrite-strings -Wundef -Wvla
ifeq ($(WERROR),1)
WARN += -Werror
endif
CPPFLAGS += -Ilib -Itests -I$(B) -I/usr/include/x86_64-linux-gnu/openblas-pthread \
	-D_GNU_SOURCE -DMGPU_VERSION='"$(VERSION)"'
ALL_CFLAGS := -std=c11 $(CFLAGS) $(WARN) -pthread -MMD -MP
LDLIBS := -ldnnl -lgomp -lopenblas -lzstd -larchive -lpcre2-8 -lpng -ljpeg -lm -pthread
ifneq ($(SANITIZE),)
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
CUDA := 0
endif

# Optional parts: trial compiles in mk/configure.sh, redone when the request
# (CUDA/MPI/CUDA_ARCHS values) or the script itself changes, so that a tree
# updated in place does not build with an old configuration.
empty :=
comma := ,
CUDA_ARCHS_REQ := $(subst $(empty) $(empty),$(comma),$(strip $(CUDA_ARCHS)))
# The targets that need the project's Debian packages install them (mk/deps.sh)
# while this file is read, before the build is configured: configured first,
# the first build of a fresh machine would lack every optional part whose
# package deps installs (Open MPI) and keep that configuration.
DEPS_GOALS := deps test demo demo-lm demo-cnn demo-pose bench bench-torch bench-cnn bench-gpu gpu-check
ifneq ($(filter $(DEPS_GOALS),$(MAKECMDGOALS)),)
ifneq ($(shell sh mk/deps.sh >&2 && echo ok),ok)
$(error mk/deps.sh failed; see the message above)
endif
endif
# The checksum covers the script and where the compilers it tries are, so
# that installing mpicc or nvcc later reconfigures (MPI=auto finds it).
CONFIG_SUM := $(firstword $(shell { cat mk/configure.sh; for c in mpicc nvcc; do \
	command -v $$c; done; ls /usr/local/cuda/bin/nvcc; } 2>/dev/null | cksum))
CONFIG_REQ_NOW := $(CUDA)-$(MPI)-$(CUDA_ARCHS_REQ)-$(CONFIG_SUM)
-include $(B)/config.mk
ifneq ($(CONFIG_REQ),$(CONFIG_REQ_NOW))
$(shell mkdir -p $(B) && sh mk/configure.sh $(CUDA) $(MPI) $(B) '$(CUDA_ARCHS_REQ)' $(CONFIG_SUM) >&2)
-include $(B)/config.mk
endif
ifneq ($(CONFIG_REQ),$(CONFIG_REQ_NOW))
$(error configure failed; see the message above)
endif

LIB_SRC := $(sort $(wildcard lib/*/*.c))
LIB_CU :=
ifeq ($(HAVE_CUDA),1)
LIB_CU := $(sort $(wildcard lib/*/*.cu))
CPPFLAGS += -isystem $(CUDA_HOME)/include # CUDA runtime API from plain C (lib/gpu)
NVCCFLAGS := -O2 -g -std=c++20 -Ilib -I$(B) -DMGPU_VERSION='"$(VERSION)"' \
	$(CUDA_GENCODE) -fmad=false \
	-Xcompiler -Wall,-Wextra,-Wshadow -Werror all-warnings -MMD -MP
# cuBLAS is not linked: it is loaded on first use (lib/ops/cublas_dl.c), since
# linking it costs every process ~215 MB of resident memory at start-up.
LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lnccl -lcudart -lstdc++ -ldl
endif

# MPI (lib/comm/comm_mpi.c and whoever includes mpi.h through it): flags from
# mpicc, so plain cc builds and links it.
ifeq ($(HAVE_MPI),1)
CPPFLAGS += $(patsubst -I%,-isystem %,$(MPI_CFLAGS))
LDLIBS += $(MPI_LIBS)
endif

LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o) $(LIB_CU:%.cu=$(B)/obj/%.cu.o)
LIBA := $(B)/libmgpu.a

TOOLS := $(notdir $(wildcard tools/mgpu-*))
TOOL_BINS := $(TOOLS:%=$(B)/bin/%)
MAIN_OBJ := $(patsubst %.c,$(B)/obj/%.o,$(wildcard tools/common*.c))

# tests/drv/: helper programs that CLI tests drive (not run as tests themselves)
TEST_SRC := $(sort $(wildcard tests/unit/*.c tests/ops/*.c tests/drv/*.c))
TEST_BINS := $(TEST_SRC:%.c=$(B)/%)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BINS := $(BENCH_SRC:%.c=$(B)/%)

all: $(TOOL_BINS) $(TEST_BINS) $(BENCH_BINS)
	@echo "built: $(TOOLS) (cuda=$(HAVE_CUDA) mpi=$(HAVE_MPI)) in $(B)/bin" >&2

# The CPU backend's element loops are memory-bound passes that gcc only
# vectorises at -O3 (loop unswitching); -fno-math-errno lets sqrtf vectorise;
# -fno-trapping-math lets the clamps of GELU's erf and exp (elem.h) become
# selects. None changes a result: no reassociation, no contraction under
# -std=c11, and nothing here reads the floating-point exception flags.
$(B)/obj/lib/ops/ops_cpu.o $(B)/obj/lib/ops/rows_cpu.o $(B)/obj/lib/train/sync_shm.o $(B)/obj/lib/comm/shm.o: HOT_CFLAGS := -O3 -fno-math-errno -fno-trapping-math

# rows_cpu.c passes gcc vector types between its own static functions: gcc's
# note that AVX and non-AVX clones would pass them differently concerns no ABI.
$(B)/obj/lib/ops/rows_cpu.o: HOT_CFLAGS += -Wno-psabi

$(B)/obj/%.o: %.c $(B)/config.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(HOT_CFLAGS) -c -o $@ $<

$(B)/obj/%.cu.o: %.cu $(B)/config.h
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -c -o $@ $<

$(LIBA): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

define tool_rule
$(B)/bin/$(1): $(patsubst %.c,$(B)/obj/%.o,$(wildcard tools/$(1)/*.c)) $(MAIN_OBJ) $(LIBA)
	@mkdir -p $$(@D)
	$$(CC) $$(ALL_CFLAGS) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t))))

$(B)/bench/%: $(B)/obj/bench/%.o $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/tests/%: $(B)/obj/tests/%.o $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# deps: mk/deps.sh ran while the Makefile was read (DEPS_GOALS above)
deps:
	@:

# Tests: the normal build (unit, ops, CLI), the unit and ops binaries again
# under ASan+UBSan, and each fuzz harness for FUZZ_SECS seconds.
FUZZ_SECS ?= 10
test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory SANITIZE=address,undefined B=$(B) test-bins
	@FUZZ_SECS=$(FUZZ_SECS) sh tests/run.sh $(B) $(B)/san

test-bins: $(TEST_BINS)

# The libraries a program linked with libmgpu.a needs (tests/fuzz/run.sh
# links its harnesses with them).
print-ldlibs:
	@echo $(LDFLAGS) $(LDLIBS)

demo: deps
	@$(MAKE) --no-print-directory all
	$(B)/bin/mgpu-train --epochs 10

# A byte-level gpt on the fortune cookies of Debian's fortunes and
# fortunes-min (make deps installs them; 2.6 MB of text): text cut into
# samples of LM_CTX+1 bytes, shards, a cache, then a minute or two of
# training (LM_STEPS steps) on one CPU rank. The losses are in nats per
# byte, the *_bpb columns in bits per byte.
# LM_BPE=N learns a BPE of N merges on the training text instead (shards
# of token ids, vocab 256+N; the *_bpb columns through the tokenizer, so
# bits per byte of the same text) with the same model, batch and context.
# A BPE step costs more (the head has 256+N rows: 2.0x to 2.2x a byte
# step at N=2000 on this project's 2-core machine), so LM_BPE's default
# steps, 1350, give N=2000 the byte model's training time (README: the
# figures, make demo-lm against make demo-lm LM_BPE=2000).
LM_FILES := art computers cookie debian definitions disclaimer drugs \
	education ethnic food fortunes goedel humorists kids knghtbrd law linux \
	linuxcookie literature love magic medicine men-women miscellaneous news \
	paradoxum people perl pets platitudes politics pratchett riddles science \
	songs-poems sports startrek tao translate-me wisdom work zippy
LM_TEXT ?= $(addprefix /usr/share/games/fortunes/,$(LM_FILES))
LM_CTX ?= 64
LM_BPE ?=
LM_STEPS ?= $(if $(LM_BPE),1350,3000)
LM_MODEL ?= gpt:layers=2,heads=4,dim=64,ctx=$(LM_CTX)$(if $(LM_BPE),$(comma)vocab=$(shell echo $$((256 + $(LM_BPE)))))
LM_DIR := $(B)/demo-lm$(if $(LM_BPE),-bpe$(LM_BPE))
demo-lm: deps
	@$(MAKE) --no-print-directory all
	$(B)/bin/mgpu-shard --text --context $(LM_CTX) --val-fraction 0.1 --test-fraction 0.05 \
		$(if $(LM_BPE),--bpe $(LM_BPE)) -o $(LM_DIR)/shards/manifest.tsv $(LM_TEXT)
	$(B)/bin/mgpu-cache -q -o $(LM_DIR)/cache $(LM_DIR)/shards/manifest.tsv >/dev/null
	$(B)/bin/mgpu-train --data $(LM_DIR)/cache --model $(LM_MODEL) --optimizer adamw \
		--lr 2e-3 --warmup-steps 20 --batch-size 8 --epochs 1000 --max-steps $(LM_STEPS) \
		--log-every 200 --sample 300 --prompt 'Q: ' \
		$(if $(LM_BPE),--tokenizer $(LM_DIR)/shards/bpe.txt)

# UEA BasicMotions (6-channel smart-watch series, 4 activities) for the
# 1-D conv net, from the aeon wheel on PyPI (mk/fetch-basicmotions.sh):
# $(B)/data/BasicMotions/BasicMotions_{TRAIN,TEST}.ts; mgpu-shard reads
# the directory, its TEST file as the test split.
BASICMOTIONS := $(B)/data/BasicMotions
data-basicmotions:
	@sh mk/fetch-basicmotions.sh $(BASICMOTIONS)

# Issue 21's conv nets on CPU ranks (man/mgpu-model.7): the small ResNet of
# models/resnet-fmnist.spec on Fashion-MNIST (random crops and flips, SGD
# with Nesterov momentum, weight decay, warmup then cosine) on CNN_RANKS
# ranks, after the 1-D net of models/har-cnn1d.spec on UEA BasicMotions
# (fetched as data-basicmotions does; seconds, so a missing network shows
# at once); each run's summary record gives its test accuracy and wall_s,
# the seconds it took.
CNN_EPOCHS ?= 30
CNN_RANKS ?= 2
demo-cnn: deps
	@$(MAKE) --no-print-directory all
	@sh mk/fetch-basicmotions.sh $(BASICMOTIONS)
	$(B)/bin/mgpu-train --data $(BASICMOTIONS) --model models/har-cnn1d.spec --epochs 30 \
		--batch-size 8 --lr 0.05 --log-every 20
	$(B)/bin/mgpu-train --model models/resnet-fmnist.spec --epochs $(CNN_EPOCHS) \
		--cpu-ranks $(CNN_RANKS) --batch-size $$((128 / $(CNN_RANKS))) --lr 0.1 --nesterov \
		--weight-decay 5e-4 --warmup-epochs 0.5 --augment crop=2,flip --log-every 100

# Issue 24's pose demo on CPU ranks: examples/make_pose_data.py's 96x96
# frames (a Fashion-MNIST item placed and turned on each; keypoints at its
# centre and top) split with seed 42 and cached (mk/pose-data.sh), then
# the U-Net of models/unet-pose.spec (two skip levels; one map per part
# at output stride 4) trained on them; its summary gives test_kp_err_px,
# the mean keypoint error in pixels, and wall_s.
POSE ?= $(B)/data/pose
POSE_FRAMES ?= 4000
POSE_EPOCHS ?= 20
POSE_RANKS ?= 2
demo-pose: deps
	@$(MAKE) --no-print-directory all
	@B=$(B) sh mk/pose-data.sh $(POSE) $(POSE_FRAMES) >/dev/null
	$(B)/bin/mgpu-train --data $(POSE)/pose-$(POSE_FRAMES).cache --model models/unet-pose.spec \
		--output-stride 4 --sigma 1 --epochs $(POSE_EPOCHS) --cpu-ranks $(POSE_RANKS) \
		--batch-size $$((32 / $(POSE_RANKS))) --optimizer adamw --lr 0.003 --log-every 50

bench: deps
	@$(MAKE) --no-print-directory all
	@sh bench/run.sh $(B)

# mgpu against PyTorch on the byte-level gpt (CPU ranks; bench/lm.sh): PyTorch
# goes into $(B)/torch-venv from PyPI when missing, or is skipped offline.
bench-torch: deps
	@$(MAKE) --no-print-directory all
	@sh bench/lm.sh $(B)

# The conv net of models/resnet-fmnist.spec against PyTorch's own
# implementation of that spec (bench/torch_resnet.py) on 1 and 2 CPU ranks,
# fp32 and bf16 (bench/cnn.sh); PyTorch as for bench-torch.
bench-cnn: deps
	@$(MAKE) --no-print-directory all
	@sh bench/cnn.sh $(B)

# Issue 11's GPU comparisons on GPU 0 against PyTorch on the same GPU
# (bench/gpu.sh): the MLP at large batches, a ~100M-parameter gpt at ctx 1024.
bench-gpu: deps
	@$(MAKE) --no-print-directory all
	@sh bench/gpu.sh $(B)

# The check to run on a new GPU machine: selftest, conformance (cuda rows),
# memcheck when compute-sanitizer exists, a 10-epoch training.
gpu-check: deps
	@$(MAKE) --no-print-directory all
	@sh mk/gpu-check.sh $(B)

# mandoc's lint, and the rendered pages scanned for prose turned into flags
lint-man:
	@sh mk/lint-man.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 755 $(TOOL_BINS) $(DESTDIR)$(PREFIX)/bin
	for f in man/*.1; do install -m 644 $$f $(DESTDIR)$(PREFIX)/share/man/man1; done
	for f in $(wildcard man/*.5); do install -m 644 $$f $(DESTDIR)$(PREFIX)/share/man/man5; done
	for f in man/*.7; do install -m 644 $$f $(DESTDIR)$(PREFIX)/share/man/man7; done

clean:
	rm -rf build

help:
	@echo "targets: all (default), test, demo, demo-lm, demo-cnn, demo-pose, data-basicmotions, bench, bench-torch, bench-cnn, bench-gpu, gpu-check, deps, lint-man, install, clean, help"
	@echo "options: CUDA=auto|0|1 CUDA_ARCHS=80,90 MPI=auto|0|1 SANITIZE=address,undefined WERROR=1 PREFIX=$(PREFIX)"


.PHONY: all deps test test-bins print-ldlibs demo demo-lm demo-cnn demo-pose data-basicmotions bench bench-torch bench-cnn bench-gpu gpu-check lint-man install clean help
.PRECIOUS: $(B)/obj/%.o $(B)/obj/tests/%.o $(B)/obj/bench/%.o

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
