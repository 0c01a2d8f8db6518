#!/usr/bin/env bash
# The GPU kit: everything a lent GPU machine should run, in one call, ending in one short table.
#
#   tests/bench/gpu_proof.sh [--dry-run] [--build DIR]
#
# Builds what the GPU steps need with all cores (engine, CUDA kernels, pagedchat-cli; no Qt, no
# network libraries: -DPAGEDCHAT_NETWORK=OFF), against the Debian packages that
# installer/prepare-gpu-kit.sh unpacked into .gpu-kit/deps when they are there, then runs each
# step with its own time limit and its log kept in $OUT (default: BUILD/gpu_proof):
#   nvidia_smi         the device and driver
#   check_kernels      every CUDA kernel against its CPU reference
#   check_tiny_bf16    `check backend` (CUDA against CPU logits, teacher-forced greedy) on the tiny
#   check_1b_bf16      random shape and the llama-3.2-1b shape in bf16, and on the default model's
#   check_default_f16  first layers in f16 (.gpu-kit/models: real Q4_1 weights, its tokenizer)
#   memcheck           compute-sanitizer's memcheck over a short `check backend`
#   bench_kernels      paged decode attention GB/s against the device's copy bandwidth
#   decode_8b          batch-1 ms/token on the llama-3.1-8b shape against the weight-bytes floor
#   tput_chat          256 synthetic-chat requests through `bench throughput` (llama-3.2-1b shape)
#   hf_chat            the same requests through Hugging Face generate() in bf16 (hf_baseline.py)
# On an H100 or H200 the whole run takes under 8 minutes. Exit 0 when every step passed.
#
# --dry-run: the same build and every step on a machine without a GPU, where each GPU step must
# refuse cleanly (exit 1 or 2 with a line saying why, not a crash or a hang); exit 0 when the
# build worked and every step refused so. installer/run-tests.sh runs it, so a commit that breaks
# the kit fails the test command.
#
# On the device machine (README, "The GPU kit"): run installer/prepare-gpu-kit.sh here, then
#   device run, carry [".gpu-kit"]:  bash tests/bench/gpu_proof.sh
# JOBS=N build parallelism (default: all cores); ARCH=90; PYTHON=python3.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DRY=0
BUILD=$ROOT/build-gpu
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) DRY=1 ;;
    --build) BUILD=$2; shift ;;
    *) echo "usage: gpu_proof.sh [--dry-run] [--build DIR]" >&2; exit 2 ;;
  esac
  shift
done
JOBS=${JOBS:-$(nproc)}
ARCH=${ARCH:-90}
PYTHON=${PYTHON:-python3}
LOGS=${OUT:-$BUILD/gpu_proof}
KIT=$ROOT/.gpu-kit
mkdir -p "$LOGS"
start=$SECONDS

# --- build ---------------------------------------------------------------------------------
deps=()
[ -d "$KIT/deps" ] && deps=(-DPAGEDCHAT_DEPS_DIR="$KIT/deps")
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if ! cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DPAGEDCHAT_CUDA=ON \
       -DPAGEDCHAT_GUI=OFF -DPAGEDCHAT_TESTS=OFF -DPAGEDCHAT_SERVER=OFF -DPAGEDCHAT_NETWORK=OFF "${deps[@]}" \
       -DPAGEDCHAT_CUDA_ARCHITECTURES="$ARCH" >"$LOGS/configure.log" 2>&1 \
   || ! cmake --build "$BUILD" --target pagedchat-cli -j "$JOBS" >"$LOGS/build.log" 2>&1; then
  echo "gpu_proof: the build failed (logs: $LOGS/configure.log, $LOGS/build.log)"
  tail -25 "$LOGS/configure.log" "$LOGS/build.log" 2>/dev/null
  exit 1
fi
cli=$BUILD/app/cli/pagedchat-cli
echo "gpu_proof: built in $((SECONDS - start)) s${deps:+ (with .gpu-kit/deps)}"

# --- steps ---------------------------------------------------------------------------------
declare -A rc took
order=()
step() {  # step NAME TIMEOUT_S COMMAND...: its output in $LOGS/NAME.log, its exit code kept
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  order+=("$name")
  timeout -k 10 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  rc[$name]=$?
  took[$name]=$((SECONDS - t0))
  echo "== $name: exit ${rc[$name]}, ${took[$name]} s"
  tail -40 "$LOGS/$name.log"
}
absent() {  # absent NAME TOOL: the step cannot run here; says so as the step's own refusal
  order+=("$1")
  echo "$2 is not on this machine" >"$LOGS/$1.log"
  rc[$1]=2
  took[$1]=0
  echo "== $1: $2 is not on this machine"
}

if command -v nvidia-smi >/dev/null; then
  step nvidia_smi 30 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
else
  absent nvidia_smi nvidia-smi
fi
step check_kernels 240 "$cli" check kernels --seed 1
step check_tiny_bf16 60 "$cli" check backend --random-weights tiny --dtype bf16 --steps 64
step check_1b_bf16 150 "$cli" check backend --random-weights llama-3.2-1b --dtype bf16 --steps 16 --prompts 2
default_model=$(ls "$KIT"/models/default-*-layers.gguf 2>/dev/null | head -1)
if [ -n "$default_model" ]; then
  step check_default_f16 90 "$cli" check backend --model "$default_model" --dtype f16 --steps 32
else
  absent check_default_f16 "$KIT/models/default-*-layers.gguf (installer/prepare-gpu-kit.sh)"
fi
if command -v compute-sanitizer >/dev/null; then
  step memcheck 180 compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$cli" check backend --random-weights tiny --dtype bf16 --steps 4 --prompts 2
else
  absent memcheck compute-sanitizer
fi
step bench_kernels 120 "$cli" bench kernels
step decode_8b 150 "$cli" bench decode --backend cuda --random-weights llama-3.1-8b --prompt-tokens 128 \
  --decode-tokens 128 --repeats 3 --json
step tput_chat 150 "$cli" bench throughput --backend cuda --random-weights llama-3.2-1b --num-requests 256 \
  --concurrency 256 --seed 1 --max-batched-tokens 8192 --dataset synthetic-chat --write-workload "$LOGS/chat.jsonl" --json
if "$PYTHON" -c "import torch, transformers" 2>/dev/null; then
  if [ -s "$LOGS/chat.jsonl" ]; then
    step hf_chat 150 "$PYTHON" "$ROOT/tests/bench/hf_baseline.py" --shape llama-3.2-1b --workload "$LOGS/chat.jsonl" \
      --label synthetic-chat
  else
    absent hf_chat "the workload tput_chat writes ($LOGS/chat.jsonl)"
  fi
else
  absent hf_chat "torch with transformers (for $PYTHON)"
fi

# --- the table -----------------------------------------------------------------------------
field() { grep -o "\"$2\":[^,}]*" "$LOGS/$1.log" 2>/dev/null | tail -1 | cut -d: -f2 | tr -d '"'; }
last_line() { grep -v '^[[:space:]]*$' "$LOGS/$1.log" 2>/dev/null | tail -1 | cut -c1-90; }
figure() {  # what a passed step measured, in a few words
  case $1 in
    nvidia_smi) last_line nvidia_smi ;;
    check_*|memcheck) last_line "$1" ;;
    bench_kernels) grep -o "bar (batch 64 x 2k.*" "$LOGS/bench_kernels.log" | head -1 ;;
    decode_8b) echo "$(field decode_8b ms_per_token) ms/token, floor $(field decode_8b floor_ms) ms, ratio $(field decode_8b ratio) (bar 1.3)" ;;
    tput_chat) echo "$(field tput_chat output_tok_s) tok/s, $(field tput_chat requests_s) req/s" ;;
    hf_chat) echo "$(field hf_chat output_tok_s) tok/s, $(field hf_chat requests_s) req/s (ours >= 5x: bar)" ;;
  esac
}
echo
if [ $DRY = 1 ]; then
  echo "================ GPU kit, dry run (no GPU here): every step must refuse cleanly ================"
else
  echo "================ GPU kit: $(last_line nvidia_smi) ================"
fi
status=0
for name in "${order[@]}"; do
  r=${rc[$name]}
  if [ $DRY = 1 ]; then
    # A clean refusal: exit 1 or 2 with its reason as the last line; 0 would mean no GPU was
    # needed, 124 or more a hang or a crash.
    if { [ "$r" = 1 ] || [ "$r" = 2 ]; } && [ -n "$(last_line "$name")" ]; then verdict="refused: $(last_line "$name")"
    else verdict="NOT a clean refusal (exit $r)"; status=1; fi
  elif [ "$r" = 0 ]; then verdict="ok   $(figure "$name")"
  else verdict="FAILED (exit $r): $(last_line "$name")"; status=1; fi
  printf "%-18s %4s s  %s\n" "$name" "${took[$name]}" "$verdict"
done
echo "total $((SECONDS - start)) s; logs in $LOGS"
exit $status
