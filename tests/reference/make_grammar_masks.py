#!/usr/bin/env python3
"""Reference token masks of grammar-constrained decoding, computed by xgrammar, for the C++ grammar masker.

For each GBNF grammar in tests/data/grammars/*.gbnf (llama.cpp's notation, start rule `root`) and
the vocabulary of the SmolLM2 GGUF ($PAGEDCHAT_TEST_MODEL), plays WALKS seeded random walks of at
most MAX_STEPS tokens and records, at every step, which token ids are allowed next:

- a token is allowed when its bytes keep the text generated so far a prefix of the UTF-8 encoding
  of some sentence of the grammar (plain context-free semantics over code points, no lexer); a
  token may be part of a character (byte-level BPE), the text must stay valid UTF-8;
- an end-of-generation token (the GGUF's eos id and the control tokens <|im_end|>, <|endoftext|>,
  <|eot_id|>, <end_of_turn>, <|end|>) is allowed exactly when the text is a whole sentence;
- other control tokens, and tokens whose bytes are empty, never are.

Writes DIR/grammar_masks.json, compact:

    {"vocab_size": N, "grammars": [{"file": "json.gbnf", "walks": [{"seed": S, "steps": [
        {"allowed": [[lo, hi], ...], "token": T}, ...]}]}]}

`allowed` is the sorted allowed ids as inclusive ranges; `token` is the token the walk takes next
(absent on a walk's last step). The walk draws with random.Random(seed): on half the steps one of
the allowed tokens with the fewest bytes (so walks close what they open), else any allowed token,
never an end-of-generation one; it stops after MAX_STEPS steps, when only end-of-generation tokens
are allowed, or with probability STOP_P at a step where they are.

Why this is an independent oracle: the grammar is read by xgrammar's own EBNF parser
(Grammar.from_ebnf) and the masks come from xgrammar's pushdown matcher (an Earley parser over
bytes, GrammarMatcher.fill_next_token_bitmask) -- no code of the engine. This script only
supplies the token bytes (GPT-2's byte-to-unicode table, undone here from the GGUF's token
strings) and the end-of-generation ids, and applies two rules on top of xgrammar's mask:
control tokens and empty tokens are taken out (the vocabulary gives them to xgrammar as empty
strings; end-of-generation ones as its stop tokens), and so are tokens that would make the text
invalid UTF-8 by encoding a surrogate (U+D800..U+DFFF: xgrammar's byte matcher lets ED A0..ED BF
through; every other malformed sequence -- stray continuation bytes, C0/C1/F5..FF, overlong
forms, code points past U+10FFFF -- it rejects itself). `--verify` replays every walk in a fresh
matcher and checks the recorded masks again.

xgrammar is not among the venv's usual packages (installer/install-deps.sh); its wheel declares
torch, transformers and triton as dependencies but the grammar matcher never uses them, so install
it without them:

    ~/.cache/pagedchat/venv/bin/pip install --no-deps xgrammar==0.2.9 apache-tvm-ffi==0.1.15.post2

(numpy, pydantic and typing_extensions, which it also imports, are in the venv already.) It imports
torch at module level for its tensor helpers; when torch is absent this script puts inert stand-ins
for torch/transformers/triton in sys.modules while xgrammar is imported, then removes them. Without
xgrammar it says so and exits 77 (ctest's SKIP_RETURN_CODE, as make_vllm_kv_events.py does).

Usage: make_grammar_masks.py --out DIR [--verify]   (model from $PAGEDCHAT_TEST_MODEL,
grammars from $PAGEDCHAT_TEST_DATA/grammars, default tests/data/grammars)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import sys
import time
import types
from pathlib import Path

import numpy as np
from gguf import GGUFReader

SKIPPED = 77
SEEDS = (11, 22, 33)       # one walk per seed, for every grammar (these give json.gbnf walks of 19, 30, 30 steps)
MAX_STEPS = 30
STOP_P = 0.15              # chance a walk stops at a step where end-of-generation is allowed
SHORTEST_P = 0.5           # chance a step takes one of the shortest allowed tokens
EOG_TEXTS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<end_of_turn>", "<|end|>")

TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = 1, 2, 3, 4, 5, 6


# ------------------------------------------------------------------ xgrammar, without torch

def import_xgrammar():
    """xgrammar, or None when it is not installed. Its matcher is C++ and takes numpy arrays;
    torch (and transformers, triton) are imported by helper modules only, so where they are
    missing they get permissive stand-ins for the length of the import."""
    if importlib.util.find_spec("xgrammar") is None or importlib.util.find_spec("tvm_ffi") is None:
        return None
    import tvm_ffi  # noqa: F401 -- first, so that it sees the real (absent) torch

    class Inert:
        def __init__(self, name):
            self._name = name

        def __getattr__(self, attr):
            return Inert(f"{self._name}.{attr}")

        def __call__(self, *args, **kwargs):
            if len(args) == 1 and callable(args[0]) and not kwargs:
                return args[0]  # used as a decorator (torch.compile)
            return Inert(f"{self._name}()")

        def __mro_entries__(self, bases):
            return (object,)  # used as a base class (transformers.LogitsProcessor)

    class InertModule(types.ModuleType):
        def __getattr__(self, attr):
            if attr.startswith("__"):
                raise AttributeError(attr)
            return Inert(f"{self.__name__}.{attr}")

    missing = {top for top in ("torch", "transformers", "triton")
               if top not in sys.modules and importlib.util.find_spec(top) is None}
    stubbed = []
    for name in ("torch", "torch.nn", "torch.nn.functional", "torch.utils", "torch.utils.cpp_extension",
                 "transformers", "triton", "triton.language"):
        if name.split(".")[0] not in missing:
            continue
        module = InertModule(name)
        module.__path__ = []
        sys.modules[name] = module
        stubbed.append(name)
    try:
        import xgrammar
    finally:
        for name in stubbed:
            del sys.modules[name]
    return xgrammar


# ------------------------------------------------------------------ the vocabulary

def gpt2_unicode_to_byte() -> dict[str, int]:
    """The inverse of GPT-2's bytes_to_unicode(): printable bytes stand for themselves, the
    others for 256 + n in the order they come."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    table, n = {}, 0
    for b in range(256):
        if b in printable:
            table[chr(b)] = b
        else:
            table[chr(256 + n)] = b
            n += 1
    return table


def read_vocab(path: str):
    """(token bytes, end-of-generation ids, control ids) of a byte-level BPE GGUF."""
    reader = GGUFReader(path)
    fields = reader.fields
    model = fields["tokenizer.ggml.model"].contents()
    if model != "gpt2":
        sys.exit(f"make_grammar_masks: {path} is not a byte-level BPE model ({model})")
    texts = fields["tokenizer.ggml.tokens"].contents()
    kinds = fields["tokenizer.ggml.token_type"].contents()
    eos = fields["tokenizer.ggml.eos_token_id"].contents() if "tokenizer.ggml.eos_token_id" in fields else None
    to_byte = gpt2_unicode_to_byte()
    token_bytes, eog, control = [], set(), set()
    for i, (text, kind) in enumerate(zip(texts, kinds)):
        if kind == TOKEN_CONTROL:
            control.add(i)
            if text in EOG_TEXTS:
                eog.add(i)
            token_bytes.append(b"")
        elif kind == TOKEN_USER_DEFINED:
            token_bytes.append(text.encode("utf-8"))  # written as is, not byte-mapped (llama.cpp)
        elif kind == TOKEN_BYTE:
            token_bytes.append(bytes([int(text[3:-1], 16)]))  # "<0xAB>"
        elif kind in (TOKEN_UNKNOWN, TOKEN_UNUSED):
            token_bytes.append(b"")
        else:
            token_bytes.append(bytes(to_byte[ch] for ch in text))
    if eos is not None:
        eog.add(int(eos))
        token_bytes[int(eos)] = b""
    return token_bytes, sorted(eog), control


def has_surrogate(data: bytes) -> bool:
    """Whether the bytes hold ED A0..ED BF, the start of a UTF-8-encoded surrogate (never UTF-8)."""
    at = data.find(b"\xed")
    while at != -1:
        if at + 1 < len(data) and 0xA0 <= data[at + 1] <= 0xBF:
            return True
        at = data.find(b"\xed", at + 1)
    return False


# ------------------------------------------------------------------ the walks

class Masker:
    """One grammar's allowed-token sets, xgrammar's mask with the rules of the module docstring."""

    def __init__(self, xgr, compiled, token_bytes, eog, never):
        self.xgr, self.compiled = xgr, compiled
        self.token_bytes = token_bytes
        self.vocab_size = len(token_bytes)
        self.eog = np.zeros(self.vocab_size, dtype=bool)
        self.eog[eog] = True
        self.never = np.zeros(self.vocab_size, dtype=bool)  # control but not end-of-generation, or empty
        self.never[sorted(never)] = True
        # Tokens that hold ED, or are one byte ED-free but continuation bytes (A0..BF may follow a
        # trailing ED of the text): the only ones the surrogate rule has to look at.
        self.ed_tokens = np.array([i for i, b in enumerate(token_bytes) if b"\xed" in b], dtype=np.int64)
        self.cont_first = np.array([i for i, b in enumerate(token_bytes) if b and 0xA0 <= b[0] <= 0xBF],
                                   dtype=np.int64)
        self.bitmask = np.zeros((1, (self.vocab_size + 31) // 32), dtype=np.int32)

    def matcher(self):
        return self.xgr.GrammarMatcher(self.compiled, terminate_without_stop_token=False)

    def allowed(self, matcher, text: bytes) -> np.ndarray:
        """Boolean mask of the tokens allowed after `text` (the bytes `matcher` has accepted)."""
        self.bitmask.fill(0)
        matcher.fill_next_token_bitmask(self.bitmask)
        bits = np.unpackbits(self.bitmask.view(np.uint8), bitorder="little")[: self.vocab_size].astype(bool)
        bits &= ~self.never
        # A surrogate begun in the text's last byte or inside a token.
        candidates = self.ed_tokens
        if text.endswith(b"\xed"):
            candidates = np.concatenate([candidates, self.cont_first])
        tail = text[-1:]
        for i in candidates:
            if bits[i] and has_surrogate(tail + self.token_bytes[i]):
                bits[i] = False
        return bits


def ranges(ids) -> list[list[int]]:
    out: list[list[int]] = []
    for i in ids:
        i = int(i)
        if out and out[-1][1] + 1 == i:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def walk(masker: Masker, seed: int) -> dict:
    rng = random.Random(seed)
    matcher = masker.matcher()
    text = b""
    steps = []
    for index in range(MAX_STEPS):
        allowed = masker.allowed(matcher, text)
        step = {"allowed": ranges(np.flatnonzero(allowed))}
        steps.append(step)
        choices = np.flatnonzero(allowed & ~masker.eog)
        if index + 1 == MAX_STEPS or len(choices) == 0:
            break
        if allowed[masker.eog].any() and rng.random() < STOP_P:
            break
        if rng.random() < SHORTEST_P:
            lengths = np.array([len(masker.token_bytes[i]) for i in choices])
            choices = choices[lengths == lengths.min()]
        token = int(rng.choice(list(choices)))
        if not matcher.accept_token(token):
            raise RuntimeError(f"xgrammar refused token {token} it had allowed (seed {seed}, step {index})")
        text += masker.token_bytes[token]
        step["token"] = token
    return {"seed": seed, "steps": steps}


def verify(masker: Masker, walk_out: dict) -> int:
    """Replays a walk in a fresh matcher: every taken token is allowed and accepted, every step's
    mask is the same again, the end-of-generation ids are allowed exactly where the matcher could
    end. Returns the number of steps checked."""
    matcher = masker.matcher()
    text = b""
    for n, step in enumerate(walk_out["steps"]):
        allowed = masker.allowed(matcher, text)
        assert ranges(np.flatnonzero(allowed)) == step["allowed"], f"step {n}: mask differs on replay"
        ends = bool(allowed[masker.eog].any())
        assert ends == bool(allowed[masker.eog].all()), f"step {n}: only some end-of-generation ids allowed"
        probe = matcher.fork()
        assert ends == probe.accept_token(int(np.flatnonzero(masker.eog)[0])), f"step {n}: eog disagrees"
        if "token" in step:
            token = step["token"]
            assert allowed[token] and not masker.eog[token], f"step {n}: took a token not allowed"
            assert matcher.accept_token(token), f"step {n}: token {token} refused"
            text += masker.token_bytes[token]
        else:
            last_stop = not (allowed & ~masker.eog).any() or n + 1 == MAX_STEPS or ends
            assert last_stop, f"step {n}: the walk stopped where it could not"
    return len(walk_out["steps"])


# ------------------------------------------------------------------ main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--verify", action="store_true", help="replay every walk and check it again")
    args = ap.parse_args()

    model = os.environ.get("PAGEDCHAT_TEST_MODEL")
    if not model or not Path(model).is_file():
        sys.exit("make_grammar_masks: set PAGEDCHAT_TEST_MODEL to the SmolLM2 GGUF")
    data = Path(os.environ.get("PAGEDCHAT_TEST_DATA", Path(__file__).resolve().parent.parent / "data"))
    grammar_files = sorted((data / "grammars").glob("*.gbnf"))
    if not grammar_files:
        sys.exit(f"make_grammar_masks: no *.gbnf in {data / 'grammars'}")

    xgr = import_xgrammar()
    if xgr is None:
        print("make_grammar_masks: xgrammar is not installed; install it with\n"
              "  pip install --no-deps xgrammar==0.2.9 apache-tvm-ffi==0.1.15.post2\n"
              "(skipped)", file=sys.stderr)
        return SKIPPED

    started = time.monotonic()
    token_bytes, eog, control = read_vocab(model)
    never = {i for i in control if i not in eog} | {i for i, b in enumerate(token_bytes) if not b and i not in eog}
    info = xgr.TokenizerInfo(token_bytes, vocab_type=xgr.VocabType.RAW, vocab_size=len(token_bytes),
                             stop_token_ids=eog)
    compiler = xgr.GrammarCompiler(info, max_threads=2, cache_enabled=False)

    out = {"vocab_size": len(token_bytes), "grammars": []}
    total_steps = 0
    for path in grammar_files:
        grammar = xgr.Grammar.from_ebnf(path.read_text(encoding="utf-8"), root_rule_name="root")
        masker = Masker(xgr, compiler.compile_grammar(grammar), token_bytes, eog, never)
        walks = [walk(masker, seed) for seed in SEEDS]
        if args.verify:
            for w in walks:
                verify(masker, w)
        steps = sum(len(w["steps"]) for w in walks)
        total_steps += steps
        print(f"make_grammar_masks: {path.name}: {steps} steps "
              f"({', '.join(str(len(w['steps'])) for w in walks)})")
        out["grammars"].append({"file": path.name, "walks": walks})

    Path(args.out).mkdir(parents=True, exist_ok=True)
    dest = Path(args.out) / "grammar_masks.json"
    dest.write_text(json.dumps(out, separators=(",", ":")), encoding="utf-8")
    print(f"make_grammar_masks: {len(grammar_files)} grammars, {total_steps} steps, eog ids {eog}"
          f"{', verified' if args.verify else ''}, {time.monotonic() - started:.1f} s -> {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
