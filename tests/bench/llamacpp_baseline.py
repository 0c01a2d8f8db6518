"""llama.cpp side of the CPU baseline, run by llamacpp_baseline.sh inside its virtualenv:
single-stream prompt and decode tok/s for one thread count, as one JSON line.
With --check-reference FILE it instead compares llama.cpp's logits with
tests/reference/make_forward.py's forward_reference.json (a check of that reference, and a
measure of how far a float32 engine with 8-bit-quantized activations lands from it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import llama_cpp
from llama_cpp import Llama

# Plain English, tokenized and cut to --prompt-tokens tokens so every run feeds the same ids.
PROMPT_TEXT = (
    "The history of the printing press begins in the fifteenth century, when Johannes "
    "Gutenberg combined movable metal type, oil-based ink and a wooden press adapted from "
    "those used to make wine. Before that, books were copied by hand, which made them rare "
    "and expensive. Within fifty years, presses had spread to more than two hundred cities "
    "across Europe, and millions of books had been printed. Cheaper books meant that more "
    "people learned to read, that scholars could compare the same text in different places, "
    "and that new ideas travelled faster than ever before. Historians still argue about how "
    "much the press changed society, but few doubt that it changed the way knowledge moved. "
) * 3


def open_model(path: str, threads: int, logits_all: bool = False) -> Llama:
    return Llama(model_path=path, n_ctx=1024, n_batch=512, n_ubatch=512, n_threads=threads,
                 n_threads_batch=threads, logits_all=logits_all, verbose=False)


def last_logits(llm: Llama) -> np.ndarray:
    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),))


def run_once(llm: Llama, prompt: list[int], n_decode: int) -> dict:
    """Prefill `prompt` in one batch, then decode n_decode tokens greedily, one per step."""
    llm.reset()
    llama_cpp.llama_perf_context_reset(llm.ctx)
    # llama.cpp adds a decode to its counters when it synchronizes (as reading logits does),
    # so synchronize after the prompt and after the last step.
    t0 = time.perf_counter()
    llm.eval(prompt)
    llama_cpp.llama_synchronize(llm.ctx)
    t1 = time.perf_counter()
    for _ in range(n_decode):
        llm.eval([int(np.argmax(last_logits(llm)))])  # greedy; EOS does not stop
    llama_cpp.llama_synchronize(llm.ctx)
    t2 = time.perf_counter()
    perf = llama_cpp.llama_perf_context(llm.ctx)
    # llama.cpp counts a multi-token batch as prompt ("p_eval"), a single token as decode.
    if perf.n_p_eval != len(prompt) or perf.n_eval != n_decode:
        raise RuntimeError(f"unexpected llama.cpp counters: {perf.n_p_eval} prompt, {perf.n_eval} decode")
    return {
        "prompt_tok_s": 1000.0 * perf.n_p_eval / perf.t_p_eval_ms,
        "decode_tok_s": 1000.0 * perf.n_eval / perf.t_eval_ms,
        "wall_prompt_tok_s": len(prompt) / (t1 - t0),
        "wall_decode_tok_s": n_decode / (t2 - t1),
    }


def bench(args) -> None:
    load_before = os.getloadavg()[0]
    llm = open_model(args.model, args.threads)
    prompt = llm.tokenize(PROMPT_TEXT.encode(), add_bos=False, special=False)[: args.prompt_tokens]
    if len(prompt) < args.prompt_tokens:
        raise RuntimeError(f"prompt text gives only {len(prompt)} tokens")
    run_once(llm, prompt, 8)  # warm-up: page in the weights, start the worker threads
    runs = [run_once(llm, prompt, args.decode_tokens) for _ in range(args.repeats)]
    median = lambda key: round(statistics.median(r[key] for r in runs), 1)  # noqa: E731
    best = lambda key: round(max(r[key] for r in runs), 1)  # noqa: E731
    print(json.dumps({
        "engine": "llama.cpp", "threads": args.threads,
        "prompt_tokens": len(prompt), "prompt_tok_s": median("prompt_tok_s"),
        "decode_tokens": args.decode_tokens, "decode_tok_s": median("decode_tok_s"),
        "prompt_tok_s_best": best("prompt_tok_s"), "decode_tok_s_best": best("decode_tok_s"),
        "wall_prompt_tok_s": median("wall_prompt_tok_s"), "wall_decode_tok_s": median("wall_decode_tok_s"),
        "stat": f"median of {args.repeats} runs after a warm-up; llama_perf_context timings",
        "model": os.path.basename(args.model), "llama_cpp_python": llama_cpp.__version__,
        "load_avg_1min_before": round(load_before, 2),
    }), flush=True)


def check_reference(args) -> None:
    """Feeds each reference prompt, then the reference's greedy tokens one at a time, and
    compares every logit row llama.cpp returns with the reference's."""
    with open(args.check_reference) as f:
        ref = json.load(f)
    llm = open_model(args.model, args.threads, logits_all=True)
    for p in ref["prompts"]:
        tokens, greedy = p["tokens"], p["greedy"]
        llm.reset()
        llm.eval(tokens)
        rows = np.array(llm.scores[: len(tokens)], dtype=np.float64)
        last_ref = np.array(p["logits_last"])
        diff = np.abs(rows[-1] - last_ref)
        top1_same = sum(int(np.argmax(r)) == t["ids"][0] for r, t in zip(rows, p["logits_all_positions_top"]))
        top5_diff = max(abs(r[i] - l) for r, t in zip(rows, p["logits_all_positions_top"])
                        for i, l in zip(t["ids"], t["logits"]))
        # Teacher-forced decode: the reference's tokens, so positions line up even after a near tie.
        step_diffs, agree, first_disagree = [], 0, None
        logits = rows[-1]
        for step, (tok, ref_logit, margin) in enumerate(zip(greedy["tokens"], greedy["logits"], greedy["margins"])):
            step_diffs.append(abs(logits[tok] - ref_logit))
            if int(np.argmax(logits)) == tok:
                agree += 1
            elif first_disagree is None:
                first_disagree = {"step": step, "ref_margin": margin}
            llm.eval([tok])
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float64)
        print(json.dumps({
            "prompt": p["name"], "n_tokens": len(tokens),
            "last_max_abs": round(float(diff.max()), 4),
            "last_rms": round(float(np.sqrt(np.mean(diff ** 2))), 4),
            "last_max_rel": round(float(diff.max() / np.abs(last_ref).max()), 5),
            "positions_top1_same": f"{top1_same}/{len(tokens)}",
            "positions_top5_max_abs": round(float(top5_diff), 4),
            "greedy_argmax_same": f"{agree}/{len(greedy['tokens'])}",
            "greedy_first_disagreement": first_disagree,
            "greedy_chosen_logit_max_abs": round(float(max(step_diffs)), 4),
        }), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--decode-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check-reference", metavar="FILE", help="forward_reference.json to compare with")
    args = parser.parse_args()
    if args.check_reference:
        check_reference(args)
    else:
        bench(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
