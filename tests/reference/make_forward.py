"""Writes forward_reference.json: logits and greedy continuations of the test model for a few
fixed prompts, computed by llama_ref.py (float64 NumPy), for test_forward to compare against.

Usage: make_forward.py --out DIR [--model GGUF] [--debug]   (model default: $PAGEDCHAT_TEST_MODEL)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

# One BLAS thread: this runs beside builds and other tests on small machines, where a second
# spinning BLAS thread made decode steps 5x slower, not faster. Set before NumPy loads.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llama_ref import LlamaRef  # noqa: E402

N_GREEDY = 32
N_TOP = 5

# Token ids for SmolLM2-135M-Instruct (tokenizer.ggml.pre "smollm"), fixed here so that this
# reference does not depend on any tokenizer. They were produced once with the HF `tokenizers`
# library built from the GGUF's own vocab and merges (digits split one by one, then GPT-2
# byte-level BPE), and agree with llama.cpp's tokenizer for these texts; `--debug` checks
# that they decode back to the text. "chat" and "chat_long" are the model's chat template
# (default system prompt + user turn + assistant header), as the app sends them.
SYSTEM = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
PROMPTS = [
    {"name": "single", "text": "Hello", "tokens": [19556]},
    {"name": "short", "text": "Once upon a time, there was a little",
     "tokens": [6403, 1980, 253, 655, 28, 665, 436, 253, 1838]},
    {"name": "text46",
     "text": "In 1969, Apollo 11 landed on the Moon. Neil Armstrong and Buzz Aldrin spent about 21 "
             "hours on the lunar surface, while Michael Collins stayed in orbit above them. The "
             "mission showed that",
     "tokens": [788, 216, 33, 41, 38, 41, 28, 17600, 216, 33, 33, 16176, 335, 260, 8872, 30,
                27639, 24955, 284, 42855, 20604, 8873, 4957, 563, 216, 34, 33, 2737, 335, 260,
                14594, 2376, 28, 979, 7937, 18976, 14692, 281, 8591, 2120, 601, 30, 378, 4527,
                4342, 338]},
    {"name": "chat",
     "text": SYSTEM + "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
     "tokens": [1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28,
                7018, 411, 407, 19712, 8182, 2, 198, 1, 4093, 198, 1780, 314, 260, 3575, 282,
                4649, 47, 2, 198, 1, 520, 9531, 198]},
    {"name": "chat_long",
     "text": SYSTEM + "<|im_start|>user\nI am writing a short guide for new gardeners. Here is my "
             "draft: \"Tomatoes need at least six hours of sun each day. Water them deeply two "
             "or three times a week, and add compost to the soil before planting. Pinch off the "
             "small shoots that grow between the stem and the branches.\" Can you list three "
             "more tips that a beginner should know about growing tomatoes at home? Please keep "
             "each tip under twenty words.<|im_end|>\n<|im_start|>assistant\n",
     "tokens": [1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308,
                34519, 28, 7018, 411, 407, 19712, 8182, 2, 198, 1, 4093, 198, 57, 744,
                2385, 253, 1890, 3948, 327, 725, 22968, 30, 3726, 314, 957, 10049, 42,
                476, 24960, 10674, 737, 418, 2124, 2976, 2737, 282, 2388, 971, 1194,
                30, 4643, 601, 6592, 827, 355, 1296, 1711, 253, 2605, 28, 284, 803,
                9687, 288, 260, 2763, 1092, 9137, 30, 377, 12008, 767, 260, 1165,
                23202, 338, 1075, 826, 260, 6046, 284, 260, 7938, 1270, 1978, 346,
                1398, 1296, 540, 5608, 338, 253, 25906, 868, 699, 563, 2969, 13886,
                418, 1478, 47, 8765, 1446, 971, 8618, 656, 7522, 1924, 30, 2, 198, 1,
                520, 9531, 198]},
]


def byte_decoder() -> dict[str, int]:
    """Inverse of GPT-2's byte-to-printable-character map used by byte-level BPE vocabularies:
    printable Latin-1 bytes stand for themselves, the other bytes for chr(256 + k) in order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    mapping, k = {}, 0
    for b in range(256):
        if b in printable:
            mapping[chr(b)] = b
        else:
            mapping[chr(256 + k)] = b
            k += 1
    return mapping


def decode(vocab: list[str], ids: list[int]) -> str:
    table = byte_decoder()
    data = b"".join(bytes(table[c] for c in vocab[i]) if all(c in table for c in vocab[i])
                    else vocab[i].encode() for i in ids)  # special tokens are plain text
    return data.decode("utf-8", errors="replace")


def read_vocab(path: str) -> list[str]:
    import gguf
    field = gguf.GGUFReader(path).fields["tokenizer.ggml.tokens"]
    return [bytes(field.parts[i]).decode("utf-8") for i in field.data]


def top_k(row: np.ndarray, k: int) -> dict:
    ids = np.argsort(-row, kind="stable")[:k]
    return {"ids": [int(i) for i in ids], "logits": [round(float(row[i]), 6) for i in ids]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="directory to write forward_reference.json into")
    parser.add_argument("--model", default=os.environ.get("PAGEDCHAT_TEST_MODEL"))
    parser.add_argument("--debug", action="store_true", help="print prompts and continuations as text")
    args = parser.parse_args()
    if not args.model or not Path(args.model).is_file():
        print(f"make_forward: model not found ({args.model!r}); set PAGEDCHAT_TEST_MODEL", file=sys.stderr)
        return 1

    started = time.perf_counter()
    model = LlamaRef(args.model)
    loaded = time.perf_counter()
    vocab = read_vocab(args.model) if args.debug else None

    results = []
    for prompt in PROMPTS:
        if args.debug:
            decoded = decode(vocab, prompt["tokens"])
            status = "ok" if decoded == prompt["text"] else "MISMATCH"
            print(f"--- {prompt['name']} ({len(prompt['tokens'])} tokens, decode {status})\n{decoded}")
        prompt_logits, steps = model.greedy(prompt["tokens"], N_GREEDY)
        results.append({
            "name": prompt["name"],
            "text": prompt["text"],
            "tokens": prompt["tokens"],
            "logits_last": [round(float(x), 6) for x in prompt_logits[-1]],
            "logits_all_positions_top": [top_k(row, N_TOP) for row in prompt_logits],
            "greedy": {
                "tokens": [s["token"] for s in steps],
                "logits": [round(s["logit"], 6) for s in steps],
                "margins": [round(s["margin"], 6) for s in steps],
            },
        })
        if args.debug:
            print(f">>> {decode(vocab, [s['token'] for s in steps])!r}")
            print(f"    min margin {min(s['margin'] for s in steps):.4f}")

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    reference = {
        "model": Path(args.model).name,
        "computed_by": "tests/reference/llama_ref.py (NumPy float64, weights dequantized by gguf.quants)",
        "hparams": {**model.cfg.as_dict(), "tied_embeddings": model.tied_embeddings,
                    "rope_freq_factors": model.rope_freq_factors is not None},
        "n_greedy": N_GREEDY,
        "greedy_rule": "arg-max, ties to the lowest id, EOS does not stop",
        "prompts": results,
    }
    with open(out_dir / "forward_reference.json", "w") as f:
        json.dump(reference, f)
    done = time.perf_counter()
    print(f"make_forward: wrote {out_dir / 'forward_reference.json'} "
          f"(load {loaded - started:.1f} s, forward {done - loaded:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
