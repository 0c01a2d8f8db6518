"""Reference beam search for test_beam_search: plain Python over the float64 reference forward
(llama_ref.py) on a tiny random model (make_tiny_models.py's llama_gqa4_untied), written here
from the textbook definition so that the engine's beam search, built on forks of paged
sequences, is checked against an implementation that has no KV sharing at all.

The rule, as the engine states it: each step every live beam proposes its 2W most likely next
tokens; candidates rank by summed log-probability (ties: lower token, then the earlier beam);
the best W become the beams. The model has no end-of-generation token, so every beam runs to
max_tokens and the hypotheses are the final beams, best first. Each case records the smallest
gap between the W-th and the (W+1)-th candidate of any step: a test of float32 against float64
is only exact where that gap is far above the rounding (the script picks prompts where it is).

Output: DIR/beam_search/model.gguf and DIR/beam_search/cases.json. Usage: make_beam_search.py --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llama_ref import LlamaRef  # noqa: E402
import make_tiny_models  # noqa: E402

MIN_GAP = 1e-3  # the f32 engine's logits are within ~1e-5 of these


def log_softmax(logits: np.ndarray) -> np.ndarray:
    m = logits.max()
    return logits - m - np.log(np.exp(logits - m).sum())


def beam_search(ref: LlamaRef, prompt: list[int], width: int, max_tokens: int):
    beams = [([], 0.0)]
    min_gap = float("inf")
    for _ in range(max_tokens):
        candidates = []
        for rank, (gen, logprob) in enumerate(beams):
            seq = prompt + gen
            lp = log_softmax(ref.forward(seq, ref.new_cache(len(seq))))
            for t in np.argsort(-lp, kind="stable")[: 2 * width]:
                candidates.append((logprob + float(lp[t]), int(t), rank, gen))
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
        if len(candidates) > width:
            min_gap = min(min_gap, candidates[width - 1][0] - candidates[width][0])
        beams = [(gen + [t], lp) for lp, t, _, gen in candidates[:width]]
    return beams, min_gap


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = Path(ap.parse_args().out) / "beam_search"
    out.mkdir(parents=True, exist_ok=True)
    spec = next(s for s in make_tiny_models.MODELS if s.name == "llama_gqa4_untied")
    path = out / "model.gguf"
    make_tiny_models.build(spec, path)
    ref = LlamaRef(str(path))
    rng = np.random.default_rng(7)
    cases = []
    for width, max_tokens in ((2, 10), (4, 10), (8, 6)):
        for _ in range(40):  # a prompt whose selections are all clear
            prompt = [int(t) for t in rng.integers(0, make_tiny_models.VOCAB, 6)]
            beams, gap = beam_search(ref, prompt, width, max_tokens)
            if gap > MIN_GAP:
                break
        else:
            raise SystemExit(f"no prompt with clear selections for width {width}")
        cases.append({"prompt": prompt, "width": width, "max_tokens": max_tokens, "min_gap": gap,
                      "hypotheses": [{"tokens": g, "logprob": lp} for g, lp in beams]})
    (out / "cases.json").write_text(json.dumps({"gguf": "model.gguf", "cases": cases}, indent=1))
    print(f"wrote {len(cases)} beam-search cases to {out}")


if __name__ == "__main__":
    main()
