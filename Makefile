# tierfs — `make` lists the targets.
SHELL := /bin/bash
GO ?= go
BUILD := build
PYTHON ?= python3
VENV := .venv
VENV_PY := $(VENV)/bin/python
DEMO_DIR := $(BUILD)/demo

.DEFAULT_GOAL := help
.PHONY: help build lib install demo test go-test c-test py-test dgl-test wheel wheel-test venv dgl-venv bench advise-validate clean cuda gpu-bundle gpu-test abi-check binding

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

build: ## build the CLI into build/tierfs
	$(GO) build -o $(BUILD)/tierfs ./cmd/tierfs

# The C library's SONAME is libtierfs.so.<ABI major>; the major is TFS_ABI_VERSION of capi/tierfs.h
# (the one source of truth: tfs_abi_version() returns it).
ABI_MAJOR := $(shell sed -n 's/^\#define TFS_ABI_VERSION \([0-9][0-9]*\).*/\1/p' capi/tierfs.h)
SONAME := libtierfs.so.$(ABI_MAJOR)
VERSION := $(shell sed -n 's/^const Version = "\([^"]*\)".*/\1/p' cli/version.go)
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# The C headers: tierfs.h and the headers it includes, one per concern (tierfs_store.h, ...).
HEADERS := $(wildcard capi/tierfs*.h)

lib: ## build the C library build/libtierfs.so (SONAME libtierfs.so.N, N = TFS_ABI_VERSION) and build/tierfs*.h
	@test -n "$(ABI_MAJOR)" || { echo "no #define TFS_ABI_VERSION in capi/tierfs.h" >&2; exit 1; }
	$(GO) build -buildmode=c-shared -ldflags '-extldflags "-Wl,-soname,$(SONAME)"' -o $(BUILD)/libtierfs.so ./capi
	rm -f $(BUILD)/libtierfs.h  # cgo's header: capi/tierfs.h is the one to include
	ln -sfn libtierfs.so $(BUILD)/$(SONAME)  # what programs linked against it load
	rm -f $(BUILD)/tierfs*.h
	cp $(HEADERS) $(BUILD)/

install: lib ## install the C library, tierfs.h (and the tierfs_*.h it includes) and tierfs.pc under PREFIX (default /usr/local; DESTDIR honoured)
	install -d "$(DESTDIR)$(LIBDIR)" "$(DESTDIR)$(INCLUDEDIR)" "$(DESTDIR)$(PKGCONFIGDIR)"
	install -m 755 $(BUILD)/libtierfs.so "$(DESTDIR)$(LIBDIR)/$(SONAME)"
	ln -sfn $(SONAME) "$(DESTDIR)$(LIBDIR)/libtierfs.so"
	install -m 644 $(HEADERS) "$(DESTDIR)$(INCLUDEDIR)/"
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	  -e 's|@VERSION@|$(VERSION)|g' capi/tierfs.pc.in >"$(DESTDIR)$(PKGCONFIGDIR)/tierfs.pc"
	@echo "installed $(DESTDIR)$(LIBDIR)/$(SONAME), $(notdir $(HEADERS)) in $(DESTDIR)$(INCLUDEDIR), $(DESTDIR)$(PKGCONFIGDIR)/tierfs.pc"

demo: build ## the main job on the built-in default dataset: synth, verify, gather, sample, bench
	./scripts/demo.sh $(BUILD)/tierfs $(DEMO_DIR)

test: go-test c-test py-test wheel-test dgl-test ## every test this machine can run
	@echo "make test: all suites passed"

go-test: ## Go unit tests with the race detector
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

c-test: lib build ## build and run the C and C++ examples
	./scripts/c_test.sh $(BUILD)

venv: $(VENV)/.done ## Python environment for the package and its tests (pinned)
$(VENV)/.done: python/requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install -q --upgrade pip
	$(VENV_PY) -m pip install -q -r python/requirements-test.txt
	touch $@

py-test: lib venv ## Python, PyG and FUSE-from-Python tests
	./scripts/py_test.sh $(VENV_PY)

wheel: ## the pip wheel build/wheel/tierfs-*-py3-none-manylinux_2_34_x86_64.whl (auditwheel; tierfs console script)
	./scripts/build_wheel.sh $(BUILD)/wheel

wheel-test: venv ## build the wheel, install it in a fresh venv without Go, run tierfs and the README quick start
	./scripts/wheel_test.sh $(VENV_PY)

dgl-test: lib ## DGL tests in their own environment (.venv-dgl: dgl 2.1.0, torch 2.2.1)
	./scripts/dgl_test.sh

bench: build ## gather benchmarks on a synthetic dataset (see BENCHMARKS.md)
	./scripts/bench.sh $(BUILD)/tierfs

advise-validate: build ## predicted vs measured seeds/s of `tierfs advise`, 4 host cache sizes x 3 runs (~1 min)
	./scripts/advise_validate.sh $(BUILD)/tierfs $(BUILD)/advise-validate

NVCC ?= nvcc
# sm_90 machine code for Hopper, plus PTX that newer and older (>= sm_75) GPUs compile at load.
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75

cuda: $(BUILD)/libtierfs_cuda.so ## build the CUDA shim build/libtierfs_cuda.so (needs nvcc)
$(BUILD)/libtierfs_cuda.so: cuda/tierfs_cuda.cu cuda/tierfs_cuda.h
	@mkdir -p $(BUILD)
	$(NVCC) -O3 -std=c++17 -shared -Xcompiler -fPIC $(CUDA_ARCH) -o $@ $<

gpu-bundle: ## Go test binaries, CLI and library for a GPU machine without Go (build/gpu-bundle.tar.xz)
	./scripts/gpu_bundle.sh $(BUILD)

gpu-test: ## GPU tests, sanitizer runs and GPU benchmarks (on a GPU machine; builds the bundle where Go exists)
	if command -v $(GO) >/dev/null; then $(MAKE) gpu-bundle; fi
	$(MAKE) cuda
	./scripts/gpu_test.sh $(BUILD)

clean: ## remove build outputs
	rm -rf $(BUILD)

binding: ## regenerate python/tierfs/_abi.py (the ctypes declarations) from capi/tierfs.h (pybind/gen_binding.py)
	$(PYTHON) pybind/gen_binding.py

abi-check: lib ## the binding is current, the library exports the headers' functions, ctypes lays structs out as C (pybind/check_abi.py)
	$(PYTHON) pybind/check_abi.py
