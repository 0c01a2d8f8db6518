"""Prompt, single-stream decode and 16-stream decode of PagedChat against llama.cpp's
llama-batched-bench on the same models, machine and thread count, in one run: the two engines
alternate within each round, so both see the same load, and each figure is the median of the
rounds. Prints a Markdown table (docs/benchmarks.md keeps it).

Columns: prompt tok/s of one 512-token prompt; decode tok/s of one stream after a 128-token
prompt; aggregate decode tok/s of 16 streams after 128-token prompts; our 16-stream gain over our
own single stream; our decode against the weight-read floor (weight bytes per token over the
machine's read bandwidth, as `pagedchat-cli bench` prints it).

Usage: formats_vs_llamacpp.py [--build DIR] [--rounds N] [--threads T] MODEL...
MODEL: a GGUF path, or SHAPE:TYPE (made by make_shape_model.py into ~/.cache/pagedchat/shapes),
e.g. 1b:Q4_K_M 1b:Q8_0 135m:BF16.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path.home() / ".cache" / "pagedchat"
BATCHED_BENCH = CACHE / "llama.cpp" / "build" / "bin" / "llama-batched-bench"
# make_shape_model.py needs numpy and gguf, which installer/install-deps.sh puts in this venv.
VENV_PYTHON = CACHE / "venv" / "bin" / "python"


def model_path(spec: str) -> Path:
    if ":" not in spec:
        return Path(spec)
    shape, kind = spec.split(":", 1)
    python = str(VENV_PYTHON) if VENV_PYTHON.exists() else sys.executable
    out = subprocess.run([python, str(HERE / "make_shape_model.py"), "--shape", shape, "--type", kind],
                         check=True, capture_output=True, text=True).stdout.split()
    return Path(out[-1])


def llama_rows(model: Path, threads: int, npp: int, ntg: int, npl: str) -> dict[int, dict]:
    """llama-batched-bench's table rows by batch size: S_PP and S_TG in tok/s."""
    cmd = [str(BATCHED_BENCH), "-m", str(model), "-c", "8192", "-b", "2048", "-ub", "512", "-npp", str(npp),
           "-ntg", str(ntg), "-npl", npl, "-t", str(threads), "-fa", "on"]
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 10 and cells[0].isdigit():
            # PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s
            rows[int(cells[2])] = {"s_pp": float(cells[5]), "s_tg": float(cells[7])}
    if not rows:
        raise SystemExit(f"no table in llama-batched-bench's output:\n{text}")
    return rows


def ours(cli: Path, model: Path, threads: int) -> dict:
    def run(args: list[str]) -> list[dict]:
        text = subprocess.run([str(cli), *args, "--model", str(model), "--threads", str(threads), "--json"],
                              check=True, capture_output=True, text=True).stdout
        return [json.loads(l) for l in text.splitlines() if l.startswith("{")]

    prompt = run(["bench", "--prompt-tokens", "512", "--decode-tokens", "2", "--repeats", "1"])[-1]
    decode = run(["bench", "--prompt-tokens", "128", "--decode-tokens", "64", "--repeats", "1"])[-1]
    batch = run(["bench", "throughput", "--batching", "--concurrency", "16", "--input-len", "128",
                 "--output-len", "64"])[-1]
    return {"prompt": prompt["prompt_tok_s"], "decode": decode["decode_tok_s"],
            "floor": decode["decode_floor_tok_s"], "single": batch["single_decode_tok_s"],
            "batched": batch["batched_decode_tok_s"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(HERE.parent.parent / "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    cli = Path(args.build) / "app" / "cli" / "pagedchat-cli"
    for tool in (cli, BATCHED_BENCH):
        if not tool.exists():
            raise SystemExit(f"{tool} is missing (build it, or run installer/build-llama-server.sh)")
    print("| model | prompt 512 (llama.cpp / ours) | decode 1 stream | 16 streams aggregate decode "
          "| our gain 16 vs 1 | our decode vs floor |")
    print("|---|---|---|---|---|---|")
    for spec in args.models:
        model = model_path(spec)
        got: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            pp = llama_rows(model, args.threads, 512, 1, "1")[1]["s_pp"]
            tg = llama_rows(model, args.threads, 128, 64, "1,16")
            o = ours(cli, model, args.threads)
            for key, value in {"l_prompt": pp, "l_decode": tg[1]["s_tg"], "l_batched": tg[16]["s_tg"],
                               "o_prompt": o["prompt"], "o_decode": o["decode"], "o_floor": o["floor"],
                               "o_single": o["single"], "o_batched": o["batched"]}.items():
                got.setdefault(key, []).append(value)
        m = {k: statistics.median(v) for k, v in got.items()}

        def pair(a: str, b: str) -> str:
            return f"{m[a]:.1f} / {m[b]:.1f} ({m[b] / m[a]:.2f}x)"

        print(f"| {spec} | {pair('l_prompt', 'o_prompt')} | {pair('l_decode', 'o_decode')} "
              f"| {pair('l_batched', 'o_batched')} | {m['o_batched'] / m['o_single']:.2f}x "
              f"| {100 * m['o_decode'] / m['o_floor']:.0f}% |", flush=True)


if __name__ == "__main__":
    main()
