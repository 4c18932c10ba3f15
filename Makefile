# tierfs — `make` lists the targets.
SHELL := /bin/bash
GO ?= go
BUILD := build
PYTHON ?= python3
VENV := .venv
VENV_PY := $(VENV)/bin/python
DEMO_DIR := $(BUILD)/demo

.DEFAULT_GOAL := help
.PHONY: help build lib demo test go-test c-test py-test dgl-test venv dgl-venv bench clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

build: ## build the CLI into build/tierfs
	$(GO) build -o $(BUILD)/tierfs ./cmd/tierfs

lib: ## build the C library build/libtierfs.so and build/tierfs.h
	$(GO) build -buildmode=c-shared -o $(BUILD)/libtierfs.so ./capi
	cp capi/tierfs.h $(BUILD)/tierfs.h

demo: build ## the main job on the built-in default dataset: synth, verify, gather, sample, bench
	./scripts/demo.sh $(BUILD)/tierfs $(DEMO_DIR)

test: go-test c-test py-test dgl-test ## every test this machine can run
	@echo "make test: all suites passed"

go-test: ## Go unit tests with the race detector
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

c-test: lib ## build and run the C and C++ examples
	./scripts/c_test.sh $(BUILD)

venv: $(VENV)/.done ## Python environment for the package and its tests (pinned)
$(VENV)/.done: python/requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install -q --upgrade pip
	$(VENV_PY) -m pip install -q -r python/requirements-test.txt
	touch $@

py-test: lib venv ## Python, PyG and FUSE-from-Python tests
	./scripts/py_test.sh $(VENV_PY)

dgl-test: lib ## DGL tests in their own environment (.venv-dgl: dgl 2.1.0, torch 2.2.1)
	./scripts/dgl_test.sh

bench: build ## gather benchmarks on a synthetic dataset (see BENCHMARKS.md)
	./scripts/bench.sh $(BUILD)/tierfs

clean: ## remove build outputs
	rm -rf $(BUILD)
