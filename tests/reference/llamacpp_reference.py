"""llama.cpp's outputs on the models the engine claims, stored as small reference files for
test_llamacpp_agreement. Run by hand inside the llama-cpp-python virtualenv that
tests/bench/llamacpp_baseline.sh builds under ~/.cache (llama.cpp itself never enters the repo):

    ~/.cache/pagedchat/bench/llamacpp-venv/bin/python tests/reference/llamacpp_reference.py

Writes tests/data/llamacpp/:
- tiny_models.json: for each tiny model of make_tiny_models.py (regenerated here, byte for byte
  what the ctest fixture writes; its sha256 is stored so a stale file is noticed), llama.cpp's
  logits at the last position of each token list and its arg-max at every position, computed on
  an F32 copy of the file (every tensor dequantized by the gguf package) with an F32 KV cache:
  llama.cpp then multiplies in float32 without rounding activations to 8 bits, the arithmetic of
  the engine's float-activation path, so the two can be held to float rounding.
- quant_formats.json: for the formats added with mixtures of experts (Q2_K, Q3_K, IQ4_NL, IQ4_XS,
  MXFP4), the sha256 of make_quant.py's random blocks of each and of what llama.cpp's own
  dequantize_row_<type> (libggml-base, called through ctypes) makes of them: test_quant
  dequantizes the same blocks and must produce those float bytes exactly.
- gemma3_greedy.json: on the real Gemma 3 270M file, twice: as it is with llama.cpp's defaults
  (f16 KV, its own quantized dot products), and as an F32 copy with an F32 KV cache (the
  arithmetic of the engine's float-activation path); several chat prompts in Gemma's format (one of them 1000 tokens
  long, past the local layers' window of 512) tokenized by llama.cpp (special
  tokens parsed), 32 greedy tokens after each with the top-1 minus top-2 logit margin, and the
  eight best logits at each prompt's last position.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import gguf
from gguf.quants import dequantize
import llama_cpp
from llama_cpp import Llama

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "data" / "llamacpp"
GEMMA = Path.home() / ".cache/pagedchat/models/gemma-3-270m-q4_k_m.gguf"
GEMMA_PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain what a KV cache is in one sentence.",
    "List three fruits.",
    "Translate 'good morning' into Spanish.",
    # Past the 512-token window of the local layers: the sliding window at work.
    "Summarize this story in one sentence. " + " ".join(
        f"On day {i} the baker rose early, lit the oven, kneaded the dough and sold bread to the village."
        for i in range(1, 41)),
]
N_GREEDY = 32


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def f32_copy(src: Path, dst: Path) -> None:
    """The same model with every tensor dequantized to F32 (metadata copied as it is)."""
    reader = gguf.GGUFReader(str(src))
    arch = reader.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(str(dst), arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(key, field.contents(), vtype, sub_type=sub)
    for t in reader.tensors:
        w.add_tensor(t.name, dequantize(t.data, t.tensor_type).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tiny_models(work: Path) -> dict:
    subprocess.run([sys.executable, str(HERE / "make_tiny_models.py"), "--out", str(work)], check=True,
                   stdout=subprocess.DEVNULL)
    folder = work / "tiny_models"
    index = json.loads((folder / "index.json").read_text())
    models, refused = [], []
    for m in index["models"]:
        path = folder / m["gguf"]
        copy = work / f"{m['name']}.f32.gguf"
        f32_copy(path, copy)
        try:
            llm = Llama(model_path=str(copy), n_ctx=64, n_batch=64, n_ubatch=64, logits_all=True, verbose=False,
                        type_k=0, type_v=0, n_threads=2)  # GGML_TYPE_F32 KV
        except ValueError:
            refused.append(m["name"])
            continue
        seqs = []
        for tokens in index["token_lists"]:
            llm.reset()
            llm.eval(tokens)
            logits = np.array(llm.scores[:len(tokens)], dtype=np.float64)
            seqs.append({"tokens": tokens, "argmax": [int(i) for i in logits.argmax(axis=1)],
                         "logits_last": [float(f"{x:.7g}") for x in logits[-1]]})
        models.append({"name": m["name"], "gguf": m["gguf"], "sha256": sha256(path), "sequences": seqs})
        print(f"{m['name']:28s} done", file=sys.stderr)
    return {"llama_cpp_python": llama_cpp.__version__, "models": models, "refused_by_llama_cpp": refused}


def quant_formats(work: Path) -> dict:
    import ctypes
    subprocess.run([sys.executable, str(HERE / "make_quant.py"), "--out", str(work)], check=True)
    lib = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so"))
    sys.path.insert(0, str(HERE))
    from make_quant import NEW_TYPES  # noqa: E402
    out = {}
    for qtype in NEW_TYPES:
        raw = (work / "quant" / f"{qtype.name}.raw").read_bytes()
        block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
        n = len(raw) // type_size * block_size
        values = np.zeros(n, dtype=np.float32)
        fn = getattr(lib, "dequantize_row_" + qtype.name.lower().replace("_k", "_K"))
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64]
        fn(raw, values.ctypes.data, n)
        ours = np.asarray(dequantize(np.frombuffer(raw, dtype=np.uint8).reshape(-1, type_size), qtype),
                          dtype=np.float32).reshape(-1)
        assert np.array_equal(values.view(np.uint32), ours.view(np.uint32)), f"gguf and llama.cpp differ on {qtype.name}"
        out[qtype.name] = {"raw_sha256": hashlib.sha256(raw).hexdigest(),
                           "llama_cpp_f32_sha256": hashlib.sha256(values.astype("<f4").tobytes()).hexdigest(),
                           "elements": n}
        print(f"{qtype.name}: {n} elements, llama.cpp = gguf", file=sys.stderr)
    return {"llama_cpp_python": llama_cpp.__version__, "formats": out}


def gemma_greedy(path: Path, f32: bool) -> list[dict]:
    """Greedy tokens after each prompt; f32: the F32 copy with an F32 KV cache (float arithmetic
    throughout), else the file as it is with llama.cpp's defaults."""
    kv = dict(type_k=0, type_v=0) if f32 else {}
    llm = Llama(model_path=str(path), n_ctx=2048, n_batch=512, verbose=False, n_threads=2, **kv)
    prompts = []
    for question in GEMMA_PROMPTS:
        text = f"<bos><start_of_turn>user\n{question}<end_of_turn>\n<start_of_turn>model\n"
        tokens = llm.tokenize(text.encode(), add_bos=False, special=True)
        llm.reset()
        llm.eval(tokens)
        greedy, margins, top = [], [], []
        for step in range(N_GREEDY):
            ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)  # scores[] holds them only with logits_all
            logits = np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float64)
            best = np.argsort(-logits, kind="stable")[:8]
            greedy.append(int(best[0]))
            margins.append(float(f"{logits[best[0]] - logits[best[1]]:.5g}"))
            if step == 0:  # the prompt's last position: its eight best logits
                top = [[int(i), float(f"{logits[i]:.7g}")] for i in best]
            llm.eval([int(best[0])])
        prompts.append({"question": question, "tokens": tokens, "greedy": greedy, "margins": margins,
                        "top_logits_first": top, "text": llm.detokenize(greedy).decode("utf-8", "replace")})
        print(f"gemma3{' f32' if f32 else ''}: {question[:40]!r} ({len(tokens)} tokens) -> {prompts[-1]['text']!r}",
              file=sys.stderr)
    return prompts


def gemma(work: Path) -> dict:
    copy = work / "gemma3.f32.gguf"
    f32_copy(GEMMA, copy)
    return {"llama_cpp_python": llama_cpp.__version__, "model": GEMMA.name, "sha256": sha256(GEMMA),
            "default": {"kv_type": "f16", "prompts": gemma_greedy(GEMMA, False)},
            "f32": {"kv_type": "f32", "weights": "every tensor dequantized to F32", "prompts": gemma_greedy(copy, True)}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory() as work:
        (args.out / "tiny_models.json").write_text(json.dumps(tiny_models(Path(work))) + "\n")
        (args.out / "quant_formats.json").write_text(json.dumps(quant_formats(Path(work)), indent=1) + "\n")
        (args.out / "gemma3_greedy.json").write_text(json.dumps(gemma(Path(work)), indent=1) + "\n")


if __name__ == "__main__":
    main()
