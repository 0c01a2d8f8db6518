#!/usr/bin/env bash
# On a GPU machine (no Qt needed): build engine + CUDA kernels + pagedchat-cli, then check and
# measure the CUDA backend end to end, and print one short table:
#   1. correctness: `check backend` (CUDA vs CPU logits, teacher-forced greedy, 64 decode steps
#      over 4 batched prompts) on the random "tiny" model in bf16 and f16, and 16 steps on the
#      llama-3.2-1b shape in bf16; each exits 1 on an error over its tolerance or a top-1
#      mismatch that is not a near-tie
#   2. decode at batch 1 on the llama-3.1-8b shape: ms/token against the floor (weight bytes /
#      device-to-device copy bandwidth); the bar is 1.3x
#   3. throughput, 256 requests on the llama-3.2-1b shape, fixed seed: 1024 in / 256 out, and the
#      synthetic-chat mix; then the same workloads through Hugging Face generate() in bf16 with
#      static batches of 64 (tests/bench/hf_baseline.py; skipped when torch is missing)
# Meant to finish in about 10 minutes on an H200 including the build.
#
#   tests/bench/gpu_backend.sh [BUILD_DIR]   (default: build-gpu in the repo root)
#   JOBS=N build parallelism (default: all cores); ARCH=90; PYTHON=python3
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-gpu}
JOBS=${JOBS:-$(nproc)}
ARCH=${ARCH:-90}
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$BUILD/gpu_backend}
mkdir -p "$OUT"
start=$SECONDS
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if ! cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DPAGEDCHAT_CUDA=ON \
       -DPAGEDCHAT_GUI=OFF -DPAGEDCHAT_TESTS=OFF -DPAGEDCHAT_SERVER=OFF -DPAGEDCHAT_CUDA_ARCHITECTURES="$ARCH" \
       >"$OUT/configure.log" 2>&1 \
   || ! cmake --build "$BUILD" --target pagedchat-cli -j "$JOBS" >"$OUT/build.log" 2>&1; then
  echo "build failed: see $OUT/configure.log and $OUT/build.log"; tail -20 "$OUT/build.log" 2>/dev/null
  exit 1
fi
cli="$BUILD/app/cli/pagedchat-cli"
echo "build: $((SECONDS - start)) s"

declare -A result
step() {  # step NAME TIMEOUT_S COMMAND...: runs it with its output in $OUT/NAME.log, records the exit code
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  result[$name]=$rc
  echo "== $name: exit $rc, $((SECONDS - t0)) s"; cat "$OUT/$name.log"
}

# 1. Correctness.
step check_tiny_bf16 60 "$cli" check backend --random-weights tiny --dtype bf16 --steps 64
step check_tiny_f16 60 "$cli" check backend --random-weights tiny --dtype f16 --steps 64
step check_1b_bf16 150 "$cli" check backend --random-weights llama-3.2-1b --dtype bf16 --steps 16 --prompts 2

# 2. Decode at batch 1, 8B shape.
step decode_8b 150 "$cli" bench decode --backend cuda --random-weights llama-3.1-8b --prompt-tokens 128 \
  --decode-tokens 128 --repeats 3 --json

# 3. Throughput, 1B shape, 256 requests, fixed seed.
common=(--backend cuda --random-weights llama-3.2-1b --num-requests 256 --concurrency 256 --seed 1
        --max-batched-tokens 8192 --json)
step tput_fixed 180 "$cli" bench throughput "${common[@]}" --input-len 1024 --output-len 256 \
  --write-workload "$OUT/fixed.jsonl"
step tput_chat 180 "$cli" bench throughput "${common[@]}" --dataset synthetic-chat --write-workload "$OUT/chat.jsonl"
if "$PYTHON" -c "import torch, transformers" 2>/dev/null; then
  step hf_fixed 150 "$PYTHON" "$ROOT/tests/bench/hf_baseline.py" --shape llama-3.2-1b --workload "$OUT/fixed.jsonl" --label fixed
  step hf_chat 150 "$PYTHON" "$ROOT/tests/bench/hf_baseline.py" --shape llama-3.2-1b --workload "$OUT/chat.jsonl" --label synthetic-chat
else
  echo "torch/transformers not importable with $PYTHON: Hugging Face baseline skipped"
fi

# One short table.
field() { grep -o "\"$2\":[^,}]*" "$OUT/$1.log" 2>/dev/null | tail -1 | cut -d: -f2 | tr -d '"'; }
verdict() { grep -o "check backend: [A-Z]*" "$OUT/$1.log" 2>/dev/null | tail -1 | cut -d' ' -f3; }
echo
echo "================ CUDA backend, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) ================"
printf "%-34s %s\n" "check tiny bf16 (64 steps)" "${result[check_tiny_bf16]:-?} $(verdict check_tiny_bf16)"
printf "%-34s %s\n" "check tiny f16 (64 steps)" "${result[check_tiny_f16]:-?} $(verdict check_tiny_f16)"
printf "%-34s %s\n" "check llama-3.2-1b bf16 (16 steps)" "${result[check_1b_bf16]:-?} $(verdict check_1b_bf16)"
printf "%-34s %s ms/token, floor %s ms, ratio %s (bar 1.3)\n" "decode batch 1, llama-3.1-8b" \
  "$(field decode_8b ms_per_token)" "$(field decode_8b floor_ms)" "$(field decode_8b ratio)"
for w in fixed chat; do
  printf "%-34s ours %s tok/s (%s req/s)   HF static-64 %s tok/s (%s req/s)\n" "throughput 1b, $w" \
    "$(field tput_$w output_tok_s)" "$(field tput_$w requests_s)" "$(field hf_$w output_tok_s)" "$(field hf_$w requests_s)"
done
echo "total $((SECONDS - start)) s; logs in $OUT"
rc=0
for k in check_tiny_bf16 check_tiny_f16 check_1b_bf16 decode_8b tput_fixed tput_chat; do
  [ "${result[$k]:-1}" = 0 ] || rc=1
done
exit $rc
