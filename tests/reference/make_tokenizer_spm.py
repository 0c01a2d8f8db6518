#!/usr/bin/env python3
"""Reference ids for the sentencepiece tokenizer test (tests/engine/tokenizer/test_tokenizer_spm.cpp).

Builds a sentencepiece ModelProto with the library's own sentencepiece_model_pb2 from the
GGUF's vocabulary (read with the `gguf` package): an independent build of the proto that
engine/tokenizer/spm_model_proto.cpp writes by hand. Special tokens are split out first,
leftmost-longest (control tokens only when parsing specials, user-defined ones always), and
the text between is encoded by the sentencepiece Python library. Encodes every line of
tests/data/tokenizer_corpus.txt and the whole file. Writes DIR/tokenizer_spm.json.

Usage: make_tokenizer_spm.py --out DIR   (model from $PAGEDCHAT_TEST_GEMMA)
"""
import argparse
import json
import os
import sys
from pathlib import Path

import sentencepiece as spm
from gguf import GGUFReader
from sentencepiece import sentencepiece_model_pb2 as pb

UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 2, 3, 4, 5, 6


def read_vocab(path):
    reader = GGUFReader(path)

    def scalar(key, default=None):
        f = reader.fields.get(key)
        return default if f is None else f.contents()

    f = reader.fields["tokenizer.ggml.tokens"]
    tokens = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
    f = reader.fields.get("tokenizer.ggml.scores")
    scores = [float(f.parts[i][0]) for i in f.data] if f else [0.0] * len(tokens)
    f = reader.fields.get("tokenizer.ggml.token_type")
    types = [int(f.parts[i][0]) for i in f.data] if f else [1] * len(tokens)
    return {
        "model": scalar("tokenizer.ggml.model"),
        "tokens": tokens, "scores": scores, "types": types,
        "unk": scalar("tokenizer.ggml.unknown_token_id"),
        "bos": scalar("tokenizer.ggml.bos_token_id", -1),
        "eos": scalar("tokenizer.ggml.eos_token_id", -1),
        "pad": scalar("tokenizer.ggml.padding_token_id", -1),
        "add_space_prefix": scalar("tokenizer.ggml.add_space_prefix", True),
    }


def build_processor(v):
    m = pb.ModelProto()
    seen = set()
    for i, (text, score, kind) in enumerate(zip(v["tokens"], v["scores"], v["types"])):
        kind = kind if 1 <= kind <= 6 else 1
        if i == v["unk"]:
            kind = UNKNOWN          # sentencepiece wants exactly one unknown piece
        elif kind == UNKNOWN:
            kind = CONTROL
        if not text or text in seen:  # sentencepiece refuses empty and repeated pieces
            text, kind = f"<pagedchat_placeholder_{i}>", UNUSED
        seen.add(text)
        p = m.pieces.add()
        p.piece, p.score, p.type = text, score, kind
    t = m.trainer_spec
    t.model_type = pb.TrainerSpec.BPE
    t.vocab_size = len(v["tokens"])
    t.byte_fallback = sum(1 for k in v["types"] if k == BYTE) == 256
    t.unk_id, t.bos_id, t.eos_id, t.pad_id = v["unk"], v["bos"], v["eos"], v["pad"]
    n = m.normalizer_spec
    n.name = "identity"
    n.add_dummy_prefix = bool(v["add_space_prefix"])
    n.remove_extra_whitespaces = False
    n.escape_whitespaces = True
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(m.SerializeToString())
    return sp


class Specials:
    """Leftmost-longest matching of special-token texts."""

    def __init__(self, v):
        self.by_first = {}
        for i, (text, kind) in enumerate(zip(v["tokens"], v["types"])):
            if text and kind in (CONTROL, USER_DEFINED):
                self.by_first.setdefault(text[0], {}).setdefault(text, (i, kind == USER_DEFINED))
        for k in self.by_first:
            self.by_first[k] = sorted(self.by_first[k].items(), key=lambda e: -len(e[0]))

    def split(self, text, parse_special):
        out, plain, pos = [], 0, 0
        while pos < len(text):
            hit = None
            for tok, (tid, always) in self.by_first.get(text[pos], ()):
                if (always or parse_special) and text.startswith(tok, pos):
                    hit = (tok, tid)
                    break
            if hit is None:
                pos += 1
                continue
            if pos > plain:
                out.append(text[plain:pos])
            out.append(hit[1])
            pos += len(hit[0])
            plain = pos
        if plain < len(text):
            out.append(text[plain:])
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    model = os.environ.get("PAGEDCHAT_TEST_GEMMA")
    if not model or not Path(model).is_file():
        sys.exit("make_tokenizer_spm: set PAGEDCHAT_TEST_GEMMA to the Gemma 3 GGUF")
    data = Path(os.environ.get("PAGEDCHAT_TEST_DATA", Path(__file__).parent.parent / "data"))
    corpus = (data / "tokenizer_corpus.txt").read_bytes().decode("utf-8")

    v = read_vocab(model)
    if v["model"] != "llama":
        sys.exit(f"make_tokenizer_spm: {model} is not a sentencepiece model")
    sp = build_processor(v)
    specials = Specials(v)

    def encode(text, parse_special):
        ids = []
        for part in specials.split(text, parse_special):
            ids.extend([part] if isinstance(part, int) else sp.encode(part))
        return ids

    def case(text):
        return {"text": text, "plain": encode(text, False), "special": encode(text, True)}

    lines = corpus.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = {"model": model, "lines": [case(t) for t in lines], "whole": case(corpus)}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    dest = Path(args.out) / "tokenizer_spm.json"
    dest.write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
    total = sum(len(c["plain"]) for c in out["lines"])
    print(f"make_tokenizer_spm: {len(lines)} lines, {total} tokens -> {dest}")


if __name__ == "__main__":
    main()
