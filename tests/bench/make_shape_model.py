"""Makes models of a real model's shape with random weights, for the speed benchmarks: the
Llama layout at the shape's sizes under the default model's tokenizer (SmolLM2's 49,152 tokens,
copied field by field), written in F16 with the gguf package, then converted by llama.cpp's
llama-quantize into each type asked for (any type it writes: Q4_K_M, Q5_K_M, Q6_K, Q8_0, Q4_0,
BF16, ...). Random weights run at the speed of trained ones; their text is noise.

Files go to ~/.cache/pagedchat/shapes/<shape>-<type>.gguf and are kept for the next run; the
F16 source is removed unless F16 is asked for. Prints each file's path.

Usage: make_shape_model.py --shape 1b --type Q4_K_M [--type Q8_0 ...]
Shapes: 135m (SmolLM2-135M), 360m (SmolLM2-360M), 1b (Llama 3.2 1B), 3b (Llama 3.2 3B),
8b (Llama 3.1 8B); a3b-4l: four layers of Qwen3-30B-A3B (qwen3moe: 128 experts of 768, 8 used
per token, 32 query heads of 128 over 4 KV heads), a twelfth of the model, whose time per layer
and token is the whole model's (its F16 source is 5 GB; the whole model's would be 61 GB);
moe-2b: the 1b shape's attention with 8 experts of 2048 per layer, 2 used per token (2.0B weights,
0.67B used per token; qwen3moe); oss-2l: two layers of gpt-oss-20b (one with its window of 128, one
full; 32 experts of 2880, 4 used per token, 64 query heads of 64 over 8 KV heads, biases, sinks,
YaRN), a twelfth of the model; its experts take llama-quantize's MXFP4_MOE as the real file's do.
llama-quantize comes from installer/build-llama-server.sh.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import gguf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "reference"))
from make_draft_model import copy_field  # noqa: E402

CACHE = Path.home() / ".cache" / "pagedchat"
# name: (dim, layers, heads, kv heads, ffn)
SHAPES = {
    "135m": (576, 30, 9, 3, 1536),
    "360m": (960, 32, 15, 5, 2560),
    "1b": (2048, 16, 32, 8, 8192),
    "3b": (3072, 28, 24, 8, 8192),
    "8b": (4096, 32, 32, 8, 14336),
    "a3b-4l": (2048, 4, 32, 4, 6144),
    "moe-2b": (2048, 16, 32, 8, 8192),
    "oss-2l": (2880, 2, 64, 8, 2880),
}
# Mixture-of-experts shapes: (experts, used per token, expert ffn, head_dim)
MOE_SHAPES = {"a3b-4l": (128, 8, 768, 128), "moe-2b": (8, 2, 2048, 64), "oss-2l": (32, 4, 2880, 64)}


def write_f16(path: Path, shape: str, tokenizer_model: Path) -> None:
    dim, n_layer, n_head, n_head_kv, n_ff = SHAPES[shape]
    n_expert, n_used, n_ff_exp, head_dim = MOE_SHAPES.get(shape, (0, 0, 0, dim // n_head))
    oss = shape.startswith("oss")
    arch = "gpt-oss" if oss else "qwen3moe" if n_expert else "llama"
    src = gguf.GGUFReader(str(tokenizer_model))
    vocab = len(src.fields["tokenizer.ggml.tokens"].data)
    rng = np.random.default_rng(20261205)
    tmp = path.with_suffix(".partial")
    w = gguf.GGUFWriter(str(tmp), arch)
    w.add_name(f"random {shape} shape")
    w.add_uint32(f"{arch}.block_count", n_layer)
    w.add_uint32(f"{arch}.context_length", 8192)
    w.add_uint32(f"{arch}.embedding_length", dim)
    w.add_uint32(f"{arch}.feed_forward_length", n_ff)
    w.add_uint32(f"{arch}.attention.head_count", n_head)
    w.add_uint32(f"{arch}.attention.head_count_kv", n_head_kv)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5 if not n_expert else 1e-6)
    w.add_float32(f"{arch}.rope.freq_base", 150000.0 if oss else 500000.0 if not n_expert else 1e6)
    if oss:  # gpt-oss-20b's config
        w.add_uint32(f"{arch}.attention.sliding_window", 128)
        w.add_string(f"{arch}.rope.scaling.type", "yarn")
        w.add_float32(f"{arch}.rope.scaling.factor", 32.0)
        w.add_uint32(f"{arch}.rope.scaling.original_context_length", 4096)
    if n_expert:
        w.add_uint32(f"{arch}.attention.key_length", head_dim)
        w.add_uint32(f"{arch}.attention.value_length", head_dim)
        w.add_uint32(f"{arch}.expert_count", n_expert)
        w.add_uint32(f"{arch}.expert_used_count", n_used)
        w.add_uint32(f"{arch}.expert_feed_forward_length", n_ff_exp)
    w.add_uint32("general.file_type", 1)  # mostly F16
    for name, field in src.fields.items():
        if name.startswith("tokenizer."):
            copy_field(w, field)

    def matrix(name: str, rows: int, cols: int, experts: int = 0) -> None:
        shape = (experts, rows, cols) if experts else (rows, cols)
        w.add_tensor(name, (rng.standard_normal(shape, dtype=np.float32) * cols ** -0.5).astype(np.float16))

    def ones(name: str, n: int) -> None:
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    def small(name: str, *shape: int) -> None:  # biases and sinks
        w.add_tensor(name, (rng.standard_normal(shape, dtype=np.float32) * 0.1).astype(np.float32))

    matrix("token_embd.weight", vocab, dim)
    for i in range(n_layer):
        p = f"blk.{i}."
        ones(p + "attn_norm.weight", dim)
        matrix(p + "attn_q.weight", n_head * head_dim, dim)
        matrix(p + "attn_k.weight", n_head_kv * head_dim, dim)
        matrix(p + "attn_v.weight", n_head_kv * head_dim, dim)
        matrix(p + "attn_output.weight", dim, n_head * head_dim)
        if oss:
            for b, n in (("attn_q", n_head * head_dim), ("attn_k", n_head_kv * head_dim), ("attn_v", n_head_kv * head_dim),
                         ("attn_output", dim)):
                small(p + b + ".bias", n)
            small(p + "attn_sinks.weight", n_head)
            ones(p + "post_attention_norm.weight", dim)
            w.add_tensor(p + "ffn_gate_inp.weight", rng.standard_normal((n_expert, dim), dtype=np.float32) * dim ** -0.5)
            small(p + "ffn_gate_inp.bias", n_expert)
            for m, rows, cols in (("gate", n_ff_exp, dim), ("up", n_ff_exp, dim), ("down", dim, n_ff_exp)):
                matrix(p + f"ffn_{m}_exps.weight", rows, cols, n_expert)
                small(p + f"ffn_{m}_exps.bias", n_expert, rows)
            continue
        ones(p + "ffn_norm.weight", dim)
        if n_expert:
            ones(p + "attn_q_norm.weight", head_dim)
            ones(p + "attn_k_norm.weight", head_dim)
            # The router in F32, as llama-quantize keeps it.
            w.add_tensor(p + "ffn_gate_inp.weight", rng.standard_normal((n_expert, dim), dtype=np.float32) * dim ** -0.5)
            matrix(p + "ffn_gate_exps.weight", n_ff_exp, dim, n_expert)
            matrix(p + "ffn_up_exps.weight", n_ff_exp, dim, n_expert)
            matrix(p + "ffn_down_exps.weight", dim, n_ff_exp, n_expert)
            continue
        matrix(p + "ffn_gate.weight", n_ff, dim)
        matrix(p + "ffn_up.weight", n_ff, dim)
        matrix(p + "ffn_down.weight", dim, n_ff)
    ones("output_norm.weight", dim)
    matrix("output.weight", vocab, dim)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tmp.rename(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", required=True, choices=sorted(SHAPES))
    ap.add_argument("--type", action="append", required=True, help="a llama-quantize type, or F16")
    ap.add_argument("--tokenizer-model", default=str(CACHE / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--quantize", default=str(CACHE / "llama.cpp" / "build" / "bin" / "llama-quantize"))
    args = ap.parse_args()
    out_dir = CACHE / "shapes"
    out_dir.mkdir(parents=True, exist_ok=True)
    f16 = out_dir / f"{args.shape}-F16.gguf"
    wanted = [out_dir / f"{args.shape}-{t.upper()}.gguf" for t in args.type]
    missing = [(t, p) for t, p in zip(args.type, wanted) if not p.exists()]
    if missing and not f16.exists():
        write_f16(f16, args.shape, Path(args.tokenizer_model))
    for t, p in missing:
        if t.upper() == "F16":
            continue
        if not os.access(args.quantize, os.X_OK):
            raise SystemExit(f"{args.quantize} is missing: run installer/build-llama-server.sh")
        tmp = p.with_suffix(".partial")
        subprocess.run([args.quantize, str(f16), str(tmp), t.upper(), "2"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        tmp.rename(p)
    if f16.exists() and "F16" not in (t.upper() for t in args.type):
        f16.unlink()
    for p in wanted:
        print(p)


if __name__ == "__main__":
    main()
