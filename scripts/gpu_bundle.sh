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
for pkg in cuda gpuio featurestore planned tiers/gpu tiers/host tiers/ssd; do
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
  elif command -v apt-get >/dev/null && (cd "$stage" && apt-get download -q liburing-dev >/dev/null 2>&1); then
    # No liburing installed: link against the Debian package's static library, unpacked here.
    dpkg-deb -x "$stage"/liburing-dev_*.deb "$stage/uring"
    gcc -O2 -static -I"$stage/uring/usr/include" -o "$stage/gpu/iobench" "$roof/iobench.c" \
      "$stage/uring/usr/lib/x86_64-linux-gnu/liburing.a"
    rm -rf "$stage"/liburing-dev_*.deb "$stage/uring"
  else
    echo "gpu_bundle: no liburing (install liburing-dev): no iobench in the bundle" >&2
  fi
fi
# pytest for the Python CUDA suites there (the GPU machine has none and no network): pure-Python
# wheels in .whl, which gpu_test.sh installs; carry .whl with the bundle.
if [ ! -f .whl/pytest-9.2.0-py3-none-any.whl ]; then
  python3 -m pip download -q --no-deps --only-binary=:all: -d .whl pytest==9.2.0 pluggy==1.6.0 iniconfig==2.1.0 \
    packaging==25.0 pygments==2.19.2 2>/dev/null || echo "gpu_bundle: no pytest wheels (the Python CUDA suites will be skipped there)"
fi
tar -C "$stage" -cJf "$build/gpu-bundle.tar.xz" .
rm -rf "$stage"
echo "gpu bundle: $build/gpu-bundle.tar.xz ($(du -h "$build/gpu-bundle.tar.xz" | cut -f1))"
