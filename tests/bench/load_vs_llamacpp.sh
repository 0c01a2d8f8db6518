#!/usr/bin/env bash
# Open to first token, and peak resident memory, of PagedChat against llama.cpp on one model.
# Each engine loads the file, reads a 5-token prompt and writes one token, in a process of its
# own under /usr/bin/time (wall seconds from exec, peak RSS); both start from the same warm page
# cache (the file is read once first, as a second launch of the app finds it). For ours,
# `pagedchat-cli bench load` also reports the peak above what the process held before opening
# the model (the CLI links cuBLAS where CUDA is installed), against the file's size: the issue's
# bar is 1.10. Alternated for the given rounds; medians. Prints a Markdown table.
# Usage: tests/bench/load_vs_llamacpp.sh MODEL.gguf [rounds] [build-dir]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
model="$1"
rounds="${2:-3}"
build="${3:-$here/../../build}"
cli="$build/app/cli/pagedchat-cli"
llama="$HOME/.cache/pagedchat/llama.cpp/build/bin/llama-batched-bench"
[ -x "$cli" ] && [ -x "$llama" ] || { echo "load_vs_llamacpp: build $cli and run installer/build-llama-server.sh" >&2; exit 1; }
cat "$model" > /dev/null
out=$(mktemp)
for ((r = 0; r < rounds; r++)); do
  /usr/bin/time -f "time llama.cpp %e %M" "$llama" -m "$model" -c 512 -b 512 -ub 512 -npp 5 -ntg 1 -npl 1 -t 2 \
    >/dev/null 2>>"$out"
  /usr/bin/time -f "time pagedchat %e %M" "$cli" bench load --model "$model" --threads 2 --json >>"$out" 2>&1
done
python3 - "$out" "$model" <<'PY'
import json, statistics, sys
times, ours = {}, []
for line in open(sys.argv[1]):
    if line.startswith("time "):
        _, name, secs, kb = line.split()
        times.setdefault(name, []).append((float(secs), int(kb) * 1024))
    elif line.startswith("{"):
        ours.append(json.loads(line))
med = statistics.median
size = ours[0]["file_bytes"]
print(f"{sys.argv[2].split('/')[-1]}: file {size / 2**20:.0f} MiB")
print("| engine | exec to first token (s) | peak RSS (MiB) | peak RSS above the process before the model / file |")
print("|---|---|---|---|")
for name in ("llama.cpp", "pagedchat"):
    v = times.get(name, [])
    extra = "" if name != "pagedchat" else \
        f"{med((o['peak_rss_bytes'] - o['rss_before_bytes']) / size for o in ours):.2f}"
    print(f"| {name} | {med(x[0] for x in v):.2f} | {med(x[1] for x in v) / 2**20:.0f} | {extra} |")
print(f"ours inside the process: open {med(o['open_s'] for o in ours):.2f} s, panels built at "
      f"{med(o['backend_s'] for o in ours):.2f} s, first token at {med(o['first_token_s'] for o in ours):.2f} s")
PY
rm -f "$out"
