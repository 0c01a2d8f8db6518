#!/usr/bin/env python3
"""Writes the corpus of broken GGUF files (*.bin) and manifest.tsv: file, then the text the
reader's error must contain. Each file breaks one rule of the format. Run again after changing
a case; the files are committed so the tests need no Python."""
import struct
from pathlib import Path

HERE = Path(__file__).parent


def s(text: str) -> bytes:
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def kv_u32(key, v):
    return s(key) + struct.pack("<II", 4, v)


def kv_str(key, v):
    return s(key) + struct.pack("<I", 8) + s(v)


def header(n_tensors, n_kv, version=3):
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)


def tensor_info(name, dims, ggml_type, offset):
    return s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", ggml_type, offset)


def pad(b, a=32):
    return b + b"\0" * ((-len(b)) % a)


def good_file():
    h = header(1, 2) + kv_str("general.architecture", "llama") + kv_u32("llama.block_count", 1)
    h += tensor_info("w", [32, 2], 0, 0)
    return pad(h) + b"\x00" * (32 * 2 * 4)


cases = {
    "empty.bin": (b"", "empty"),
    "bad_magic.bin": (b"GGUX" + good_file()[4:], "bad magic"),
    "version_1.bin": (header(0, 0, version=1), "version 1 is not supported"),
    "version_99.bin": (header(0, 0, version=99), "version 99 is not supported"),
    "truncated_header.bin": (b"GGUF" + struct.pack("<I", 3) + b"\x01\x00", "truncated file"),
    "huge_tensor_count.bin": (header(1 << 40, 0), "tensor count"),
    "huge_kv_count.bin": (header(0, 1 << 40), "metadata count"),
    "key_length_past_end.bin": (header(0, 1) + struct.pack("<Q", 1 << 20) + b"abc", "truncated file"),
    "unknown_value_type.bin": (header(0, 1) + s("k") + struct.pack("<I", 13) + b"\0" * 8, "unknown value type 13"),
    "bool_not_0_1.bin": (header(0, 1) + s("k") + struct.pack("<IB", 7, 2), "neither 0 nor 1"),
    "array_count_past_end.bin": (header(0, 1) + s("k") + struct.pack("<IIQ", 9, 4, 1 << 50), "array count"),
    "array_bad_element_type.bin": (header(0, 1) + s("k") + struct.pack("<IIQ", 9, 77, 1), "unknown array element type 77"),
    "string_array_truncated.bin": (header(0, 1) + s("k") + struct.pack("<IIQ", 9, 8, 3) + s("a") + struct.pack("<Q", 100) + b"x" * 8, "truncated file"),
    "string_array_count_too_big.bin": (header(0, 1) + s("k") + struct.pack("<IIQ", 9, 8, 3) + s("a"), "array count 3 exceeds"),
    "alignment_4.bin": (header(0, 1) + kv_u32("general.alignment", 4), "from 8 to 65536"),
    "duplicate_key.bin": (header(0, 2) + kv_u32("k", 1) + kv_u32("k", 2), "appears twice"),
    "empty_key.bin": (header(0, 1) + kv_u32("", 1), "empty key"),
    "bad_alignment.bin": (header(0, 1) + kv_u32("general.alignment", 24), "power of two"),
    "zero_dims.bin": (pad(header(1, 0) + tensor_info("w", [], 0, 0)), "0 dimensions"),
    "five_dims.bin": (pad(header(1, 0) + tensor_info("w", [1, 1, 1, 1, 1], 0, 0)), "5 dimensions"),
    "zero_dim_size.bin": (pad(header(1, 0) + tensor_info("w", [32, 0], 0, 0)), "has size 0"),
    "element_overflow.bin": (pad(header(1, 0) + tensor_info("w", [1 << 30, 1 << 30, 1 << 30], 0, 0)), "too many elements"),
    "unknown_tensor_type.bin": (pad(header(1, 0) + tensor_info("w", [32], 99, 0)), "unknown type 99"),
    "row_not_block_multiple.bin": (pad(header(1, 0) + tensor_info("w", [33], 2, 0)), "not a multiple"),
    "misaligned_offset.bin": (pad(header(1, 0) + tensor_info("w", [32], 0, 7)), "not aligned"),
    "tensor_past_end.bin": (pad(header(1, 0) + tensor_info("w", [32, 4], 0, 0)) + b"\0" * 64, "not within the file"),
    "huge_offset.bin": (pad(header(1, 0) + tensor_info("w", [32], 0, (1 << 63) - 32)) + b"\0" * 128, "not within the file"),
    "duplicate_tensor.bin": (pad(header(2, 0) + tensor_info("w", [8], 0, 0) + tensor_info("w", [8], 0, 32)) + b"\0" * 64, "appears twice"),
    "overlapping_tensors.bin": (pad(header(2, 0) + tensor_info("a", [16], 0, 0) + tensor_info("b", [8], 0, 32)) + b"\0" * 64, "overlap"),
    "truncated_tensor_info.bin": (header(1, 0) + s("w") + struct.pack("<I", 2) + struct.pack("<Q", 32), "truncated file"),
}

if __name__ == "__main__":
    lines = []
    for name, (data, expect) in sorted(cases.items()):
        (HERE / name).write_bytes(data)
        lines.append(f"{name}\t{expect}")
    (HERE / "good.bin").write_bytes(good_file())
    (HERE / "manifest.tsv").write_text("\n".join(lines) + "\n")
    print(f"wrote {len(cases)} broken files and good.bin")
