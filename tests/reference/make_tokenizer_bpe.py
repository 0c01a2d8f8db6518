#!/usr/bin/env python3
"""Reference ids for the byte-level BPE tokenizer test (tests/engine/tokenizer/test_tokenizer_bpe.cpp).

Builds a Hugging Face `tokenizers` tokenizer from the GGUF's own vocabulary and merges (read
with the `gguf` package) and the pre-tokenizer of its tokenizer.ggml.pre type (Split by each
regex, then ByteLevel), and encodes every line of tests/data/tokenizer_corpus.txt and the
whole file, with and without special-token parsing. Writes DIR/tokenizer_bpe.json.

Usage: make_tokenizer_bpe.py --out DIR   (model from $PAGEDCHAT_TEST_MODEL)
"""
import argparse
import json
import os
import sys
from pathlib import Path

from gguf import GGUFReader
from tokenizers import AddedToken, Regex, Tokenizer, models, pre_tokenizers

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
UPPER, LOWER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
CONTRACTION = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
GPT4O = (rf"[^\r\n\p{{L}}\p{{N}}]?{UPPER}*{LOWER}+{CONTRACTION}"
         rf"|[^\r\n\p{{L}}\p{{N}}]?{UPPER}+{LOWER}*{CONTRACTION}"
         r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
TEKKEN = (rf"[^\r\n\p{{L}}\p{{N}}]?{UPPER}*{LOWER}+|[^\r\n\p{{L}}\p{{N}}]?{UPPER}+{LOWER}*"
          r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PORO = " ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+"
CJK = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"
DEEPSEEK_LETTERS = (
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293"
    "\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c"
    "\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5"
    "\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77"
    "\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59"
    "\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc"
    "\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107"
    "\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
    "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee"
    "\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e"
    "\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f"
    "\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2"
    "\U000118a0-\U000118df\U0001e900-\U0001e943]+")

# tokenizer.ggml.pre -> (regexes applied in turn, ignore_merges), as the models' tokenizer.json
# files write them. Every type engine/tokenizer/pretokenizer.cpp knows is here, so that the
# test can compare its word splits with those of the tokenizers library (Oniguruma regexes).
PRE_TYPES = {
    "default": ([r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"], False),
    "gpt-2": ([GPT2], False),
    "llama-bpe": ([LLAMA3], True),
    "dbrx": ([LLAMA3], False),
    "qwen2": ([QWEN2], False),
    "smollm": ([r"\p{N}", GPT2], False),
    "falcon": ([r"[\p{P}\$\+<=>\^~\|`]+", GPT2, "[0-9][0-9][0-9]"], False),
    "deepseek-llm": (["[\r\n]", DEEPSEEK_LETTERS,
                      "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
                      r"\s+$", CJK, r"\p{N}+"], False),
    "deepseek-coder": (["[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", CJK, r"\p{N}"], False),
    "deepseek-v3": ([r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
                     r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
                     r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"], False),
    "gpt-4o": ([GPT4O], False),
    "tekken": ([TEKKEN], True),
    "poro-chat": ([PORO], False),
    "viking": ([PORO, r"\p{N}"], False),
}

TOKEN_CONTROL, TOKEN_USER_DEFINED = 3, 4


def read_vocab(path):
    reader = GGUFReader(path)

    def field(key):
        return reader.fields.get(key)

    def strings(key):
        f = field(key)
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    def scalar(key):
        f = field(key)
        return None if f is None else f.contents()

    tokens = strings("tokenizer.ggml.tokens")
    f = field("tokenizer.ggml.token_type")
    types = [int(f.parts[i][0]) for i in f.data] if f else [1] * len(tokens)
    return {
        "model": scalar("tokenizer.ggml.model"),
        "pre": scalar("tokenizer.ggml.pre"),
        "tokens": tokens,
        "types": types,
        "merges": strings("tokenizer.ggml.merges"),
    }


def build_tokenizer(vocab, parse_special):
    if vocab["pre"] not in PRE_TYPES:
        sys.exit(f"make_tokenizer_bpe: no reference pre-tokenizer for '{vocab['pre']}'")
    regexes, ignore_merges = PRE_TYPES[vocab["pre"]]
    ids = {}
    for i, t in enumerate(vocab["tokens"]):
        ids.setdefault(t, i)
    merges = [tuple(m.split(" ", 1)) for m in vocab["merges"]]
    tok = Tokenizer(models.BPE(vocab=ids, merges=merges, ignore_merges=ignore_merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(r), behavior="isolated") for r in regexes]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    # User-defined tokens are always matched; control tokens only when parsing specials.
    added = []
    for text, kind in zip(vocab["tokens"], vocab["types"]):
        if kind == TOKEN_USER_DEFINED or (parse_special and kind == TOKEN_CONTROL):
            added.append(AddedToken(text, special=kind == TOKEN_CONTROL, normalized=False,
                                    lstrip=False, rstrip=False, single_word=False))
    if added:
        tok.add_tokens(added)
    return tok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    model = os.environ.get("PAGEDCHAT_TEST_MODEL")
    if not model or not Path(model).is_file():
        sys.exit("make_tokenizer_bpe: set PAGEDCHAT_TEST_MODEL to the SmolLM2 GGUF")
    data = Path(os.environ.get("PAGEDCHAT_TEST_DATA", Path(__file__).parent.parent / "data"))
    corpus = (data / "tokenizer_corpus.txt").read_bytes().decode("utf-8")

    vocab = read_vocab(model)
    if vocab["model"] != "gpt2":
        sys.exit(f"make_tokenizer_bpe: {model} is not a byte-level BPE model")
    plain = build_tokenizer(vocab, parse_special=False)
    special = build_tokenizer(vocab, parse_special=True)

    def case(text):
        return {"text": text,
                "plain": plain.encode(text, add_special_tokens=False).ids,
                "special": special.encode(text, add_special_tokens=False).ids}

    lines = corpus.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    # Word splits of the whole corpus by every pre-tokenizer type (no byte-level mapping).
    words = {}
    for pre, (regexes, _) in PRE_TYPES.items():
        split = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(r), behavior="isolated") for r in regexes])
        words[pre] = [w for w, _ in split.pre_tokenize_str(corpus)]
    out = {"model": model, "pre": vocab["pre"], "lines": [case(t) for t in lines],
           "whole": case(corpus), "words": words}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    dest = Path(args.out) / "tokenizer_bpe.json"
    dest.write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
    total = sum(len(c["plain"]) for c in out["lines"])
    print(f"make_tokenizer_bpe: {len(lines)} lines, {total} tokens -> {dest}")


if __name__ == "__main__":
    main()
