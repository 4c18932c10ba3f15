#!/usr/bin/env bash
# gpu_bundle.sh BUILD: compile, here where Go is, what a GPU machine without Go needs for
# `make gpu-test`: the GPU test binaries, the CLI, the C library and the roofline probes, packed
# into BUILD/gpu-bundle.tar.xz (small enough to carry; gpu_test.sh unpacks it).
set -euo pipefail
build=${1:-build}
stage=$build/gpu-stage
rm -rf "$stage"
mkdir -p "$stage/gpu"
flags=(-trimpath -ldflags=-s\ -w)
for pkg in gpuio/cuda gpuio featurestore; do
  go test -c "${flags[@]}" -o "$stage/gpu/$(echo "$pkg" | tr / _).test" "./$pkg"
done
go build "${flags[@]}" -o "$stage/tierfs" ./cmd/tierfs
go build "${flags[@]}" -buildmode=c-shared -o "$stage/libtierfs.so" ./capi
rm -f "$stage/libtierfs.h"
# The roofline probes: gather.cu is compiled there, iobench here (static: no liburing there).
roof=""
for d in shared/tools/roofline ../shared/tools/roofline; do [ -f "$d/gather.cu" ] && roof=$d && break; done
if [ -n "$roof" ]; then
  mkdir -p "$stage/gpu/roofline"
  cp "$roof/gather.cu" "$roof/iobench.c" "$stage/gpu/roofline/"
  if [ -f /usr/include/liburing.h ]; then
    gcc -O2 -static -o "$stage/gpu/iobench" "$roof/iobench.c" -luring
  fi
fi
tar -C "$stage" -cJf "$build/gpu-bundle.tar.xz" .
rm -rf "$stage"
echo "gpu bundle: $build/gpu-bundle.tar.xz ($(du -h "$build/gpu-bundle.tar.xz" | cut -f1))"
