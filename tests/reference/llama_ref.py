"""Independent NumPy reference forward pass of the Llama architecture, read from a GGUF file.

Covers GGUF arch "llama" (also Mistral 7B-style files, which llama.cpp converts to "llama"; the
arch name "mistral" reads the same), "qwen2", "qwen3", "qwen3moe", "gemma3", "phi3", "smollm3" (llama's
layers with RoPE left out of every fourth, as llama.cpp hard-codes for it) and "granite" (llama's layers
with multipliers on the embeddings, the scores, each block's output and the logits) (its fused Q|K|V and gate|up tensors split by rows): GQA, RoPE (llama.cpp "normal"
or NEOX pairing), linear and Llama 3 RoPE scaling (a rope_freqs tensor, or rope.scaling.type
"llama3"), RMSNorm, SwiGLU, optional Q/K/V bias, tied embeddings, a KV cache; for qwen3 and
gemma3 an RMSNorm over each Q and K head before RoPE; for gemma3 also embeddings scaled by
sqrt(dim), RMSNorms of each block's output before its residual add, a GELU (tanh) gate, the query
scaled by 1/sqrt(head_dim), and sliding-window attention: on five layers of every six a token
sees its last `sliding_window` positions only, rotated with base 10000 (the sixth: the file's
base and scaling), as llama.cpp reads these files (its Gemma 3 norms hold 1 + w already: the
converter adds the 1); for qwen3moe, qwen3's attention and a mixture of experts in place of the
feed-forward block: softmax over the router's logits, the top expert_used_count experts, their
probabilities renormalized to sum to 1 (llama.cpp reads no expert_weights_scale for qwen3moe),
the weighted sum of those experts' SwiGLU blocks (Qwen3-MoE's norm_topk_prob, as HF's
Qwen3MoeSparseMoeBlock computes it); and "gpt-oss" (OpenAI's gpt-oss, llama.cpp's LLM_ARCH_OPENAI_MOE):
Q/K/V biases, NEOX RoPE with YaRN scaling, a learned per-head attention sink (a logit that joins
each softmax's denominator only), an output-projection bias, a sliding window on the even layers
(0, 2, ...: llama.cpp's set_swa_pattern(2)) with the same RoPE as the odd (full) ones, the
post_attention_norm tensor as the norm before the feed-forward block, and a mixture of experts with
a router bias, the top expert_used_count experts of the router's logits weighted by a softmax over
those k logits only, biased gate/up/down projections and OpenAI's clamped SwiGLU (alpha 1.702,
limit 7), each expert's down bias added before its weight multiplies it. YaRN (rope.scaling.type
"yarn") as llama.cpp's ggml rope_yarn computes it (on every layer but gemma3's local ones): per rotary pair i, the angle
pos * base^(-2i/d) * (s (1 - r_i) + r_i) with s = 1 / factor and r_i = 1 - clamp((i - low) /
max(0.001, high - low), 0, 1), [low, high] ggml_rope_yarn_corr_dims with beta_fast 32 and
beta_slow 1 (llama-cpp-python's defaults; llama.cpp reads no beta keys from the file), and cos and
sin times 1 + 0.1 ln(factor). Leaves out: shared experts, logit soft-capping, anything else an arch may add. Weights are dequantized by the `gguf` package
(gguf.quants.dequantize), never by our own code, so this checks the C++ dequantizers too.

Computes in float64: the reference should carry only the error that is in the file (the
quantized weights), so that any difference from the C++ engine is the engine's own rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import gguf
from gguf.quants import dequantize

DTYPE = np.float64

# RoPE pairing per arch, as llama.cpp's llama_model_rope_type() assigns it. For "llama" the
# converter permutes HF's Q/K rows so that the file's heads rotate adjacent pairs (2i, 2i+1);
# qwen2 keeps HF's layout and rotates (i, i + n_rot/2) ("NEOX").
ROPE_NEOX_BY_ARCH = {"llama": False, "mistral": False, "qwen2": True, "qwen3": True, "qwen3moe": True, "gemma3": True,
                     "phi3": True, "smollm3": False, "granite": False, "gpt-oss": True}
GEMMA3_SWA_PATTERN = 6          # llama.cpp: layer il is global when (il + 1) % 6 == 0
GEMMA3_LOCAL_ROPE_BASE = 10000.0
GPT_OSS_SWA_PATTERN = 2         # llama.cpp set_swa_pattern(2): layer il slides when il % 2 == 0
SWIGLU_OAI_ALPHA, SWIGLU_OAI_LIMIT = 1.702, 7.0   # llama-graph.cpp LLM_FFN_SWIGLU_OAI_MOE
YARN_BETA_FAST, YARN_BETA_SLOW = 32.0, 1.0


@dataclass
class Config:
    arch: str
    n_layer: int
    dim: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_ff: int
    n_vocab: int
    n_ctx_train: int
    rope_dim: int            # n_rot: leading dims of each head that RoPE rotates
    rope_base: float
    rope_freq_scale: float   # 1 / linear scaling factor (1.0 when unscaled)
    rope_llama3: dict | None  # rope.scaling.type "llama3": factor, low/high_freq_factor, original ctx
    rope_neox: bool
    norm_eps: float
    bos_token_id: int | None
    eos_token_id: int | None
    qk_norm: bool = False         # qwen3, gemma3
    post_norms: bool = False      # gemma3: attn_post_norm, ffn_post_norm
    gelu: bool = False            # gemma3: GELU (tanh approximation) gate instead of SiLU
    embedding_scale: float = 1.0  # gemma3: sqrt(dim)
    sliding_window: int = 0       # gemma3: 0 = every layer sees every position
    swa_pattern: int = 0
    # phi3 LongRoPE (rope_factors_long/short tensors): past rope_original_context the long
    # divisors, else the short; cos and sin of the global layers times rope_attn_factor, as
    # llama.cpp applies rope.scaling.attn_factor.
    rope_original_context: int = 0
    rope_attn_factor: float = 1.0
    # qwen3moe: experts per layer, used per token, each expert's feed-forward size, the weights' scale
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_exp: int = 0
    expert_weights_norm: bool = True
    no_rope_step: int = 0         # smollm3: layer il rotates unless (il + 1) % 4 == 0 (NoPE layers)
    attention_scale: float = 0.0  # granite: scores are q.k times this (0: 1/sqrt(head_dim))
    residual_scale: float = 1.0   # granite: each block's output times this before its residual add
    logit_scale: float = 1.0      # granite: the logits divided by this
    # YaRN (rope.scaling.type "yarn"): factor, original context; None when not scaled so
    rope_yarn: dict | None = None
    local_rope_own: bool = False  # gemma3: the sliding-window layers rotate with their own base, unscaled
    # gpt-oss: "softmax_weight" = the top-k of the router's logits, then a softmax over those k
    # (llama.cpp LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT); "softmax" = softmax over all, then top-k
    expert_gating: str = "softmax"
    expert_act: str = "silu"      # gpt-oss: "swiglu_oai"
    swiglu_limit: float = SWIGLU_OAI_LIMIT
    swiglu_alpha: float = SWIGLU_OAI_ALPHA
    down_bias_weighted: bool = True  # gpt-oss: each expert's down bias scaled by its weight (added before)

    def is_local(self, il: int) -> bool:
        return self.sliding_window > 0 and (il + 1) % self.swa_pattern != 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _field(reader: gguf.GGUFReader, key: str, default=None):
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def read_config(reader: gguf.GGUFReader, n_vocab: int) -> Config:
    arch = _field(reader, "general.architecture")
    if arch not in ROPE_NEOX_BY_ARCH:
        raise ValueError(f"unsupported architecture '{arch}' (supported: {sorted(ROPE_NEOX_BY_ARCH)})")
    a = lambda key, default=None: _field(reader, f"{arch}.{key}", default)  # noqa: E731
    dim, n_head = a("embedding_length"), a("attention.head_count")
    head_dim = a("attention.key_length", dim // n_head)

    scaling = a("rope.scaling.type", "none")
    freq_scale, llama3, yarn = 1.0, None, None
    if scaling == "yarn":
        factor = float(a("rope.scaling.factor"))
        freq_scale = 1.0 / factor
        yarn = dict(factor=factor,
                    original_context_length=int(a("rope.scaling.original_context_length", a("context_length"))))
    elif scaling == "linear":
        freq_scale = 1.0 / a("rope.scaling.factor")
    elif scaling == "llama3":
        llama3 = dict(factor=float(a("rope.scaling.factor")),
                      low_freq_factor=float(a("rope.scaling.low_freq_factor", 1.0)),
                      high_freq_factor=float(a("rope.scaling.high_freq_factor", 4.0)),
                      original_context_length=float(a("rope.scaling.original_context_length", 8192)))
    elif scaling != "none":
        raise ValueError(f"unsupported RoPE scaling '{scaling}'")
    if a("rope.scale_linear") is not None:  # older files spell linear scaling this way
        freq_scale = 1.0 / a("rope.scale_linear")

    return Config(
        arch=arch,
        n_layer=a("block_count"),
        dim=dim,
        n_head=n_head,
        n_head_kv=a("attention.head_count_kv", n_head),
        head_dim=head_dim,
        n_ff=a("feed_forward_length"),
        n_vocab=n_vocab,
        n_ctx_train=a("context_length"),
        rope_dim=a("rope.dimension_count", head_dim),
        rope_base=float(a("rope.freq_base", 10000.0)),
        rope_freq_scale=freq_scale,
        rope_llama3=llama3,
        rope_neox=ROPE_NEOX_BY_ARCH[arch],
        norm_eps=float(a("attention.layer_norm_rms_epsilon")),
        bos_token_id=_field(reader, "tokenizer.ggml.bos_token_id"),
        eos_token_id=_field(reader, "tokenizer.ggml.eos_token_id"),
        qk_norm=arch in ("qwen3", "qwen3moe", "gemma3"),
        post_norms=arch == "gemma3",
        rope_yarn=yarn,
        local_rope_own=arch == "gemma3",
        expert_gating="softmax_weight" if arch == "gpt-oss" else "softmax",
        expert_act="swiglu_oai" if arch == "gpt-oss" else "silu",
        expert_weights_norm=arch != "gpt-oss",
        gelu=arch == "gemma3",
        embedding_scale=math.sqrt(dim) if arch == "gemma3" else float(a("embedding_scale", 0.0)) or 1.0,
        attention_scale=float(a("attention.scale", 0.0)) if arch == "granite" else 0.0,
        residual_scale=float(a("residual_scale", 0.0)) or 1.0 if arch == "granite" else 1.0,
        logit_scale=float(a("logit_scale", 1.0)) if arch == "granite" else 1.0,
        sliding_window=int(a("attention.sliding_window", 0)) if arch in ("gemma3", "gpt-oss") else 0,
        swa_pattern={"gemma3": GEMMA3_SWA_PATTERN, "gpt-oss": GPT_OSS_SWA_PATTERN}.get(arch, 0),
        rope_original_context=int(a("rope.scaling.original_context_length", a("context_length"))),
        rope_attn_factor=float(a("rope.scaling.attn_factor", 1.0)),
        no_rope_step=4 if arch == "smollm3" else 0,
        n_expert=int(a("expert_count", 0)),
        n_expert_used=int(a("expert_used_count", 0)),
        n_ff_exp=int(a("expert_feed_forward_length", 0)) or (
            a("feed_forward_length") // int(a("expert_used_count", 1))),
    )


def llama3_inv_freq(inv_freq: np.ndarray, factor: float, low_freq_factor: float,
                    high_freq_factor: float, original_context_length: float) -> np.ndarray:
    """Llama 3.1 RoPE scaling as HF transformers defines it (rope_type "llama3"): wavelengths
    shorter than original_ctx / high_freq_factor keep their frequency, those longer than
    original_ctx / low_freq_factor are divided by `factor`, and the band between is blended."""
    wavelen = 2.0 * math.pi / inv_freq
    scaled = np.where(wavelen > original_context_length / low_freq_factor, inv_freq / factor, inv_freq)
    smooth = (original_context_length / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    blended = (1.0 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= original_context_length / high_freq_factor) & \
             (wavelen <= original_context_length / low_freq_factor)
    return np.where(medium, blended, scaled)


def yarn_corr_dims(n_dims: int, n_ctx_orig: int, base: float,
                   beta_fast: float = YARN_BETA_FAST, beta_slow: float = YARN_BETA_SLOW) -> tuple[float, float]:
    """ggml_rope_yarn_corr_dims: the rotary pairs where YaRN's ramp starts and ends (floor and
    ceil of the pair index whose wavelength fits n_ctx_orig / beta), clamped to [0, n_dims - 1]."""
    corr = lambda beta: n_dims * math.log(n_ctx_orig / (beta * 2 * math.pi)) / (2 * math.log(base))  # noqa: E731
    return max(0.0, math.floor(corr(beta_fast))), min(n_dims - 1.0, math.ceil(corr(beta_slow)))


def yarn_inv_freq(inv_freq: np.ndarray, n_dims: int, base: float, factor: float,
                  original_context_length: int) -> tuple[np.ndarray, float]:
    """YaRN as ggml's rope_yarn computes it (ext_factor 1): pair i's frequency blends the
    interpolated (inv_freq / factor) and the original one by ramp r_i = 1 - clamp((i - low) /
    max(0.001, high - low), 0, 1); cos and sin are multiplied by 1 + 0.1 ln(factor) (llama.cpp's
    yarn_attn_factor cancels its own get_mscale, leaving ggml's). Returns (inv_freq, mscale)."""
    low, high = yarn_corr_dims(n_dims, original_context_length, base)
    i = np.arange(len(inv_freq), dtype=DTYPE)
    ramp = 1.0 - np.clip((i - low) / max(0.001, high - low), 0.0, 1.0)
    return inv_freq * ((1.0 - ramp) / factor + ramp), 1.0 + 0.1 * math.log(factor)


@dataclass
class Layer:
    attn_norm: np.ndarray    # (dim,)
    wq: np.ndarray           # (n_head*head_dim, dim)
    wk: np.ndarray           # (n_head_kv*head_dim, dim)
    wv: np.ndarray           # (n_head_kv*head_dim, dim)
    wo: np.ndarray           # (dim, n_head*head_dim)
    bq: np.ndarray | None    # (n_head*head_dim,) qwen2 only
    bk: np.ndarray | None    # (n_head_kv*head_dim,)
    bv: np.ndarray | None    # (n_head_kv*head_dim,)
    ffn_norm: np.ndarray     # (dim,)
    w_gate: np.ndarray       # (n_ff, dim)
    w_up: np.ndarray         # (n_ff, dim)
    w_down: np.ndarray       # (dim, n_ff)
    q_norm: np.ndarray | None = None         # (head_dim,) qwen3, gemma3
    k_norm: np.ndarray | None = None         # (head_dim,)
    post_attn_norm: np.ndarray | None = None  # (dim,) gemma3
    post_ffn_norm: np.ndarray | None = None   # (dim,)
    router: np.ndarray | None = None          # (n_expert, dim) qwen3moe
    gate_exps: list | None = None             # n_expert x (n_ff_exp, dim)
    up_exps: list | None = None               # n_expert x (n_ff_exp, dim)
    down_exps: list | None = None             # n_expert x (dim, n_ff_exp)
    bo: np.ndarray | None = None              # (dim,) gpt-oss: attn_output.bias
    sinks: np.ndarray | None = None           # (n_head,) gpt-oss: attn_sinks, one logit per query head
    router_b: np.ndarray | None = None        # (n_expert,) gpt-oss: ffn_gate_inp.bias
    gate_exps_b: np.ndarray | None = None     # (n_expert, n_ff_exp) gpt-oss
    up_exps_b: np.ndarray | None = None       # (n_expert, n_ff_exp)
    down_exps_b: np.ndarray | None = None     # (n_expert, dim)


class KvCache:
    """Keys (after RoPE) and values of every layer for one sequence, contiguous by position."""

    def __init__(self, cfg: Config, max_len: int):
        shape = (cfg.n_layer, max_len, cfg.n_head_kv, cfg.head_dim)
        self.k = np.zeros(shape, dtype=DTYPE)
        self.v = np.zeros(shape, dtype=DTYPE)
        self.length = 0  # positions filled so far


class LlamaRef:
    def __init__(self, path: str, n_ctx: int | None = None):
        """n_ctx: the context the model runs at (LongRoPE chooses its factors by it); the
        trained context when not given."""
        reader = gguf.GGUFReader(path)
        # GGUF stores a 2-D tensor with ne0 = input features; NumPy sees it as (out, in),
        # so a linear layer is x @ W.T.
        tensors = {t.name: t for t in reader.tensors}

        def weight(name: str, required: bool = True) -> np.ndarray | None:
            t = tensors.get(name)
            if t is None:
                if required:
                    raise ValueError(f"tensor '{name}' missing from {path}")
                return None
            return dequantize(t.data, t.tensor_type).astype(DTYPE)

        self.tok_embd = weight("token_embd.weight")                   # (n_vocab, dim)
        self.cfg = cfg = read_config(reader, n_vocab=self.tok_embd.shape[0])
        self.output_norm = weight("output_norm.weight")               # (dim,)
        out = weight("output.weight", required=False)
        self.output = self.tok_embd if out is None else out           # tied when absent
        self.tied_embeddings = out is None
        q_dim, kv_dim = cfg.n_head * cfg.head_dim, cfg.n_head_kv * cfg.head_dim

        def qkv(i: int, which: int) -> np.ndarray:
            """Q, K or V of layer i: its own tensor, or rows of phi3's fused attn_qkv (Q, K, V in order)."""
            fused = weight(f"blk.{i}.attn_qkv.weight", required=False)
            if fused is None:
                return weight(f"blk.{i}.attn_{'qkv'[which]}.weight")
            bounds = [0, q_dim, q_dim + kv_dim, q_dim + 2 * kv_dim]
            return fused[bounds[which]:bounds[which + 1]]

        def experts(name: str) -> list | None:
            """The experts of a (n_expert, rows, cols) tensor, one (rows, cols) matrix each."""
            t = tensors.get(name)
            if t is None:
                return None
            n_expert, rows, cols = int(t.shape[2]), int(t.shape[1]), int(t.shape[0])
            w = dequantize(t.data, t.tensor_type).astype(DTYPE).reshape(n_expert, rows, cols)
            return [w[e] for e in range(n_expert)]

        moe = cfg.n_expert > 0
        oss = cfg.arch == "gpt-oss"

        def gate_up(i: int, which: int) -> np.ndarray:
            """ffn_gate / ffn_up of layer i, or the halves of phi3's fused ffn_up (gate first)."""
            gate = weight(f"blk.{i}.ffn_gate.weight", required=False)
            up = weight(f"blk.{i}.ffn_up.weight")
            if gate is None and cfg.arch == "phi3":
                return up[which * cfg.n_ff:(which + 1) * cfg.n_ff]
            return (gate if gate is not None else weight(f"blk.{i}.ffn_gate.weight")) if which == 0 else up

        self.layers = [
            Layer(
                attn_norm=weight(f"blk.{i}.attn_norm.weight"),
                wq=qkv(i, 0),
                wk=qkv(i, 1),
                wv=qkv(i, 2),
                wo=weight(f"blk.{i}.attn_output.weight"),
                bq=weight(f"blk.{i}.attn_q.bias", required=False),
                bk=weight(f"blk.{i}.attn_k.bias", required=False),
                bv=weight(f"blk.{i}.attn_v.bias", required=False),
                # gpt-oss: post_attention_norm is the norm before the experts (it has no ffn_norm)
                ffn_norm=weight(f"blk.{i}.{'post_attention_norm' if oss else 'ffn_norm'}.weight"),
                w_gate=None if moe else gate_up(i, 0),
                w_up=None if moe else gate_up(i, 1),
                w_down=None if moe else weight(f"blk.{i}.ffn_down.weight"),
                q_norm=weight(f"blk.{i}.attn_q_norm.weight") if cfg.qk_norm else None,
                k_norm=weight(f"blk.{i}.attn_k_norm.weight") if cfg.qk_norm else None,
                post_attn_norm=weight(f"blk.{i}.post_attention_norm.weight") if cfg.post_norms else None,
                post_ffn_norm=weight(f"blk.{i}.post_ffw_norm.weight") if cfg.post_norms else None,
                router=weight(f"blk.{i}.ffn_gate_inp.weight") if moe else None,
                gate_exps=experts(f"blk.{i}.ffn_gate_exps.weight") if moe else None,
                up_exps=experts(f"blk.{i}.ffn_up_exps.weight") if moe else None,
                down_exps=experts(f"blk.{i}.ffn_down_exps.weight") if moe else None,
                bo=weight(f"blk.{i}.attn_output.bias") if oss else None,
                sinks=weight(f"blk.{i}.attn_sinks.weight") if oss else None,
                router_b=weight(f"blk.{i}.ffn_gate_inp.bias") if oss else None,
                gate_exps_b=weight(f"blk.{i}.ffn_gate_exps.bias") if oss else None,
                up_exps_b=weight(f"blk.{i}.ffn_up_exps.bias") if oss else None,
                down_exps_b=weight(f"blk.{i}.ffn_down_exps.bias") if oss else None,
            )
            for i in range(cfg.n_layer)
        ]
        # Llama 3 RoPE scaling reaches GGUF as a per-frequency divisor tensor (n_rot/2,),
        # computed by the converter from rope_scaling (factor, low/high_freq_factor).
        self.rope_freq_factors = weight("rope_freqs.weight", required=False)
        # LongRoPE's two sets, one chosen by the context the model runs at (n_ctx).
        long_factors = weight("rope_factors_long.weight", required=False)
        if long_factors is not None:
            n_ctx = cfg.n_ctx_train if n_ctx is None else n_ctx
            self.rope_freq_factors = long_factors if n_ctx > cfg.rope_original_context else weight("rope_factors_short.weight")

        inv_freq = cfg.rope_base ** (-np.arange(0, cfg.rope_dim, 2, dtype=DTYPE) / cfg.rope_dim)
        if self.rope_freq_factors is not None:
            inv_freq = inv_freq / self.rope_freq_factors
        elif cfg.rope_llama3 is not None:
            inv_freq = llama3_inv_freq(inv_freq, **cfg.rope_llama3)
        self.rope_yarn_mscale = 1.0   # YaRN's factor on cos and sin (with rope_attn_factor's)
        if cfg.rope_yarn is not None:
            self.rope_inv_freq, self.rope_yarn_mscale = yarn_inv_freq(inv_freq, cfg.rope_dim, cfg.rope_base, **cfg.rope_yarn)
        else:
            self.rope_inv_freq = inv_freq * cfg.rope_freq_scale          # (rope_dim/2,)
        if cfg.local_rope_own:
            # gemma3's local (sliding-window) layers: their own base, never scaled.
            self.rope_inv_freq_local = GEMMA3_LOCAL_ROPE_BASE ** (-np.arange(0, cfg.rope_dim, 2, dtype=DTYPE) / cfg.rope_dim)
        else:  # gpt-oss: the sliding-window layers rotate as the others (same base, YaRN)
            self.rope_inv_freq_local = self.rope_inv_freq

    def new_cache(self, max_len: int) -> KvCache:
        return KvCache(self.cfg, max_len)

    # --- building blocks -----------------------------------------------------------------

    def rms_norm(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.cfg.norm_eps) * w

    def rope(self, x: np.ndarray, positions: np.ndarray, inv_freq: np.ndarray | None = None,
             mscale: float = 1.0) -> np.ndarray:
        """x: (T, heads, head_dim); rotates the first rope_dim dims of every head."""
        half = self.cfg.rope_dim // 2
        inv_freq = self.rope_inv_freq if inv_freq is None else inv_freq
        theta = positions[:, None].astype(DTYPE) * inv_freq[None, :]  # (T, half)
        cos, sin = mscale * np.cos(theta)[:, None, :], mscale * np.sin(theta)[:, None, :]
        out = x.copy()
        if self.cfg.rope_neox:
            a, b = x[..., :half], x[..., half:2 * half]
            out[..., :half] = a * cos - b * sin
            out[..., half:2 * half] = a * sin + b * cos
        else:
            a, b = x[..., 0:2 * half:2], x[..., 1:2 * half:2]
            out[..., 0:2 * half:2] = a * cos - b * sin
            out[..., 1:2 * half:2] = a * sin + b * cos
        return out

    def attention(self, layer: Layer, il: int, h: np.ndarray, cache: KvCache) -> np.ndarray:
        cfg = self.cfg
        T, p0 = h.shape[0], cache.length
        positions = np.arange(p0, p0 + T)
        q, k, v = h @ layer.wq.T, h @ layer.wk.T, h @ layer.wv.T
        if layer.bq is not None:
            q, k, v = q + layer.bq, k + layer.bk, v + layer.bv
        q, k = q.reshape(T, cfg.n_head, cfg.head_dim), k.reshape(T, cfg.n_head_kv, cfg.head_dim)
        if layer.q_norm is not None:
            q, k = self.rms_norm(q, layer.q_norm), self.rms_norm(k, layer.k_norm)
        inv_freq = self.rope_inv_freq_local if cfg.is_local(il) else self.rope_inv_freq
        if cfg.is_local(il) and cfg.local_rope_own:
            mscale = 1.0
        else:
            mscale = cfg.rope_attn_factor * self.rope_yarn_mscale
        if not (cfg.no_rope_step and (il + 1) % cfg.no_rope_step == 0):
            q, k = self.rope(q, positions, inv_freq, mscale), self.rope(k, positions, inv_freq, mscale)
        cache.k[il, p0:p0 + T] = k
        cache.v[il, p0:p0 + T] = v.reshape(T, cfg.n_head_kv, cfg.head_dim)
        keys, values = cache.k[il, :p0 + T], cache.v[il, :p0 + T]       # (S, n_head_kv, head_dim)

        # GQA: query head j reads kv head j // group (consecutive query heads share one).
        group = cfg.n_head // cfg.n_head_kv
        qg = q.reshape(T, cfg.n_head_kv, group, cfg.head_dim)
        scale = cfg.attention_scale or 1.0 / math.sqrt(cfg.head_dim)
        scores = np.einsum("tkgd,skd->kgts", qg, keys) * scale
        masked = np.arange(p0 + T)[None, :] > positions[:, None]          # (T, S) future keys
        if cfg.is_local(il):  # and keys that slid out of the window: query p sees (p - window, p]
            masked |= np.arange(p0 + T)[None, :] <= positions[:, None] - cfg.sliding_window
        scores[..., masked] = -np.inf
        if layer.sinks is None:
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
        else:  # gpt-oss: head j's sink logit (not scaled) joins the denominator, not the values
            sink = layer.sinks.reshape(cfg.n_head_kv, group)[:, :, None, None]
            top = np.maximum(scores.max(axis=-1, keepdims=True), sink)
            probs = np.exp(scores - top)
            probs /= probs.sum(axis=-1, keepdims=True) + np.exp(sink - top)
        out = np.einsum("kgts,skd->tkgd", probs, values).reshape(T, cfg.n_head * cfg.head_dim)
        out = out @ layer.wo.T
        return out if layer.bo is None else out + layer.bo

    def ffn(self, layer: Layer, h: np.ndarray) -> np.ndarray:
        if layer.router is not None:
            return self.moe(layer, h)
        gate = h @ layer.w_gate.T
        if self.cfg.gelu:  # the tanh approximation, as ggml_gelu and Gemma's gelu_pytorch_tanh
            act = 0.5 * gate * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (gate + 0.044715 * gate ** 3)))
        else:
            act = gate / (1.0 + np.exp(-gate))
        return (act * (h @ layer.w_up.T)) @ layer.w_down.T

    def moe(self, layer: Layer, h: np.ndarray) -> np.ndarray:
        """Each token through its top experts, weighted by the router's renormalized probabilities
        (gpt-oss: by a softmax over the chosen experts' logits)."""
        cfg = self.cfg
        logits = h @ layer.router.T                                        # (T, n_expert)
        if layer.router_b is not None:
            logits = logits + layer.router_b
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        out = np.zeros_like(h)
        for t in range(h.shape[0]):
            # ties -> the lower expert id (llama.cpp's std::sort leaves their order unspecified)
            chosen = np.argsort(-(logits[t] if cfg.expert_gating == "softmax_weight" else probs[t]),
                                kind="stable")[:cfg.n_expert_used]
            if cfg.expert_gating == "softmax_weight":
                weights = np.exp(logits[t, chosen] - logits[t, chosen].max())
                weights /= weights.sum()
            else:
                weights = probs[t, chosen]
                if cfg.expert_weights_norm:
                    weights = weights / probs[t, chosen].sum()
            x = h[t:t + 1]
            for e, wt in zip(chosen, weights):
                gate, up = x @ layer.gate_exps[e].T, x @ layer.up_exps[e].T
                if layer.gate_exps_b is not None:
                    gate, up = gate + layer.gate_exps_b[e], up + layer.up_exps_b[e]
                if cfg.expert_act == "swiglu_oai":  # ggml_swiglu_oai: the gate capped, the up clamped
                    g = np.minimum(gate, cfg.swiglu_limit)
                    u = np.clip(up, -cfg.swiglu_limit, cfg.swiglu_limit)
                    act = g / (1.0 + np.exp(-cfg.swiglu_alpha * g)) * (u + 1.0)
                else:
                    act = gate / (1.0 + np.exp(-gate)) * up
                y = (act @ layer.down_exps[e].T)[0]
                if layer.down_exps_b is not None:
                    if cfg.down_bias_weighted:  # llama.cpp: ggml_add_id before the weights multiply
                        y = y + layer.down_exps_b[e]
                    else:
                        out[t] += layer.down_exps_b[e]
                out[t] += wt * y
        return out

    # --- the forward pass ----------------------------------------------------------------

    def forward(self, tokens: list[int], cache: KvCache, all_logits: bool = False) -> np.ndarray:
        """Runs `tokens` at the positions after the cache's content and appends them to it.
        Returns logits (T, n_vocab) when all_logits, else (n_vocab,) of the last token."""
        T = len(tokens)
        if cache.length + T > cache.k.shape[1]:
            raise ValueError("KV cache too small")
        x = self.tok_embd[np.asarray(tokens)] * self.cfg.embedding_scale  # (T, dim)
        for il, layer in enumerate(self.layers):
            a = self.attention(layer, il, self.rms_norm(x, layer.attn_norm), cache)
            x = x + (self.rms_norm(a, layer.post_attn_norm) if layer.post_attn_norm is not None else a) * self.cfg.residual_scale
            f = self.ffn(layer, self.rms_norm(x, layer.ffn_norm))
            x = x + (self.rms_norm(f, layer.post_ffn_norm) if layer.post_ffn_norm is not None else f) * self.cfg.residual_scale
        cache.length += T
        if not all_logits:
            x = x[-1:]
        logits = self.rms_norm(x, self.output_norm) @ self.output.T / self.cfg.logit_scale
        return logits if all_logits else logits[0]

    def greedy(self, prompt: list[int], n_new: int) -> tuple[np.ndarray, list[dict]]:
        """Prefill `prompt`, then pick the arg-max token n_new times (never stopping at EOS).
        Returns the prompt's logits (T, n_vocab) and one record per generated token."""
        cache = self.new_cache(len(prompt) + n_new)
        prompt_logits = self.forward(prompt, cache, all_logits=True)
        logits, steps = prompt_logits[-1], []
        for step in range(n_new):
            top2 = np.argsort(-logits, kind="stable")[:2]  # ties -> lowest id, as np.argmax
            token = int(top2[0])
            steps.append({"token": token, "logit": float(logits[token]),
                          "margin": float(logits[top2[0]] - logits[top2[1]])})
            if step + 1 < n_new:
                logits = self.forward([token], cache)
        return prompt_logits, steps
