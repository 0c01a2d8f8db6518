"""Sources for tests/engine/quantize/test_quantize.cpp: small unquantized GGUF models that
`pagedchat-cli quantize` and llama.cpp's llama-quantize must turn into the same bytes, and an
importance matrix for them in llama-imatrix's GGUF form.

Three models, chosen so every rule of llama-quantize's type choice and every branch of the
row quantizers is taken:
  llama16-f16.gguf  llama, 16 layers (the "more bits" layers of the _M mixes differ from the
                    rest), GQA 2, an untied output, F16; FFN width 320, so ffn_down's rows
                    (320) fit no 256-element type and fall back; a zero row, a row of tiny
                    values, a constant row and an outlier, for the searches' edge cases.
  tied-bf16.gguf    llama, 8 layers, GQA 4 (Q2_K's value projections differ), the output tied
                    to the embedding (which then gets the output's type), BF16.
  moe8-f32.gguf     qwen3moe with 8 experts (llama-quantize's 8-expert rules), 3-D expert
                    tensors, an F32 router it leaves alone, QK-norm vectors, F32.
  imatrix-llama16.gguf, imatrix-moe8.gguf
                    sums of squares for every matrix of llama16 and of moe8 (per expert for the
                    experts, one expert with no tokens); imatrix-llama16.dat: the llama16
                    entries in llama.cpp's older binary form.

Usage: make_quantize.py --out DIR   (writes DIR/quantize/)
"""

from __future__ import annotations

import argparse
import struct
from pathlib import Path

import numpy as np
import gguf

VOCAB = 300
SEED = 20261206


def tokenizer(w: gguf.GGUFWriter) -> None:
    # Placeholder pieces: enough for llama.cpp and our loader to open the file.
    w.add_tokenizer_model("llama")
    named = ["<unk>", "<s>", "</s>", "<0x0A>"]
    w.add_token_list(named + [f"t{i}" for i in range(len(named), VOCAB)])
    w.add_token_scores([0.0] * VOCAB)
    w.add_token_types([2, 3, 3, 6] + [1] * (VOCAB - len(named)))


def weights(rng: np.random.Generator, shape: tuple[int, ...], std: float, edge_rows: bool) -> np.ndarray:
    """Heavy-tailed values (as trained weights are), rows along the last axis."""
    x = (rng.standard_t(4.0, size=shape) * std).astype(np.float32)
    if edge_rows and shape[-2] >= 8:
        m = x.reshape(-1, shape[-1])
        m[1] = 0.0                           # all zero: the searches' "nothing to fit" branch
        m[2] *= 1e-12                        # below the group epsilon
        m[3] = std                           # constant: max == min
        m[4, 5] = 40.0 * std                 # one outlier
        m[5, ::2] = 0.0                      # half zeros
    return x


def encode(x: np.ndarray, qtype: gguf.GGMLQuantizationType):
    if qtype == gguf.GGMLQuantizationType.F32:
        return x, None
    if qtype == gguf.GGMLQuantizationType.F16:
        return x.astype(np.float16), None
    return gguf.quants.quantize(x, qtype), qtype  # BF16


def write_dense(path: Path, *, layers: int, dim: int, heads: int, kv_heads: int, ffn: int, tied: bool,
                qtype: gguf.GGMLQuantizationType, seed: int) -> list[tuple[str, int, int]]:
    """A llama model; returns (name, cols, matrices) for each matrix."""
    rng = np.random.default_rng(seed)
    head_dim = dim // heads
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(path.stem)
    w.add_uint32("llama.block_count", layers)
    w.add_uint32("llama.context_length", 256)
    w.add_uint32("llama.embedding_length", dim)
    w.add_uint32("llama.feed_forward_length", ffn)
    w.add_uint32("llama.attention.head_count", heads)
    w.add_uint32("llama.attention.head_count_kv", kv_heads)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_float32("llama.rope.freq_base", 10000.0)
    w.add_uint32("general.file_type", 1 if qtype == gguf.GGMLQuantizationType.F16 else 0)
    tokenizer(w)
    matrices = []

    def matrix(name: str, rows: int, cols: int, edge: bool = False) -> None:
        data, raw = encode(weights(rng, (rows, cols), cols ** -0.5, edge), qtype)
        w.add_tensor(name, data, raw_dtype=raw)
        matrices.append((name, cols, 1))

    def vector(name: str, n: int) -> None:
        w.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32))

    matrix("token_embd.weight", VOCAB, dim, edge=True)
    for i in range(layers):
        p = f"blk.{i}."
        vector(p + "attn_norm.weight", dim)
        matrix(p + "attn_q.weight", heads * head_dim, dim, edge=i == 0)
        matrix(p + "attn_k.weight", kv_heads * head_dim, dim)
        matrix(p + "attn_v.weight", kv_heads * head_dim, dim, edge=i == 1)
        matrix(p + "attn_output.weight", dim, heads * head_dim)
        vector(p + "ffn_norm.weight", dim)
        matrix(p + "ffn_gate.weight", ffn, dim)
        matrix(p + "ffn_up.weight", ffn, dim)
        matrix(p + "ffn_down.weight", dim, ffn, edge=i == 2)
    vector("output_norm.weight", dim)
    if not tied:
        matrix("output.weight", VOCAB, dim)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return matrices


def write_moe(path: Path, seed: int) -> list[tuple[str, int, int]]:
    rng = np.random.default_rng(seed)
    layers, dim, heads, kv_heads, head_dim, experts, ffn = 4, 256, 4, 2, 64, 8, 256
    a = "qwen3moe"
    w = gguf.GGUFWriter(str(path), a)
    w.add_name(path.stem)
    for key, value in [("block_count", layers), ("context_length", 256), ("embedding_length", dim),
                       ("feed_forward_length", 512), ("attention.head_count", heads),
                       ("attention.head_count_kv", kv_heads), ("attention.key_length", head_dim),
                       ("attention.value_length", head_dim), ("expert_count", experts), ("expert_used_count", 2),
                       ("expert_feed_forward_length", ffn)]:
        w.add_uint32(f"{a}.{key}", value)
    w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_float32(f"{a}.rope.freq_base", 1e6)
    tokenizer(w)
    matrices = []

    def matrix(name: str, shape: tuple[int, ...], edge: bool = False) -> None:
        w.add_tensor(name, weights(rng, shape, shape[-1] ** -0.5, edge))
        matrices.append((name, shape[-1], shape[0] if len(shape) == 3 else 1))

    def vector(name: str, n: int) -> None:
        w.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32))

    matrix("token_embd.weight", (VOCAB, dim))
    for i in range(layers):
        p = f"blk.{i}."
        vector(p + "attn_norm.weight", dim)
        matrix(p + "attn_q.weight", (heads * head_dim, dim))
        matrix(p + "attn_k.weight", (kv_heads * head_dim, dim))
        matrix(p + "attn_v.weight", (kv_heads * head_dim, dim))
        vector(p + "attn_q_norm.weight", head_dim)
        vector(p + "attn_k_norm.weight", head_dim)
        matrix(p + "attn_output.weight", (dim, heads * head_dim))
        vector(p + "ffn_norm.weight", dim)
        w.add_tensor(p + "ffn_gate_inp.weight", weights(rng, (experts, dim), dim ** -0.5, False))  # the router
        matrix(p + "ffn_gate_exps.weight", (experts, ffn, dim), edge=i == 0)
        matrix(p + "ffn_up_exps.weight", (experts, ffn, dim))
        matrix(p + "ffn_down_exps.weight", (experts, dim, ffn))
    vector("output_norm.weight", dim)
    matrix("output.weight", (VOCAB, dim))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return matrices


def write_imatrix(path: Path, matrices: list[tuple[str, int, int]], seed: int) -> dict:
    """llama-imatrix's GGUF layout: <name>.in_sum2 [cols, matrices], <name>.counts [1, matrices]."""
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), arch=None)  # no general.architecture: llama-imatrix writes none
    w.add_string("general.type", "imatrix")
    w.add_array("imatrix.datasets", ["calibration.txt"])
    w.add_uint32("imatrix.chunk_count", 3)
    w.add_uint32("imatrix.chunk_size", 512)
    entries = {}
    for name, cols, count in sorted(matrices):
        tokens = np.full(count, 1536.0, dtype=np.float32)
        if count > 1:
            tokens = rng.integers(200, 900, size=count).astype(np.float32)
            tokens[count // 2] = 0.0  # an expert no token reached: llama-quantize uses 1s for it
        # A few loud channels, as real activations have (what makes an importance matrix matter).
        mean_square = rng.gamma(0.6, 1.0, size=(count, cols)).astype(np.float32)
        sums = (mean_square * tokens[:, None]).astype(np.float32)
        w.add_tensor(name + ".in_sum2", sums)
        w.add_tensor(name + ".counts", tokens.reshape(count, 1))
        entries[name] = (sums, tokens)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return entries


def write_legacy_imatrix(path: Path, entries: dict) -> None:
    """llama.cpp's first imatrix format, for the llama16 entries (one matrix each)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<i", len(entries)))
        for name, (sums, tokens) in sorted(entries.items()):
            raw = name.encode()
            f.write(struct.pack("<i", len(raw)) + raw)
            calls = 3
            values = (sums[0] / tokens[0] * calls).astype(np.float32)  # stored as mean * calls
            f.write(struct.pack("<ii", calls, values.size) + values.tobytes())
        f.write(struct.pack("<i", 3))
        dataset = b"calibration.txt"
        f.write(struct.pack("<i", len(dataset)) + dataset)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = Path(ap.parse_args().out) / "quantize"
    out.mkdir(parents=True, exist_ok=True)
    Q = gguf.GGMLQuantizationType
    dense = write_dense(out / "llama16-f16.gguf", layers=16, dim=256, heads=4, kv_heads=2, ffn=320, tied=False,
                        qtype=Q.F16, seed=SEED)
    write_dense(out / "tied-bf16.gguf", layers=8, dim=512, heads=8, kv_heads=2, ffn=512, tied=True,
                qtype=Q.BF16, seed=SEED + 1)
    moe = write_moe(out / "moe8-f32.gguf", seed=SEED + 2)
    entries = write_imatrix(out / "imatrix-llama16.gguf", dense, seed=SEED + 3)
    write_imatrix(out / "imatrix-moe8.gguf", moe, seed=SEED + 4)
    write_legacy_imatrix(out / "imatrix-llama16.dat", entries)


if __name__ == "__main__":
    main()
