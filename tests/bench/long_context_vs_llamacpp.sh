#!/usr/bin/env bash
# Prompt and decode speed of PagedChat against llama.cpp's own C++ llama-batched-bench at
# long contexts, single stream, 2 threads, interleaved so both see the same machine load.
# Usage: tests/bench/long_context_vs_llamacpp.sh [build-dir] [model.gguf] [rounds] [contexts]
#   contexts: comma-separated prompt lengths (default 512,2048,4000,8000)
#   KV_TYPE:  our --kv-type (default f16, llama.cpp's default); empty omits the flag for a
#             CLI that predates it. llama.cpp always runs with its default f16 KV cache.
# Prints a Markdown table of medians over the rounds; ratio = ours / llama.cpp.
# The C++ tool, not llama-cpp-python, so no Python binding overhead skews long prompts.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:-$here/../../build}"
model="${2:-$HOME/.cache/pagedchat/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
rounds="${3:-3}"
contexts="${4:-512,2048,4000,8000}"
kv_type="${KV_TYPE-f16}"
cli="$build/app/cli/pagedchat-cli"
decode=64

# Same pinned version as llamacpp_baseline.sh, so both baselines are one llama.cpp.
version="${LLAMACPP_PYTHON_VERSION:-0.3.36}"
cache="$HOME/.cache/pagedchat/bench"
src="$cache/llamacpp-src/llama_cpp_python-$version/vendor/llama.cpp"
lbuild="$cache/llamacpp-build-$version"
peer="$lbuild/bin/llama-batched-bench"

[ -f "$model" ] || { echo "long_context_vs_llamacpp: model not found: $model" >&2; exit 1; }

# Idempotent: the build takes minutes on 2 cores. The llama.cpp sources come from the PyPI
# sdist because PyPI is the only network this machine reaches.
if [ ! -x "$peer" ]; then
  echo "long_context_vs_llamacpp: building llama-batched-bench $version into $lbuild (minutes)" >&2
  if [ ! -d "$src" ]; then
    python3 -m pip download --quiet --no-binary :all: --no-deps "llama-cpp-python==$version" \
      -d "$cache/llamacpp-src" >&2
    tar -xzf "$cache/llamacpp-src/llama_cpp_python-$version.tar.gz" -C "$cache/llamacpp-src"
  fi
  # GGML_NATIVE: this CPU's SIMD, the fair peer of our native build.
  nice -n 10 cmake -S "$src" -B "$lbuild" -DGGML_NATIVE=ON -DGGML_CUDA=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >&2
  # -j2 and nice: leave room for other builds on this 2-core machine.
  nice -n 10 cmake --build "$lbuild" --target llama-batched-bench -j2 >&2
fi

ours=1
[ -x "$cli" ] || { echo "long_context_vs_llamacpp: $cli not built, llama.cpp only" >&2; ours=0; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
IFS=, read -ra ctxs <<< "$contexts"
for ((r = 0; r < rounds; r++)); do
  for n in "${ctxs[@]}"; do
    # -c: prompt + decode + the 16-token warm-up. -fa on, not the default auto: flash
    # attention is llama.cpp's fastest CPU path at long context, so force it.
    "$peer" -m "$model" -c $((n + decode + 16)) -b 2048 -ub 512 -npp "$n" -ntg "$decode" -npl 1 \
      -t 2 -fa on --output-format jsonl 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    if l.startswith("{"):
        j = json.loads(l)
        print(json.dumps({"engine": "llama.cpp", "threads": j["n_threads"], "prompt_tokens": j["pp"],
                          "prompt_tok_s": j["speed_pp"], "decode_tokens": j["tg"], "decode_tok_s": j["speed_tg"]}))
' >> "$out"
    if ((ours)); then
      "$cli" bench --model "$model" --threads 2 --prompt-tokens "$n" --decode-tokens "$decode" \
        --repeats 1 --json ${kv_type:+--kv-type "$kv_type"} >> "$out" ||
        echo "long_context_vs_llamacpp: pagedchat-cli bench failed at context $n (KV_TYPE='$kv_type')" >&2
    fi
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def med(engine, n, key):
    v = [r[key] for r in rows if r["engine"] == engine and r["prompt_tokens"] == n]
    return statistics.median(v) if v else float("nan")
print("| context | llama.cpp prompt tok/s | ours prompt tok/s | ratio | llama.cpp decode tok/s | ours decode tok/s | ratio |")
print("|---|---|---|---|---|---|---|")
for n in sorted({r["prompt_tokens"] for r in rows}):
    lp, op = med("llama.cpp", n, "prompt_tok_s"), med("pagedchat", n, "prompt_tok_s")
    ld, od = med("llama.cpp", n, "decode_tok_s"), med("pagedchat", n, "decode_tok_s")
    print(f"| {n} | {lp:.1f} | {op:.1f} | {op/lp:.2f} | {ld:.1f} | {od:.1f} | {od/ld:.2f} |")
PY
