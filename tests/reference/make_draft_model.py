"""Writes a draft model for test_draft_model: random weights (2 layers, dim 64) under the real
test model's tokenizer, copied field by field from its GGUF, so it shares the target's
vocabulary exactly and guesses badly (acceptance near 0). Speculative decoding must give the
target's own greedy output with it as with the target drafting for itself (acceptance near 1).

Output: DIR/draft_model/random_draft.gguf. Usage: make_draft_model.py --out DIR
(the target is read from PAGEDCHAT_TEST_MODEL).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import gguf

T = gguf.GGUFValueType


def copy_field(w: gguf.GGUFWriter, field) -> None:
    """Copies one tokenizer.* metadata field as it is in the source file."""
    kind = T(field.types[0])
    if kind == T.ARRAY:
        sub = T(field.types[1])
        if sub == T.STRING:
            values = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
        else:
            values = [int(field.parts[i][0]) for i in field.data]
        w.add_array(field.name, values)
    elif kind == T.STRING:
        w.add_string(field.name, bytes(field.parts[field.data[0]]).decode("utf-8"))
    elif kind == T.BOOL:
        w.add_bool(field.name, bool(field.parts[field.data[0]][0]))
    elif kind == T.UINT32:
        w.add_uint32(field.name, int(field.parts[field.data[0]][0]))
    else:
        raise SystemExit(f"{field.name}: type {kind.name} not copied")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    target = os.environ.get("PAGEDCHAT_TEST_MODEL")
    if not target:
        raise SystemExit("PAGEDCHAT_TEST_MODEL is not set")
    args = ap.parse_args()
    out = Path(args.out) / "draft_model"
    out.mkdir(parents=True, exist_ok=True)
    src = gguf.GGUFReader(target)
    vocab = len(src.fields["tokenizer.ggml.tokens"].data)
    dim, n_ff, n_layer, n_head, n_head_kv = 64, 128, 2, 4, 2
    head_dim = dim // n_head
    rng = np.random.default_rng(20261201)

    path = out / "random_draft.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("random draft")
    w.add_uint32("llama.block_count", n_layer)
    w.add_uint32("llama.context_length", 8192)
    w.add_uint32("llama.embedding_length", dim)
    w.add_uint32("llama.feed_forward_length", n_ff)
    w.add_uint32("llama.attention.head_count", n_head)
    w.add_uint32("llama.attention.head_count_kv", n_head_kv)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_float32("llama.rope.freq_base", 10000.0)
    for name, field in src.fields.items():
        if name.startswith("tokenizer."):
            copy_field(w, field)

    def matrix(name: str, rows: int, cols: int, std: float) -> None:
        w.add_tensor(name, (rng.standard_normal((rows, cols)) * std).astype(np.float16))

    def ones(name: str, n: int) -> None:
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    matrix("token_embd.weight", vocab, dim, 1.0)
    for i in range(n_layer):
        p = f"blk.{i}."
        ones(p + "attn_norm.weight", dim)
        matrix(p + "attn_q.weight", dim, dim, dim ** -0.5)
        matrix(p + "attn_k.weight", n_head_kv * head_dim, dim, dim ** -0.5)
        matrix(p + "attn_v.weight", n_head_kv * head_dim, dim, dim ** -0.5)
        matrix(p + "attn_output.weight", dim, dim, dim ** -0.5)
        ones(p + "ffn_norm.weight", dim)
        matrix(p + "ffn_gate.weight", n_ff, dim, dim ** -0.5)
        matrix(p + "ffn_up.weight", n_ff, dim, dim ** -0.5)
        matrix(p + "ffn_down.weight", dim, n_ff, n_ff ** -0.5)
    ones("output_norm.weight", dim)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {path} ({path.stat().st_size} bytes, vocabulary {vocab})")


if __name__ == "__main__":
    main()
