#!/usr/bin/env bash
# On a GPU machine: build engine + CUDA kernels + pagedchat-cli without Qt, then run
#   pagedchat-cli check kernels   (each kernel vs its CPU reference; exit 1 on any mismatch)
#   pagedchat-cli bench kernels   (decode attention GB/s vs device copy; prefill TFLOP/s)
# and print both tables. Meant to finish in about 8 minutes including the build.
# Lives beside the other scripts that run the CLI's benchmarks on a prepared machine.
#
#   tests/bench/gpu_check.sh [BUILD_DIR]     (default: build-gpu in the repo root)
#   JOBS=N  build parallelism (default: all cores);  SEED=S  the check's inputs
#
# If the full CMake configure fails there (no sentencepiece/pcre2, an older CMake), the script
# compiles just the kernels, their references and a small driver with nvcc directly: the check
# and the bench need nothing else.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-gpu}
JOBS=${JOBS:-$(nproc)}
SEED=${SEED:-$RANDOM}
ARCH=${ARCH:-90}
start=$SECONDS
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

cli=""
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DPAGEDCHAT_CUDA=ON \
     -DPAGEDCHAT_GUI=OFF -DPAGEDCHAT_TESTS=OFF -DPAGEDCHAT_SERVER=OFF -DPAGEDCHAT_CUDA_ARCHITECTURES="$ARCH" \
     >"$BUILD.configure.log" 2>&1 \
   && cmake --build "$BUILD" --target pagedchat-cli -j "$JOBS" >"$BUILD.build.log" 2>&1; then
  cli="$BUILD/app/cli/pagedchat-cli"
  run_check() { "$cli" check kernels --seed "$SEED"; }
  run_bench() { "$cli" bench kernels; }
else
  echo "CMake build failed (see $BUILD.configure.log / $BUILD.build.log); compiling the kernels directly"
  mkdir -p "$BUILD/direct" && cd "$BUILD/direct" || exit 1
  cat > driver.cpp <<'CPP'
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "engine/common/error.h"
#include "kernels/tools/kernel_tools.h"
int main(int argc, char** argv) {
  try {
    if (argc > 1 && std::strcmp(argv[1], "bench") == 0) return pagedchat::kernels::run_kernel_bench();
    return pagedchat::kernels::run_kernel_check(argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 1234u);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
CPP
  objs=()
  for f in "$ROOT"/kernels/*.cu; do
    o=$(basename "$f" .cu).o; objs+=("$o")
    nvcc -O3 -std=c++17 --expt-relaxed-constexpr -lineinfo -I"$ROOT" \
      -gencode arch=compute_$ARCH,code=sm_$ARCH -gencode arch=compute_$ARCH,code=compute_$ARCH -c "$f" -o "$o" &
  done
  for f in "$ROOT"/kernels/*.cpp "$ROOT"/kernels/reference/*.cpp driver.cpp; do
    o=$(basename "$f" .cpp).o; objs+=("$o")
    g++ -O2 -std=c++20 -I"$ROOT" -I"$(dirname "$(command -v nvcc)")/../include" -c "$f" -o "$o" &
  done
  wait
  nvcc -o kernel_tool "${objs[@]}" -lcublas || exit 1
  run_check() { ./kernel_tool check "$SEED"; }
  run_bench() { ./kernel_tool bench; }
fi
echo "build: $((SECONDS - start)) s"

check_start=$SECONDS
timeout 300 bash -c "$(declare -f run_check); cli='$cli'; SEED='$SEED'; run_check"
check_rc=$?
echo "check: $((SECONDS - check_start)) s, exit $check_rc"
bench_start=$SECONDS
timeout 150 bash -c "$(declare -f run_bench); cli='$cli'; run_bench"
bench_rc=$?
echo "bench: $((SECONDS - bench_start)) s, exit $bench_rc; total $((SECONDS - start)) s"
exit $(( check_rc != 0 || bench_rc != 0 ))
