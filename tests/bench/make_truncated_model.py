"""Writes a GGUF model's first N layers as a model of its own: the same tokenizer, embedding,
output and weight types, the layers past N left out and block_count set to N. Its text is not
the model's, but its weights are real and in their real formats, which is what a check of a
backend against the CPU needs (tests/bench/gpu_proof.sh checks the default model this way on the
GPU machine, where the whole file is too big to travel).

Usage: make_truncated_model.py --layers N SRC DST
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import gguf


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("src")
    ap.add_argument("dst")
    args = ap.parse_args()
    reader = gguf.GGUFReader(args.src)
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    count_key = f"{arch}.block_count"
    if reader.fields[count_key].contents() < args.layers:
        raise SystemExit(f"{args.src} has fewer than {args.layers} layers")

    dst = Path(args.dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_suffix(".tmp")
    writer = gguf.GGUFWriter(str(tmp), arch, endianess=reader.endianess)
    for field in reader.fields.values():
        # The architecture and the GGUF.* fields are the writer's own.
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        value = args.layers if field.name == count_key else field.contents()
        writer.add_key_value(field.name, value, kind, sub_type=sub)

    def kept(name: str) -> bool:
        m = re.match(r"blk\.(\d+)\.", name)
        return m is None or int(m.group(1)) < args.layers

    tensors = [t for t in reader.tensors if kept(t.name)]
    for t in tensors:
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in tensors:
        writer.write_tensor_data(t.data, tensor_endianess=reader.endianess)
    writer.close()
    tmp.replace(dst)
    print(dst)


if __name__ == "__main__":
    main()
