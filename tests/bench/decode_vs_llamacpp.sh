#!/usr/bin/env bash
# Single-stream speed of PagedChat against llama.cpp on the same model, thread counts and
# machine, measured in one run (interleaved, so both see the same machine load).
# Usage: tests/bench/decode_vs_llamacpp.sh [build-dir] [model.gguf] [rounds]
# Prints a Markdown table: prompt and decode tok/s of both, and our/llama.cpp ratios (the
# median over the rounds).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:-$here/../../build}"
model="${2:-$HOME/.cache/pagedchat/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
rounds="${3:-3}"
cli="$build/app/cli/pagedchat-cli"
[ -x "$cli" ] || { echo "decode_vs_llamacpp: $cli not built" >&2; exit 1; }

out=$(mktemp)
for ((r = 0; r < rounds; r++)); do
  bash "$here/llamacpp_baseline.sh" "$model" >> "$out"
  "$cli" bench --model "$model" --threads 1,2 --prompt-tokens 128 --decode-tokens 128 --repeats 1 --json >> "$out"
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def med(engine, threads, key):
    v = [r[key] for r in rows if r["engine"] == engine and r["threads"] == threads]
    return statistics.median(v) if v else float("nan")
print("| threads | llama.cpp prompt tok/s | ours prompt tok/s | ratio | llama.cpp decode tok/s | ours decode tok/s | ratio |")
print("|---|---|---|---|---|---|---|")
for t in sorted({r["threads"] for r in rows}):
    lp, op = med("llama.cpp", t, "prompt_tok_s"), med("pagedchat", t, "prompt_tok_s")
    ld, od = med("llama.cpp", t, "decode_tok_s"), med("pagedchat", t, "decode_tok_s")
    print(f"| {t} | {lp:.1f} | {op:.1f} | {op/lp:.2f} | {ld:.1f} | {od:.1f} | {od/ld:.2f} |")
PY
rm -f "$out"
