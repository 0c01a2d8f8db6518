"""Writes tiny synthetic GGUF models, one per architecture variant the engine claims, with their
reference logits from llama_ref.py, for test_tiny_models; and a few broken files it must refuse.

Each model has random weights from a fixed seed, dims of 64-256, 2-3 layers and 300 tokens, so
it is well under 1 MB and its float64 forward takes milliseconds. Together they cover what the
real test model (SmolLM2: llama, Q4_1/Q8_0, tied, GQA 3) does not: qwen2 (QKV bias, NEOX RoPE),
Llama 3 RoPE scaling (a rope_freqs tensor, or the scaling keys), linear RoPE scaling, Q/K/V bias
on a llama file, an untied output, GQA 1/2/4, head_dim 8-128, key_length != dim / head_count,
rope_dim < head_dim, the "mistral" arch name, qwen3 (QK-norm) and gemma3 (QK-norm, post-block
norms, a GELU gate, scaled embeddings, a sliding window of 16 on five layers of six with their
own RoPE base), phi3 (fused Q|K|V and gate|up), smollm3 (NoPE on every fourth layer), granite (four multipliers), qwen3moe (a router and experts: 3-D tensors
sliced per expert, top-k of the softmax, renormalized), gpt-oss (Q/K/V and output biases, attention
sinks, a sliding window on every other layer, YaRN, a biased router whose top-k logits are
softmaxed, biased MXFP4 experts with the clamped SwiGLU), and the weight types F32, F16, BF16, Q4_0, Q4_1,
Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4. For every variant the script measures how much its
feature moves the logits (the reference run without it), so a test that passes shows that the
feature is implemented, not merely that it did not matter.

Besides the exact logits, each model gets logits with every matmul's activations rounded to
8 bits the way the engine's fast path (and llama.cpp) rounds them, so that path can be checked
tightly too. The K-quant weights are random blocks (the gguf package cannot quantize to them).

Output, under DIR/tiny_models/: <name>.gguf and <name>.json for each model (token lists and the
logits of every position), broken_<cause>.gguf for each refusal case, and index.json listing
both. Usage: make_tiny_models.py --out DIR
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import gguf  # noqa: E402
from gguf.quants import dequantize, quantize  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llama_ref import LlamaRef, llama3_inv_freq, yarn_corr_dims  # noqa: E402

Q = gguf.GGMLQuantizationType
VOCAB = 300
MAX_FILE_BYTES = 1 << 20
# A feature must move the reference logits by at least this much (max |change| relative to the
# row's largest logit) for its model to count as a test of it: far above the float tolerance.
MIN_FEATURE_EFFECT = 1e-2

# Token lists run through every model: one token, a short list with a repeat and the extremes
# of the vocabulary, and a 37-token list (positions up to 36: several KV blocks, and RoPE angles
# large enough for scaling to matter).
TOKEN_LISTS = [
    [7],
    [0, 17, 3, 299, 42, 42, 120],
    [int(t) for t in np.random.default_rng(1234).integers(0, VOCAB, 37)],
]


@dataclass
class Spec:
    name: str
    arch: str
    dim: int
    n_head: int
    n_head_kv: int
    n_ff: int
    n_layer: int
    types: dict                   # role -> Q type: embd q k v o gate up down [output]
    head_dim: int | None = None   # written as key_length when given
    rope_dim: int | None = None   # written as rope.dimension_count when given
    rope_base: float = 10000.0
    eps: float = 1e-5
    tied: bool = True
    extra_kv: dict = field(default_factory=dict)  # key suffix -> value (float or str)
    rope_freqs: bool = False      # write a rope_freqs.weight tensor (Llama 3 scaling factors)
    qkv_bias: bool = False        # write attn_{q,k,v}.bias (always for qwen2)
    sliding_window: int = 0       # gemma3: written as attention.sliding_window
    long_rope: int = 0            # phi3: LongRoPE factor tensors, this original context, attn_factor 1.19
    n_expert: int = 0             # qwen3moe: experts per layer (types gate/up/down for theirs, router for the router)
    n_expert_used: int = 0
    n_ff_exp: int = 0
    context_length: int = 256
    # gpt-oss: scales of the experts' gate/up weights and of their biases (large enough that some
    # gate/up values pass swiglu_oai's limit of 7), and the attention sinks' spread
    expert_gate_up_std: float = 1.0
    expert_bias_std: float = 0.0
    router_std: float = 2.0       # gpt-oss: of the router's logits (weights and bias)
    sink_std: float = 0.0
    features: list = field(default_factory=list)  # what the model proves (see feature_off)
    seed: int = 0


LLAMA3_KEYS = {"rope.scaling.type": "llama3", "rope.scaling.factor": 8.0,
               "rope.scaling.low_freq_factor": 1.0, "rope.scaling.high_freq_factor": 4.0,
               "rope.scaling.original_context_length": 32.0}

# gpt-oss's YaRN (as in gpt-oss-20b: factor 32 over 4096 positions). A tiny original context
# puts both correction dims at 0 (the beta_fast one is positive only past 2 pi 32 = 201
# positions), so 512: with base 10000 and 16 rotary pairs the ramp runs from pair 1 to pair 8,
# pairs 8-15 interpolated, their angles at position 36 still far from zero.
GPT_OSS_YARN_KEYS = {"rope.scaling.type": "yarn", "rope.scaling.factor": 4.0,
                     "rope.scaling.original_context_length": 512}

MODELS = [
    # GQA 4 with two KV heads (a wrong query-to-KV-head mapping shows), untied F32 output,
    # the legacy 32-block types.
    Spec("llama_gqa4_untied", "llama", dim=64, n_head=8, n_head_kv=2, n_ff=128, n_layer=3,
         types=dict(embd=Q.F16, q=Q.Q4_0, k=Q.Q5_0, v=Q.Q5_1, o=Q.Q8_0, gate=Q.Q4_0, up=Q.Q5_1,
                    down=Q.Q5_0, output=Q.F32),
         tied=False, features=["untied_output", "gqa"], seed=1),
    # qwen2: Q/K/V bias and NEOX rotary pairs; float types in every matrix role.
    Spec("qwen2_bias_neox", "qwen2", dim=64, n_head=4, n_head_kv=2, n_ff=96, n_layer=2,
         types=dict(embd=Q.Q8_0, q=Q.BF16, k=Q.F16, v=Q.F32, o=Q.Q4_1, gate=Q.Q8_0, up=Q.Q4_1,
                    down=Q.BF16),
         eps=1e-6, features=["qkv_bias", "neox", "gqa"], seed=2),
    # qwen2 with head_dim 64 from key_length (q_dim 128 != dim), rotating only half of each head.
    Spec("qwen2_partial_rope", "qwen2", dim=64, n_head=2, n_head_kv=2, n_ff=64, n_layer=2,
         head_dim=64, rope_dim=32,
         types=dict(embd=Q.Q5_1, q=Q.Q5_0, k=Q.Q8_0, v=Q.Q4_0, o=Q.Q5_1, gate=Q.F16, up=Q.Q5_0,
                    down=Q.Q8_0),
         features=["qkv_bias", "neox", "partial_rope"], seed=3),
    # Llama 3.1 style: a rope_freqs tensor, head_dim 128, K-quants everywhere, untied Q6_K output.
    Spec("llama3_rope_freqs_kquants", "llama", dim=256, n_head=2, n_head_kv=1, n_ff=256, n_layer=2,
         types=dict(embd=Q.Q5_K, q=Q.Q4_K, k=Q.Q5_K, v=Q.Q6_K, o=Q.Q4_K, gate=Q.Q5_K, up=Q.Q6_K,
                    down=Q.Q4_K, output=Q.Q6_K),
         tied=False, rope_freqs=True, features=["rope_freqs", "untied_output"], seed=4),
    # Llama 3 scaling given by keys only (no tensor): the engine computes the factors itself.
    Spec("llama3_scaling_keys", "llama", dim=64, n_head=4, n_head_kv=2, n_ff=96, n_layer=2,
         types=dict(embd=Q.Q8_0, q=Q.Q4_1, k=Q.Q4_1, v=Q.Q8_0, o=Q.Q4_1, gate=Q.Q4_1, up=Q.Q4_1,
                    down=Q.Q8_0),
         extra_kv=LLAMA3_KEYS, features=["llama3_keys", "gqa"], seed=5),
    # The arch name "mistral": MHA, adjacent-pair RoPE over 8 of 16 dims, untied Q8_0 output.
    Spec("mistral_partial_rope", "mistral", dim=64, n_head=4, n_head_kv=4, n_ff=128, n_layer=2,
         rope_dim=8,
         types=dict(embd=Q.BF16, q=Q.F32, k=Q.F16, v=Q.Q8_0, o=Q.F16, gate=Q.F32, up=Q.Q8_0,
                    down=Q.F16, output=Q.Q8_0),
         tied=False, features=["partial_rope", "untied_output"], seed=6),
    # Linear RoPE scaling (rope.scaling.type "linear", factor 4): positions are divided by 4,
    # as llama.cpp does (rope_freq_scale = 1 / factor).
    Spec("llama_linear_rope", "llama", dim=64, n_head=4, n_head_kv=1, n_ff=96, n_layer=2,
         types=dict(embd=Q.Q8_0, q=Q.Q8_0, k=Q.Q8_0, v=Q.Q8_0, o=Q.Q8_0, gate=Q.Q8_0, up=Q.Q8_0,
                    down=Q.Q8_0),
         extra_kv={"rope.scaling.type": "linear", "rope.scaling.factor": 4.0},
         features=["linear_scaling"], seed=7),
    # A llama file with Q/K/V bias tensors: llama.cpp loads them as optional tensors of its
    # llama arch and adds them, so the file means what the reference computes.
    Spec("llama_qkv_bias", "llama", dim=64, n_head=4, n_head_kv=2, n_ff=64, n_layer=2,
         types=dict(embd=Q.F16, q=Q.Q5_0, k=Q.Q5_1, v=Q.Q4_0, o=Q.Q8_0, gate=Q.Q4_1, up=Q.Q5_0,
                    down=Q.Q8_0),
         qkv_bias=True, features=["qkv_bias"], seed=8),
    # qwen3: an RMSNorm over each Q and K head before RoPE, NEOX pairs, no Q/K/V bias.
    Spec("qwen3_qk_norm", "qwen3", dim=64, n_head=4, n_head_kv=2, n_ff=96, n_layer=2, head_dim=32,
         types=dict(embd=Q.Q8_0, q=Q.Q8_0, k=Q.Q5_0, v=Q.Q8_0, o=Q.Q4_0, gate=Q.Q8_0, up=Q.Q5_1,
                    down=Q.Q8_0),
         eps=1e-6, rope_base=1e6, features=["qk_norm", "neox", "gqa"], seed=9),
    # phi3: Q|K|V in one tensor and gate|up in one (split by the engine on load), NEOX RoPE,
    # an untied output.
    Spec("phi3_fused", "phi3", dim=64, n_head=4, n_head_kv=2, n_ff=96, n_layer=2,
         types=dict(embd=Q.Q8_0, q=Q.Q8_0, k=Q.Q8_0, v=Q.Q8_0, o=Q.Q4_0, gate=Q.Q5_1, up=Q.Q5_1,
                    down=Q.Q8_0, output=Q.Q8_0),
         tied=False, features=["neox", "gqa", "fused_split"], seed=11),
    # phi3 LongRoPE as in Phi-4-mini: rope_factors_long/short, an attention factor on cos/sin,
    # and partial rotary (24 of 32 dims). The file's context (256) is past its original one (16),
    # so the long factors apply; the short ones are checked at a context of 16.
    Spec("phi3_longrope", "phi3", dim=64, n_head=4, n_head_kv=2, n_ff=96, n_layer=2, head_dim=32, rope_dim=24,
         types=dict(embd=Q.Q8_0, q=Q.Q8_0, k=Q.Q8_0, v=Q.Q8_0, o=Q.Q8_0, gate=Q.Q8_0, up=Q.Q8_0,
                    down=Q.Q8_0, output=Q.Q8_0),
         tied=False, long_rope=16, features=["long_rope", "rope_attn_factor", "partial_rope"], seed=12),
    # gemma3: six layers, so that one is global (layer 5) and five slide; a window of 16 that the
    # 37-token list outgrows; post-block norms near 2, so the blocks weigh against the residual
    # (the embeddings, scaled by sqrt(dim)) enough for each feature to show; GQA 4 over one KV head as in the 270M; head_dim 32 from key_length.
    Spec("gemma3_sliding_window", "gemma3", dim=64, n_head=4, n_head_kv=1, n_ff=128, n_layer=6, head_dim=32,
         types=dict(embd=Q.Q8_0, q=Q.Q5_0, k=Q.Q5_0, v=Q.Q8_0, o=Q.Q8_0, gate=Q.Q5_0, up=Q.Q5_0,
                    down=Q.Q8_0),
         eps=1e-6, rope_base=1e6, sliding_window=16,
         features=["qk_norm", "post_norms", "gelu", "embedding_scale", "sliding_window", "local_rope"], seed=10),
    # qwen3moe: qwen3's attention, and eight experts per layer of which the router picks two per
    # token; an F32 router as llama-quantize leaves it; legacy types in the experts.
    Spec("qwen3moe_experts", "qwen3moe", dim=64, n_head=4, n_head_kv=2, n_ff=96, n_layer=2, head_dim=32,
         types=dict(embd=Q.Q8_0, q=Q.Q8_0, k=Q.Q5_0, v=Q.Q8_0, o=Q.Q4_0, gate=Q.Q8_0, up=Q.Q5_1,
                    down=Q.Q4_1, router=Q.F32),
         eps=1e-6, rope_base=1e6, n_expert=8, n_expert_used=2, n_ff_exp=32,
         features=["qk_norm", "gqa", "expert_weights_norm", "expert_slices", "expert_choice"], seed=13),
    # qwen3moe with K-quant experts (Q4_K_M files mix Q4_K and Q6_K), two of four experts per
    # token, a quantized router and an untied output.
    Spec("qwen3moe_kquants", "qwen3moe", dim=256, n_head=2, n_head_kv=1, n_ff=192, n_layer=2, head_dim=128,
         types=dict(embd=Q.Q6_K, q=Q.Q4_K, k=Q.Q6_K, v=Q.Q6_K, o=Q.Q4_K, gate=Q.Q4_K, up=Q.Q6_K,
                    down=Q.Q8_0, router=Q.Q8_0, output=Q.Q6_K),
         tied=False, eps=1e-6, rope_base=1e6, n_expert=4, n_expert_used=2, n_ff_exp=64,
         features=["expert_weights_norm", "expert_slices", "untied_output"], seed=14),
    # smollm3: llama's layers, every fourth without RoPE (four layers: the last is NoPE). One NoPE
    # layer in four moves these random models' logits by 0.11-0.21 (seeds 16-21); seed 18's 0.21
    # clears the 0.2 the 8-bit test needs (10x its flip tolerance).
    Spec("smollm3_nope", "smollm3", dim=64, n_head=4, n_head_kv=2, n_ff=96, n_layer=4,
         types=dict(embd=Q.Q8_0, q=Q.Q8_0, k=Q.Q4_0, v=Q.Q8_0, o=Q.Q5_1, gate=Q.Q8_0, up=Q.Q4_1,
                    down=Q.Q8_0),
         features=["no_rope_layers", "gqa"], seed=18),
    # granite: llama's layers with IBM's four multipliers, each far enough from its default to show
    # (attention.scale 0.5 against 1/sqrt(16); at 1.0 and a residual scale of 2 this random model
    # turned chaotic: one 8-bit rounding flip moved every later position).
    Spec("granite_multipliers", "granite", dim=64, n_head=4, n_head_kv=2, n_ff=96, n_layer=2,
         types=dict(embd=Q.Q8_0, q=Q.Q8_0, k=Q.Q8_0, v=Q.Q5_0, o=Q.Q8_0, gate=Q.Q4_0, up=Q.Q8_0,
                    down=Q.Q8_0),
         extra_kv={"logit_scale": 4.0, "residual_scale": 1.5, "embedding_scale": 2.0, "attention.scale": 0.5},
         features=["logit_scale", "residual_scale", "granite_embedding_scale", "attention_scale", "gqa"], seed=17),
    # The low-bit formats people download (Q2_K and Q3_K mixes, IQ4_XS and IQ4_NL files) and
    # gpt-oss's MXFP4, in every matrix role, on a llama; dims of 256 for the 256-blocks.
    Spec("llama_low_bit_formats", "llama", dim=256, n_head=4, n_head_kv=2, n_ff=256, n_layer=2,
         types=dict(embd=Q.IQ4_NL, q=Q.Q3_K, k=Q.Q2_K, v=Q.IQ4_XS, o=Q.MXFP4, gate=Q.Q2_K, up=Q.Q3_K,
                    down=Q.IQ4_XS, output=Q.MXFP4),
         tied=False, features=["gqa", "untied_output"], seed=15),
    # gpt-oss: head_dim 32 from key_length (q_dim 128 != dim 64, as in gpt-oss-20b), GQA 2, layer 0
    # sliding (window 8, which the 37-token list outgrows) and layer 1 full, YaRN on both, per-head
    # sinks, MXFP4 experts (two of four per token) with F32 biases, gate/up weights and biases
    # large enough that some values pass swiglu_oai's limit of 7, an F32 router with its bias, an
    # untied output.
    Spec("gptoss_tiny", "gpt-oss", dim=64, n_head=4, n_head_kv=2, n_ff=64, n_layer=2, head_dim=32,
         types=dict(embd=Q.Q8_0, q=Q.Q8_0, k=Q.F16, v=Q.Q8_0, o=Q.F16, gate=Q.MXFP4, up=Q.MXFP4,
                    down=Q.MXFP4, router=Q.F32, output=Q.Q8_0),
         tied=False, rope_base=10000.0, sliding_window=8, n_expert=4, n_expert_used=2, n_ff_exp=64,
         context_length=2048, extra_kv=GPT_OSS_YARN_KEYS, expert_gate_up_std=2.5, expert_bias_std=1.0, router_std=1.5,
         sink_std=2.0,
         features=["attention_sinks", "o_bias", "qkv_bias", "router_bias", "expert_biases", "down_bias_weighted",
                   "swiglu_limit", "swiglu_oai", "softmax_weight_gating", "sliding_window", "yarn", "yarn_ramp",
                   "yarn_mscale", "gqa", "untied_output"], seed=34),
]


# --- weights ---------------------------------------------------------------------------------

def kquant_blocks(rng: np.random.Generator, rows: int, cols: int, qtype: Q, std: float) -> np.ndarray:
    """Random K-quant blocks (the gguf package cannot quantize to K types): random quants and
    sub-block scales, with each block's f16 super-scales chosen so that its values have about
    `std` spread and (Q4_K/Q5_K) zero mean. The layout of d/dmin is checked, not assumed: a
    block with them zeroed must dequantize to zeros."""
    block_bytes = gguf.GGML_QUANT_SIZES[qtype][1]
    n = rows * cols // 256
    raw = rng.integers(0, 256, (n, block_bytes), dtype=np.uint8)
    f16 = lambda a: np.asarray(a, dtype=np.float16).reshape(n, 1).view(np.uint8)  # noqa: E731
    deq = lambda b: dequantize(b, qtype).reshape(n, 256).astype(np.float64)  # noqa: E731
    if qtype in (Q.Q4_K, Q.Q5_K):
        # bytes 0-1: d (scales the quants), 2-3: dmin (scales the sub-block minimums)
        raw[:, 0:4] = 0
        assert not deq(raw).any(), "d/dmin are not where expected"
        raw[:, 0:2], raw[:, 2:4] = f16(np.ones(n)), f16(np.zeros(n))
        a = deq(raw)                       # sc * q
        raw[:, 0:2], raw[:, 2:4] = f16(np.zeros(n)), f16(np.ones(n))
        b = deq(raw)                       # -m
        d = std / np.maximum(a.std(axis=1), 1e-3)
        dmin = np.clip(-(d * a.mean(axis=1)) / np.minimum(b.mean(axis=1), -1e-3), 0, None)
        raw[:, 0:2], raw[:, 2:4] = f16(d), f16(dmin)
    elif qtype == Q.Q6_K:
        # ql[128] qh[64] scales[16] (int8) d (f16 at 208): keep scales small so d stays normal
        raw[:, 192:208] = rng.integers(-32, 32, (n, 16)).astype(np.int8).view(np.uint8)
        raw[:, 208:210] = 0
        assert not deq(raw).any(), "d is not where expected"
        raw[:, 208:210] = f16(np.ones(n))
        d = std / np.maximum(deq(raw).std(axis=1), 1e-3)
        raw[:, 208:210] = f16(d)
    else:
        pass  # IQ2_XXS etc.: random bytes are all a refusal test needs
    return raw.reshape(rows, cols // 256 * block_bytes)


# The formats that came with mixtures of experts: byte offsets of the f16 scale d and of dmin
# (None: no minimum); MXFP4's scale is the power-of-two byte at 0.
LOW_BIT_SCALES = {Q.Q2_K: (80, 82), Q.Q3_K: (108, None), Q.IQ4_XS: (0, None), Q.IQ4_NL: (0, None)}


def low_bit_blocks(rng: np.random.Generator, rows: int, cols: int, qtype: Q, std: float) -> np.ndarray:
    """Random blocks of Q2_K, Q3_K, IQ4_NL, IQ4_XS or MXFP4 (the gguf package quantizes none of
    them), each block's scale chosen for about `std` spread (Q2_K: and zero mean), the scale
    fields' places checked as kquant_blocks checks them."""
    block_size, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
    n = rows * cols // block_size
    raw = rng.integers(0, 256, (n, block_bytes), dtype=np.uint8)
    f16 = lambda a: np.asarray(a, dtype=np.float16).reshape(n, 1).view(np.uint8)  # noqa: E731
    deq = lambda b: dequantize(b, qtype).reshape(n, block_size).astype(np.float64)  # noqa: E731
    if qtype == Q.MXFP4:
        raw[:, 0] = 128                    # scale 2^0: the levels themselves
        spread = np.maximum(deq(raw).std(axis=1), 1e-3)
        raw[:, 0] = np.clip(np.rint(128 + np.log2(std / spread)), 2, 250).astype(np.uint8)
        return raw.reshape(rows, cols // block_size * block_bytes)
    d_at, dmin_at = LOW_BIT_SCALES[qtype]
    raw[:, d_at:d_at + 2] = 0
    if dmin_at is not None:
        raw[:, dmin_at:dmin_at + 2] = 0
    assert not deq(raw).any(), "the scales are not where expected"
    raw[:, d_at:d_at + 2] = f16(np.ones(n))
    a = deq(raw)
    d = std / np.maximum(a.std(axis=1), 1e-3)
    raw[:, d_at:d_at + 2] = f16(d)
    if dmin_at is not None:
        raw[:, d_at:d_at + 2] = f16(np.zeros(n))
        raw[:, dmin_at:dmin_at + 2] = f16(np.ones(n))
        b = deq(raw)                       # -m
        dmin = np.clip(-(d * a.mean(axis=1)) / np.minimum(b.mean(axis=1), -1e-3), 0, None)
        raw[:, d_at:d_at + 2], raw[:, dmin_at:dmin_at + 2] = f16(d), f16(dmin)
    return raw.reshape(rows, cols // block_size * block_bytes)


def encode(rng: np.random.Generator, rows: int, cols: int, qtype: Q, std: float, experts: int = 0):
    """A random (rows, cols) matrix stored as `qtype`, or `experts` of them as one 3-D tensor:
    (array, raw_dtype) for GGUFWriter."""
    if experts:
        data, raw = zip(*(encode(rng, rows, cols, qtype, std) for _ in range(experts)))
        return np.stack(data), raw[0]
    if qtype in (Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.IQ2_XXS):
        return kquant_blocks(rng, rows, cols, qtype, std), qtype
    if qtype in (Q.Q2_K, Q.Q3_K, Q.IQ4_NL, Q.IQ4_XS, Q.MXFP4):
        return low_bit_blocks(rng, rows, cols, qtype, std), qtype
    w = (rng.standard_normal((rows, cols)) * std).astype(np.float32)
    if qtype == Q.F32:
        return w, None
    if qtype == Q.F16:
        return w.astype(np.float16), None
    return quantize(w, qtype), qtype


def build(spec: Spec, path: Path, *, drop: str | None = None, reshape: str | None = None,
          retype: tuple[str, Q] | None = None, rope_freqs_len: int | None = None, block_count: int | None = None) -> None:
    """Writes `spec` as GGUF; drop/reshape/retype/rope_freqs_len/block_count break it on purpose."""
    rng = np.random.default_rng(spec.seed)
    a = spec.arch
    head_dim = spec.head_dim or spec.dim // spec.n_head
    q_dim, kv_dim = spec.n_head * head_dim, spec.n_head_kv * head_dim
    w = gguf.GGUFWriter(str(path), a)
    w.add_name(spec.name)
    w.add_uint32(f"{a}.block_count", spec.n_layer if block_count is None else block_count)
    w.add_uint32(f"{a}.context_length", spec.context_length)
    w.add_uint32(f"{a}.embedding_length", spec.dim)
    w.add_uint32(f"{a}.feed_forward_length", spec.n_ff)
    w.add_uint32(f"{a}.attention.head_count", spec.n_head)
    w.add_uint32(f"{a}.attention.head_count_kv", spec.n_head_kv)
    w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", spec.eps)
    w.add_float32(f"{a}.rope.freq_base", spec.rope_base)
    if spec.head_dim:
        w.add_uint32(f"{a}.attention.key_length", head_dim)
        w.add_uint32(f"{a}.attention.value_length", head_dim)
    if spec.rope_dim:
        w.add_uint32(f"{a}.rope.dimension_count", spec.rope_dim)
    if spec.sliding_window:
        w.add_uint32(f"{a}.attention.sliding_window", spec.sliding_window)
    if spec.n_expert:
        w.add_uint32(f"{a}.expert_count", spec.n_expert)
        w.add_uint32(f"{a}.expert_used_count", spec.n_expert_used)
        w.add_uint32(f"{a}.expert_feed_forward_length", spec.n_ff_exp)
    for key, value in spec.extra_kv.items():
        {str: w.add_string, int: w.add_uint32}.get(type(value), w.add_float32)(f"{a}.{key}", value)
    # A vocabulary of placeholder pieces, only so that llama.cpp loads the file for
    # llamacpp_reference.py (it refuses a file without one); the engine's tests feed token ids.
    w.add_tokenizer_model("llama")
    # (llama.cpp also looks up a newline byte token, and for phi3 its end-of-turn markers, by text.)
    named = ["<unk>", "<s>", "</s>", "<0x0A>", "<|endoftext|>", "<|end|>", "<|user|>", "<|assistant|>"]
    w.add_token_list(named + [f"t{i}" for i in range(len(named), VOCAB)])
    w.add_token_scores([0.0] * VOCAB)
    w.add_token_types([2, 3, 3, 6, 3, 3, 3, 3] + [1] * (VOCAB - len(named)))

    def matrix(name: str, role: str, rows: int, cols: int, std: float, experts: int = 0) -> None:
        qtype = spec.types[role]
        if retype and retype[0] == name:
            qtype = retype[1]
        if reshape == name:
            rows += 16
        if drop == name:
            return
        data, raw = encode(rng, rows, cols, qtype, std, experts)
        w.add_tensor(name, data, raw_dtype=raw)

    def vector(name: str, n: int, mean: float, std: float) -> None:
        v = (mean + rng.standard_normal(n) * std).astype(np.float32)
        if drop != name:
            w.add_tensor(name, v)

    matrix("token_embd.weight", "embd", VOCAB, spec.dim, 0.5)
    for i in range(spec.n_layer):
        p = f"blk.{i}."
        vector(p + "attn_norm.weight", spec.dim, 1.0, 0.2)
        if a == "phi3":  # fused Q|K|V, stored as one tensor of the q type
            matrix(p + "attn_qkv.weight", "q", q_dim + 2 * kv_dim, spec.dim, spec.dim ** -0.5)
        else:
            matrix(p + "attn_q.weight", "q", q_dim, spec.dim, spec.dim ** -0.5)
            matrix(p + "attn_k.weight", "k", kv_dim, spec.dim, spec.dim ** -0.5)
            matrix(p + "attn_v.weight", "v", kv_dim, spec.dim, spec.dim ** -0.5)
        if a in ("qwen2", "gpt-oss") or spec.qkv_bias:
            vector(p + "attn_q.bias", q_dim, 0.0, 0.5)
            vector(p + "attn_k.bias", kv_dim, 0.0, 0.5)
            vector(p + "attn_v.bias", kv_dim, 0.0, 0.5)
        if a in ("qwen3", "qwen3moe", "gemma3"):
            vector(p + "attn_q_norm.weight", head_dim, 1.0, 0.3)
            vector(p + "attn_k_norm.weight", head_dim, 1.0, 0.3)
        matrix(p + "attn_output.weight", "o", spec.dim, q_dim, q_dim ** -0.5)
        if a == "gpt-oss":
            vector(p + "attn_output.bias", spec.dim, 0.0, 0.5)
            # the sinks: logits of magnitude 1-3 or so, against scores of about that size
            vector(p + "attn_sinks.weight", spec.n_head, 0.0, spec.sink_std)
            # no ffn_norm: post_attention_norm is the norm before the experts
            vector(p + "post_attention_norm.weight", spec.dim, 1.0, 0.2)
        if a == "gemma3":
            vector(p + "post_attention_norm.weight", spec.dim, 2.0, 0.5)
            vector(p + "post_ffw_norm.weight", spec.dim, 2.0, 0.5)
        if a != "gpt-oss":
            vector(p + "ffn_norm.weight", spec.dim, 1.0, 0.2)
        if a == "gpt-oss":  # biases of the router and of each expert's gate, up and down (F32)
            matrix(p + "ffn_gate_inp.weight", "router", spec.n_expert, spec.dim, spec.router_std * spec.dim ** -0.5)
            vector(p + "ffn_gate_inp.bias", spec.n_expert, 0.0, 0.5 * spec.router_std)
            g = spec.expert_gate_up_std * spec.dim ** -0.5
            matrix(p + "ffn_gate_exps.weight", "gate", spec.n_ff_exp, spec.dim, g, spec.n_expert)
            matrix(p + "ffn_up_exps.weight", "up", spec.n_ff_exp, spec.dim, g, spec.n_expert)
            matrix(p + "ffn_down_exps.weight", "down", spec.dim, spec.n_ff_exp, spec.n_ff_exp ** -0.5, spec.n_expert)
            for name, n in (("gate", spec.n_ff_exp), ("up", spec.n_ff_exp), ("down", spec.dim)):
                b = (rng.standard_normal((spec.n_expert, n)) * spec.expert_bias_std).astype(np.float32)
                if drop != p + f"ffn_{name}_exps.bias":
                    w.add_tensor(p + f"ffn_{name}_exps.bias", b)
        elif spec.n_expert:  # the router (its logits spread enough that the choice matters) and the experts
            matrix(p + "ffn_gate_inp.weight", "router", spec.n_expert, spec.dim, 2.0 * spec.dim ** -0.5)
            matrix(p + "ffn_gate_exps.weight", "gate", spec.n_ff_exp, spec.dim, spec.dim ** -0.5, spec.n_expert)
            matrix(p + "ffn_up_exps.weight", "up", spec.n_ff_exp, spec.dim, spec.dim ** -0.5, spec.n_expert)
            matrix(p + "ffn_down_exps.weight", "down", spec.dim, spec.n_ff_exp, spec.n_ff_exp ** -0.5, spec.n_expert)
        elif a == "phi3":  # fused gate|up in ffn_up: the gate's rows first
            matrix(p + "ffn_up.weight", "up", 2 * spec.n_ff, spec.dim, spec.dim ** -0.5)
        else:
            matrix(p + "ffn_gate.weight", "gate", spec.n_ff, spec.dim, spec.dim ** -0.5)
            matrix(p + "ffn_up.weight", "up", spec.n_ff, spec.dim, spec.dim ** -0.5)
        if not spec.n_expert:
            matrix(p + "ffn_down.weight", "down", spec.dim, spec.n_ff, spec.n_ff ** -0.5)
    vector("output_norm.weight", spec.dim, 1.0, 0.2)
    if not spec.tied:
        matrix("output.weight", "output", VOCAB, spec.dim, spec.dim ** -0.5)
    if spec.rope_freqs:
        # What llama.cpp's converter writes for rope_type "llama3": per-frequency divisors.
        rope_dim = spec.rope_dim or head_dim
        inv = spec.rope_base ** (-np.arange(0, rope_dim, 2, dtype=np.float64) / rope_dim)
        keys = {k.split(".")[-1]: v for k, v in LLAMA3_KEYS.items() if k != "rope.scaling.type"}
        factors = (inv / llama3_inv_freq(inv, **keys)).astype(np.float32)
        if rope_freqs_len is not None:
            factors = np.resize(factors, rope_freqs_len)
        w.add_tensor("rope_freqs.weight", factors)
    if spec.long_rope:
        # What llama.cpp's converter writes for rope_scaling "longrope": both divisor sets (the
        # lowest frequencies divided most, as in Phi-3.5's), the original context, and
        # attn_factor = sqrt(1 + ln(scale) / ln(original context)).
        half = (spec.rope_dim or head_dim) // 2
        ramp = np.linspace(0.0, 1.0, half)
        short_factors = (1.0 + ramp * rng.uniform(0.5, 1.5, half)).astype(np.float32)
        long_factors = (short_factors * (1.0 + 15.0 * ramp ** 2)).astype(np.float32)
        w.add_tensor("rope_factors_long.weight", long_factors)
        w.add_tensor("rope_factors_short.weight", short_factors)
        w.add_uint32(f"{a}.rope.scaling.original_context_length", spec.long_rope)
        w.add_float32(f"{a}.rope.scaling.attn_factor", math.sqrt(1 + math.log(256 / spec.long_rope) / math.log(spec.long_rope)))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    size = path.stat().st_size
    assert size < MAX_FILE_BYTES, f"{path.name} is {size} bytes"


# --- reference -------------------------------------------------------------------------------

def all_logits(ref: LlamaRef) -> list[np.ndarray]:
    out = []
    for tokens in TOKEN_LISTS:
        out.append(ref.forward(tokens, ref.new_cache(len(tokens)), all_logits=True))
    return out


def rel_change(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    return max(float(np.max(np.abs(x - y)) / np.max(np.abs(x))) for x, y in zip(a, b))


def feature_off(ref: LlamaRef, feature: str) -> LlamaRef:
    """A copy of the reference model with one feature removed (or, for GQA, the KV heads mapped
    to query heads the wrong way round), to measure how much the feature moves the logits."""
    r = copy.copy(ref)
    r.cfg = copy.copy(ref.cfg)
    cfg = r.cfg
    unscaled = lambda dim: cfg.rope_base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)  # noqa: E731
    if feature == "untied_output":
        r.output = ref.tok_embd  # what an engine that ignored output.weight would compute
    elif feature == "qkv_bias":
        r.layers = [copy.copy(L) for L in ref.layers]
        for L in r.layers:
            L.bq = L.bk = L.bv = None
    elif feature == "neox":
        cfg.rope_neox = not cfg.rope_neox
    elif feature == "partial_rope":
        cfg.rope_dim = cfg.head_dim
        r.rope_inv_freq = unscaled(cfg.head_dim)
    elif feature in ("rope_freqs", "llama3_keys", "linear_scaling", "long_rope"):
        r.rope_inv_freq = unscaled(cfg.rope_dim)
    elif feature == "rope_attn_factor":
        cfg.rope_attn_factor = 1.0
    elif feature == "gqa":
        # Query head i reading KV head i % n_kv instead of i // group, a plausible indexing bug:
        # the heads are reordered so that head i sits in a slot that reads KV head i % n_kv.
        group = cfg.n_head // cfg.n_head_kv
        perm = np.arange(cfg.n_head).reshape(group, cfg.n_head_kv).T.reshape(-1)
        r.layers = [copy.copy(L) for L in ref.layers]
        for L in r.layers:
            L.wq = L.wq.reshape(cfg.n_head, cfg.head_dim, -1)[perm].reshape(L.wq.shape)
            L.wo = L.wo.reshape(L.wo.shape[0], cfg.n_head, cfg.head_dim)[:, perm].reshape(L.wo.shape)
            if L.bq is not None:
                L.bq = L.bq.reshape(cfg.n_head, cfg.head_dim)[perm].reshape(-1)
            if L.sinks is not None:  # a query head's sink moves with it
                L.sinks = L.sinks[perm]
    elif feature == "fused_split":
        # Halves swapped: gate and up read the wrong rows of ffn_up, as a wrong split would.
        r.layers = [copy.copy(L) for L in ref.layers]
        for L in r.layers:
            L.w_gate, L.w_up = L.w_up, L.w_gate
    elif feature == "qk_norm":
        r.layers = [copy.copy(L) for L in ref.layers]
        for L in r.layers:
            L.q_norm = L.k_norm = None
    elif feature == "post_norms":
        r.layers = [copy.copy(L) for L in ref.layers]
        for L in r.layers:
            L.post_attn_norm = L.post_ffn_norm = None
    elif feature == "gelu":
        cfg.gelu = False
    elif feature == "embedding_scale":
        cfg.embedding_scale = 1.0
    elif feature == "sliding_window":
        cfg.sliding_window = 1 << 20  # the local layers kept (their RoPE), their window never reached
    elif feature == "local_rope":
        r.rope_inv_freq_local = ref.rope_inv_freq
    elif feature == "logit_scale":
        cfg.logit_scale = 1.0
    elif feature == "residual_scale":
        cfg.residual_scale = 1.0
    elif feature == "granite_embedding_scale":
        cfg.embedding_scale = 1.0
    elif feature == "attention_scale":
        cfg.attention_scale = 0.0
    elif feature == "no_rope_layers":
        cfg.no_rope_step = 0  # every layer rotated
    elif feature == "expert_weights_norm":
        cfg.expert_weights_norm = False
    elif feature == "expert_slices":
        # Each expert reading the next one's slice of the 3-D tensors, as a wrong offset would.
        r.layers = [copy.copy(L) for L in ref.layers]
        for L in r.layers:
            L.gate_exps, L.up_exps, L.down_exps = (m[1:] + m[:1] for m in (L.gate_exps, L.up_exps, L.down_exps))
    elif feature in ("attention_sinks", "o_bias", "router_bias", "expert_biases"):
        attrs = {"attention_sinks": ["sinks"], "o_bias": ["bo"], "router_bias": ["router_b"],
                 "expert_biases": ["gate_exps_b", "up_exps_b", "down_exps_b"]}[feature]
        r.layers = [copy.copy(L) for L in ref.layers]
        for L in r.layers:
            for attr in attrs:
                setattr(L, attr, None)
    elif feature == "down_bias_weighted":
        cfg.down_bias_weighted = False  # each expert's down bias added after its weight, unscaled
    elif feature == "swiglu_limit":
        cfg.swiglu_limit = math.inf     # neither the gate capped nor the up clamped
    elif feature == "swiglu_oai":
        cfg.expert_act = "silu"         # SiLU(gate) * up: no alpha, no up + 1 (the limit kept off too)
    elif feature == "softmax_weight_gating":
        cfg.expert_gating, cfg.expert_weights_norm = "softmax", False  # softmax over all, then the top-k
    elif feature == "yarn":
        r.rope_inv_freq = r.rope_inv_freq_local = unscaled(cfg.rope_dim)
        r.rope_yarn_mscale = 1.0
    elif feature == "yarn_ramp":        # every pair interpolated: linear scaling, YaRN's mscale kept
        r.rope_inv_freq = r.rope_inv_freq_local = unscaled(cfg.rope_dim) / cfg.rope_yarn["factor"]
    elif feature == "yarn_mscale":
        r.rope_yarn_mscale = 1.0
    elif feature == "expert_choice":
        # The top-k taken from the router's logits in the wrong order (the least probable experts).
        r.layers = [copy.copy(L) for L in ref.layers]
        for L in r.layers:
            L.router = -L.router
    else:
        raise ValueError(feature)
    return r


# The engine's fast path converts each matmul's activations to 8 bits per element (quant.h), in
# the block format the weight type's dot product takes, as llama.cpp does: blocks of 32 with an
# f16 scale (Q8_0, Q8_1) for the legacy types, blocks of 256 with an f32 scale (Q8_K) for
# K-quants; float weights meet f32 activations. (block size, f16 scale) per weight type:
ACTIVATION_BLOCKS = {Q.Q4_0: (32, True), Q.Q4_1: (32, True), Q.Q5_0: (32, True), Q.Q5_1: (32, True),
                     Q.Q8_0: (32, True), Q.Q4_K: (256, False), Q.Q5_K: (256, False), Q.Q6_K: (256, False),
                     Q.IQ4_NL: (32, True), Q.MXFP4: (32, True), Q.Q2_K: (256, False), Q.Q3_K: (256, False),
                     Q.IQ4_XS: (256, False)}


class EightBitActivations:
    """A weight matrix whose products first round the activations as the fast path does: per
    block d = max|x| / 127 (f16 or f32), q = round-half-even(x / d) in [-127, 127], x' = q d.
    Q4_1/Q5_1 weights (w = d_w q_w + m_w) meet Q8_1 blocks, which also carry s = d * sum(q) as
    f16, and the dot product takes m_w * s for m_w * sum(x'): that rounding of s is added too."""
    __array_ufunc__ = None  # so that `h @ W.T` calls __rmatmul__ below

    def __init__(self, w: np.ndarray, qtype: Q, raw: np.ndarray | None):
        self.w, self.block = w, ACTIVATION_BLOCKS.get(qtype)
        self.mins = None  # [rows, blocks]: m_w, the f16 at bytes 2-3 of each Q4_1/Q5_1 block
        if qtype in (Q.Q4_1, Q.Q5_1):
            block_bytes = gguf.GGML_QUANT_SIZES[qtype][1]
            blocks = raw.reshape(raw.shape[0], -1, block_bytes)
            self.mins = np.ascontiguousarray(blocks[:, :, 2:4]).view(np.float16)[:, :, 0].astype(np.float64)

    @property
    def T(self):  # noqa: N802 (llama_ref writes x @ W.T)
        return self

    def __rmatmul__(self, x: np.ndarray) -> np.ndarray:
        if self.block is not None:
            size, f16 = self.block
            y = x.reshape(-1, size)
            d = (np.abs(y).max(axis=1, keepdims=True).astype(np.float32) / np.float32(127))
            d = d.astype(np.float16 if f16 else np.float32).astype(np.float64)
            inverse = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
            q = np.clip(np.rint(y * inverse), -127, 127)
            x_rounded = (q * d).reshape(x.shape)
            out = x_rounded @ self.w.T
            if self.mins is not None:
                s = d[:, 0] * q.sum(axis=1)  # exact in float32 too: 11-bit d times a 12-bit sum
                s_error = (s.astype(np.float16).astype(np.float64) - s).reshape(x.shape[0], -1)
                out = out + s_error @ self.mins.T
            return out
        return x @ self.w.T


def with_8bit_activations(ref: LlamaRef, spec: Spec, path: Path) -> LlamaRef:
    """The reference with every matmul's activations rounded as the engine's fast path does."""
    raw = {t.name: t.data for t in gguf.GGUFReader(str(path)).tensors}
    r = copy.copy(ref)
    names = dict(wq=("attn_q", "q"), wk=("attn_k", "k"), wv=("attn_v", "v"), wo=("attn_output", "o"),
                 w_gate=("ffn_gate", "gate"), w_up=("ffn_up", "up"), w_down=("ffn_down", "down"))
    if spec.arch == "phi3":  # the fused tensors and their types (Q|K|V of q's, gate|up of up's)
        names.update(wk=("attn_k", "q"), wv=("attn_v", "q"), w_gate=("ffn_gate", "up"))
        cfg = ref.cfg
        q_dim, kv_dim = cfg.n_head * cfg.head_dim, cfg.n_head_kv * cfg.head_dim
        for i in range(cfg.n_layer):
            qkv, gate_up = raw[f"blk.{i}.attn_qkv.weight"], raw[f"blk.{i}.ffn_up.weight"]
            raw[f"blk.{i}.attn_q.weight"] = qkv[:q_dim]
            raw[f"blk.{i}.attn_k.weight"] = qkv[q_dim:q_dim + kv_dim]
            raw[f"blk.{i}.attn_v.weight"] = qkv[q_dim + kv_dim:]
            raw[f"blk.{i}.ffn_gate.weight"] = gate_up[:cfg.n_ff]
            raw[f"blk.{i}.ffn_up.weight"] = gate_up[cfg.n_ff:]
    if spec.n_expert:  # no dense feed-forward: the router and each expert's slice instead
        for key in ("w_gate", "w_up", "w_down"):
            del names[key]
    r.layers = [copy.copy(L) for L in ref.layers]
    for i, L in enumerate(r.layers):
        for attr, (name, role) in names.items():
            setattr(L, attr, EightBitActivations(getattr(L, attr), spec.types[role], raw[f"blk.{i}.{name}.weight"]))
        if spec.n_expert:
            L.router = EightBitActivations(L.router, spec.types["router"], raw[f"blk.{i}.ffn_gate_inp.weight"])
            for attr, name, role in (("gate_exps", "ffn_gate_exps", "gate"), ("up_exps", "ffn_up_exps", "up"),
                                     ("down_exps", "ffn_down_exps", "down")):
                tensor = raw[f"blk.{i}.{name}.weight"]
                setattr(L, attr, [EightBitActivations(m, spec.types[role], tensor[e]) for e, m in enumerate(getattr(L, attr))])
    output = "token_embd.weight" if spec.tied else "output.weight"
    r.output = EightBitActivations(ref.output, spec.types["embd" if spec.tied else "output"], raw[output])
    return r


def rounded(a: np.ndarray) -> list:
    return [float(f"{x:.8g}") for x in a]


def make_model(spec: Spec, out: Path) -> dict:
    path = out / f"{spec.name}.gguf"
    build(spec, path)
    ref = LlamaRef(str(path))
    assert ref.tied_embeddings == spec.tied
    logits = all_logits(ref)
    logits_q8 = all_logits(with_8bit_activations(ref, spec, path))
    effects = {f: rel_change(logits, all_logits(feature_off(ref, f))) for f in spec.features}
    for f, e in effects.items():
        assert e > MIN_FEATURE_EFFECT, f"{spec.name}: feature {f} moves the logits by only {e:.2e}"
    c = ref.cfg
    short = {}
    if spec.long_rope:
        # The same file run at its original context: LongRoPE's short factors.
        short_ref = LlamaRef(str(path), n_ctx=spec.long_rope)
        assert rel_change(logits, all_logits(short_ref)) > MIN_FEATURE_EFFECT
        short = {"short_context": spec.long_rope,
                 "sequences_short_context": [[rounded(row) for row in l] for l in all_logits(short_ref)]}
    doc = {
        "name": spec.name,
        "gguf": path.name,
        "config": {"architecture": c.arch, "num_layers": c.n_layer, "dim": c.dim, "num_heads": c.n_head,
                   "num_kv_heads": c.n_head_kv, "head_dim": c.head_dim, "rope_dim": c.rope_dim,
                   "ffn_dim": c.n_ff, "vocab_size": c.n_vocab, "tied_embeddings": ref.tied_embeddings,
                   "qkv_bias": ref.layers[0].bq is not None, "neox": c.rope_neox,
                   "qk_norm": c.qk_norm, "post_norms": c.post_norms, "gelu": c.gelu,
                   "sliding_window": c.sliding_window, "num_experts": c.n_expert,
                   "num_experts_used": c.n_expert_used, "expert_ffn_dim": c.n_ff_exp if c.n_expert else 0,
                   "no_rope_layer_step": c.no_rope_step, "residual_scale": c.residual_scale,
                   "logit_scale": c.logit_scale, "query_scale": c.attention_scale or 1.0 / math.sqrt(c.head_dim),
                   "embedding_scale": c.embedding_scale,
                   **({"swa_pattern": c.swa_pattern, "attention_sinks": True, "attention_output_bias": True,
                       "expert_biases": True, "expert_gating": c.expert_gating, "expert_activation": c.expert_act,
                       "swiglu_alpha": c.swiglu_alpha, "swiglu_limit": c.swiglu_limit,
                       "rope_scaling": {"type": "yarn", **c.rope_yarn, "beta_fast": 32.0, "beta_slow": 1.0,
                                        "corr_dims": list(yarn_corr_dims(c.rope_dim, c.rope_yarn["original_context_length"], c.rope_base)),
                                        "mscale": ref.rope_yarn_mscale}}
                      if c.arch == "gpt-oss" else {})},
        "weight_types": sorted({t.name for t in spec.types.values()}),
        "feature_effects": effects,
        "sequences": [{"tokens": t, "logits": [rounded(row) for row in l],
                       "logits_8bit_activations": [rounded(row) for row in l8]}
                      for t, l, l8 in zip(TOKEN_LISTS, logits, logits_q8)],
        **short,
    }
    (out / f"{spec.name}.json").write_text(json.dumps(doc))
    return {"name": spec.name, "gguf": path.name, "reference": f"{spec.name}.json",
            "feature_effects": effects}


# Files the engine must refuse, and words its message must contain.
def make_broken(out: Path) -> list[dict]:
    base = next(s for s in MODELS if s.name == "llama3_scaling_keys")
    kq = next(s for s in MODELS if s.name == "llama3_rope_freqs_kquants")
    qwen = next(s for s in MODELS if s.name == "qwen2_bias_neox")
    cases = [
        ("arch_falcon", Spec(**{**base.__dict__, "arch": "falcon"}), {}, ["architecture", "falcon"]),
        ("missing_tensor", base, {"drop": "blk.1.ffn_up.weight"}, ["blk.1.ffn_up.weight", "missing"]),
        ("missing_bias", qwen, {"drop": "blk.1.attn_k.bias"}, ["blk.1.attn_k.bias", "missing"]),
        ("missing_norm", base, {"drop": "output_norm.weight"}, ["output_norm.weight", "missing"]),
        ("wrong_shape", base, {"reshape": "blk.0.attn_k.weight"}, ["blk.0.attn_k.weight", "shape"]),
        ("wrong_output_shape", Spec(**{**base.__dict__, "tied": False, "types": {**base.types, "output": Q.Q8_0}}),
         {"reshape": "output.weight"}, ["output.weight", "shape"]),
        ("head_count_kv", Spec(**{**base.__dict__, "n_head_kv": 3}), {}, ["head_count", "head_count_kv"]),
        ("type_iq2_xxs", kq, {"retype": ("blk.1.ffn_gate.weight", Q.IQ2_XXS)}, ["blk.1.ffn_gate.weight", "IQ2_XXS"]),
        ("rope_freqs_length", kq, {"rope_freqs_len": 32}, ["rope_freqs.weight", "elements"]),
        # Layers the header does not count would silently be skipped.
        ("block_count_short", base, {"block_count": base.n_layer - 1}, [f"blk.{base.n_layer - 1}.", "block_count"]),
    ]
    listed = []
    for cause, spec, breakage, words in cases:
        path = out / f"broken_{cause}.gguf"
        build(spec, path, **breakage)
        listed.append({"cause": cause, "gguf": path.name, "message_contains": words})
    return listed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    out = args.out / "tiny_models"
    out.mkdir(parents=True, exist_ok=True)
    models = [make_model(s, out) for s in MODELS]
    index = {"token_lists": TOKEN_LISTS, "models": models, "broken": make_broken(out)}
    (out / "index.json").write_text(json.dumps(index, indent=1))
    for m in models:
        print(f"{m['name']:28s} " + ", ".join(f"{k} {v:.3f}" for k, v in m["feature_effects"].items()))


if __name__ == "__main__":
    main()
