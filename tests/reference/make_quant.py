"""Reference data for tests/engine/quant/test_quant.cpp, computed by the `gguf` package (and numpy).

Writes into OUT/quant/:
  <TYPE>.raw   random rows of each weight type: random bytes, with every fp16 scale field set
               to a random finite half (zeros, subnormals and both signs included), so no
               NaN/Inf can appear after dequantization;
  <TYPE>.f32   what gguf.quants.dequantize makes of them (little-endian float32);
  fp16_in.f32 / fp16_out.u16   float32 -> fp16 by numpy (round to nearest even);
  bf16_in.f32 / bf16_out.u16   float32 -> bf16 by gguf.quants.quantize.
F16 and BF16 cover every finite value once; F32 is random finite bit patterns.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import gguf
from gguf.quants import dequantize, quantize

Q = gguf.GGMLQuantizationType
SEED = 20240611

# Byte offsets of the fp16 fields inside one block, from ggml-common.h's block layouts.
HALF_FIELDS = {
    Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0],
    Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208],
    Q.Q2_K: [80, 82], Q.Q3_K: [108], Q.IQ4_NL: [0], Q.IQ4_XS: [0], Q.MXFP4: [],
}
BLOCKS = {Q.Q4_K: 512, Q.Q5_K: 512, Q.Q6_K: 512, Q.Q2_K: 512, Q.Q3_K: 512, Q.IQ4_XS: 512}  # others: 4096 blocks
# Types whose blocks llama.cpp's own dequantize_row_* turns into the same floats
# (tests/data/llamacpp/quant_formats.json, from llamacpp_reference.py).
NEW_TYPES = [Q.Q2_K, Q.Q3_K, Q.IQ4_NL, Q.IQ4_XS, Q.MXFP4]


def random_finite_halves(rng: np.random.Generator, count: int) -> np.ndarray:
    h = rng.integers(0, 1 << 16, size=count, dtype=np.uint32).astype(np.uint16)
    bad = (h & 0x7C00) == 0x7C00
    h[bad] &= 0xBFFF  # clear the top exponent bit: finite
    return h


def quant_rows(rng: np.random.Generator, qtype: Q) -> np.ndarray:
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = BLOCKS.get(qtype, 4096)
    blocks = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint16).astype(np.uint8)
    for offset in HALF_FIELDS[qtype]:
        halves = random_finite_halves(rng, n_blocks)
        blocks[:, offset:offset + 2] = halves.view(np.uint8).reshape(n_blocks, 2)
    if qtype == Q.MXFP4:
        # Every E8M0 scale whose values stay finite (12 * 2^(e - 128) < 2^128: e <= 252), the
        # subnormal 0 and 1 included.
        blocks[:, 0] = np.arange(n_blocks) % 253
    # Rows of 8 blocks: the C++ side only needs the blocks in order.
    return blocks.reshape(n_blocks // 8, 8 * type_size)


def float_rows(rng: np.random.Generator, qtype: Q) -> np.ndarray:
    if qtype == Q.F16:
        h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
        return h[(h & 0x7C00) != 0x7C00].view(np.uint8).reshape(1, -1)
    if qtype == Q.BF16:
        h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
        return h[(h & 0x7F80) != 0x7F80].view(np.uint8).reshape(1, -1)
    bits = rng.integers(0, 1 << 32, size=65536, dtype=np.uint64).astype(np.uint32)
    bits = bits[(bits & 0x7F800000) != 0x7F800000]
    return bits.view(np.uint8).reshape(1, -1)


def conversion_inputs(rng: np.random.Generator) -> np.ndarray:
    """float32 values around and beyond the half range, plus hand-picked edges."""
    sign = rng.integers(0, 2, size=200000, dtype=np.uint32) << 31
    exponent = rng.integers(95, 150, size=200000, dtype=np.uint32) << 23  # 2^-32 .. 2^22
    mantissa = rng.integers(0, 1 << 23, size=200000, dtype=np.uint32)
    # Force many exact ties (the 13 or more dropped bits = 100...0).
    mantissa[::4] = (mantissa[::4] & ~np.uint32(0x1FFF)) | np.uint32(0x1000)
    random = (sign | exponent | mantissa).view(np.float32)
    edges = np.array([0.0, -0.0, 1.0, 65504.0, 65519.99, 65520.0, 1e9, np.inf, -np.inf,
                      2.0**-24, 2.0**-25, 2.0**-25 * 1.0000001, 2.0**-14, 2.0**-14 * 0.99999,
                      3.0 * 2.0**-26, 1.5 * 2.0**-24, 2.5 * 2.0**-24, 3.4e38, 1e-45],
                     dtype=np.float32)
    return np.concatenate([edges, -edges, random]).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    out = parser.parse_args().out / "quant"
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)

    for qtype in [Q.F32, Q.F16, Q.BF16, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0,
                  Q.Q4_K, Q.Q5_K, Q.Q6_K] + NEW_TYPES:
        raw = float_rows(rng, qtype) if qtype in (Q.F32, Q.F16, Q.BF16) else quant_rows(rng, qtype)
        values = np.asarray(dequantize(raw, qtype), dtype=np.float32)
        assert np.isfinite(values).all(), qtype.name
        (out / f"{qtype.name}.raw").write_bytes(raw.tobytes())
        (out / f"{qtype.name}.f32").write_bytes(values.astype("<f4").tobytes())

    inputs = conversion_inputs(rng)
    (out / "fp16_in.f32").write_bytes(inputs.astype("<f4").tobytes())
    with np.errstate(over="ignore"):  # values past 65504 become inf, as intended
        halves = inputs.astype(np.float16)
    (out / "fp16_out.u16").write_bytes(halves.view("<u2").tobytes())
    bf16 = np.asarray(quantize(inputs, Q.BF16)).view(np.uint16)
    (out / "bf16_in.f32").write_bytes(inputs.astype("<f4").tobytes())
    (out / "bf16_out.u16").write_bytes(bf16.astype("<u2").tobytes())


if __name__ == "__main__":
    main()
