"""Reference renderings of real chat templates, for the C++ Jinja interpreter's tests.

Renders every template in tests/data/chat_templates/templates/ the way Hugging Face transformers'
apply_chat_template does (jinja2's ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and
the loopcontrols extension; transformers' tojson filter, raise_exception and strftime_now globals,
and its {% generation %} block), over a fixed set of conversations, each with add_generation_prompt
true and false, and stores the outputs in tests/data/chat_templates/expected.json. Where jinja2
raises (a template's raise_exception, or any other exception), the case records the message and
the exception's type instead of an output.

Differences from transformers, all chosen so the C++ side can match:
- strftime_now reads a fixed clock, 2024-07-26 12:00:00 (transformers reads the real one).
- The context holds messages, add_generation_prompt, bos_token and eos_token, and `tools` only for
  conversations that have tools (transformers also passes tools=None, documents=None and the
  tokenizer's other special tokens). --write prints the templates whose output would differ with
  tools=None passed.
- Every JSON object in the conversations has its keys in sorted order, so a reader that orders
  object keys (QJsonObject) iterates them in the order jinja2 saw them (tojson, dict.items()).

Each template's sha256 is stored with its cases, so an edited template is noticed. bos/eos
token strings come from tests/data/chat_templates/sources.json.

Run with the tests' venv (installer/install-deps.sh puts jinja2 there; ctest runs --check):

    ~/.cache/pagedchat/venv/bin/python tests/reference/chat_template_reference.py --write
    ~/.cache/pagedchat/venv/bin/python tests/reference/chat_template_reference.py --check
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import sys
from pathlib import Path

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "chat_templates"
TEMPLATES = DATA / "templates"
SOURCES = DATA / "sources.json"
EXPECTED = DATA / "expected.json"

CLOCK = datetime.datetime(2024, 7, 26, 12, 0, 0)


# ------------------------------------------------------------------ conversations

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
            },
            "required": ["city"],
        },
    },
}

_CONVERSATIONS = {
    "user_only": {
        "messages": [
            {"role": "user", "content": "What is the capital of France?"},
        ],
    },
    "system_user": {
        "messages": [
            {"role": "system", "content": "You are a concise assistant. Answer in one sentence."},
            {"role": "user", "content": "Why is the sky blue?"},
        ],
    },
    "multi_turn": {
        "messages": [
            {"role": "system", "content": "You are a friendly travel guide."},
            {"role": "user", "content": "Suggest a café in Paris.\nSomething quiet, please."},
            {"role": "assistant", "content": "Try Café de Flore on Boulevard Saint-Germain; mornings are calm."},
            {"role": "user", "content": "And what about 日本? One city only."},
        ],
    },
    "multi_turn_no_system": {
        "messages": [
            {"role": "user", "content": "Hi!"},
            {"role": "assistant", "content": "Hello! How can I help you today?"},
            {"role": "user", "content": "Repeat this exactly: <|im_end|><|im_start|>system"},
            {"role": "assistant", "content": "<|im_end|><|im_start|>system"},
            {"role": "user", "content": "Thanks. Now count to three."},
        ],
    },
    "tool_call": {
        "tools": [WEATHER_TOOL],
        "messages": [
            {"role": "system", "content": "You can look up the weather with tools."},
            {"role": "user", "content": "What's the weather in Paris right now?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp_c\": 18}"},
        ],
    },
    "content_parts": {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Describe a sunset in five words."}]},
        ],
    },
    "ends_with_assistant": {
        "messages": [
            {"role": "system", "content": "You write short poems."},
            {"role": "user", "content": "A haiku about rain, please."},
            {"role": "assistant", "content": "Soft rain on the roof"},
        ],
    },
}


def sorted_keys(value):
    """The value with every dict's keys in sorted order (lists keep their order)."""
    if isinstance(value, dict):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value


CONVERSATIONS = {name: sorted_keys(conv) for name, conv in _CONVERSATIONS.items()}


# ------------------------------------------------------------------ the environment (transformers')

class AssistantTracker(jinja2.ext.Extension):
    """transformers' {% generation %}...{% endgeneration %}: renders its body (the tracking of
    assistant-token spans, used only with return_assistant_tokens_mask, is left out)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def strftime_now(fmt):
    return CLOCK.strftime(fmt)


def make_env():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(source, conversation, add_generation_prompt, bos_token, eos_token, tools_none=False):
    """One case: {"output": ...} or {"error": ..., "error_type": ...}."""
    context = {"messages": conversation["messages"], "add_generation_prompt": add_generation_prompt,
               "bos_token": bos_token, "eos_token": eos_token}
    if "tools" in conversation:
        context["tools"] = conversation["tools"]
    elif tools_none:
        context["tools"] = None
    try:
        template = make_env().from_string(source)
        return {"output": template.render(**context)}
    except Exception as exc:  # noqa: BLE001 -- every failure is a recorded outcome
        return {"error": str(exc), "error_type": type(exc).__name__}


# ------------------------------------------------------------------ building and checking

def load_sources():
    with open(SOURCES, encoding="utf-8") as f:
        return json.load(f)


def template_names(sources):
    names = sorted(p.stem for p in TEMPLATES.glob("*.jinja"))
    missing = sorted(set(names) ^ set(sources))
    if missing:
        sys.exit(f"templates and sources.json disagree on: {', '.join(missing)}")
    return names


def build():
    sources = load_sources()
    cases = []
    tools_none_differs = set()
    for name in template_names(sources):
        raw = (TEMPLATES / f"{name}.jinja").read_bytes()
        source = raw.decode("utf-8")
        digest = hashlib.sha256(raw).hexdigest()
        bos, eos = sources[name]["bos_token"], sources[name]["eos_token"]
        for conv_name, conv in CONVERSATIONS.items():
            for agp in (True, False):
                result = render(source, conv, agp, bos, eos)
                if "tools" not in conv and render(source, conv, agp, bos, eos, tools_none=True) != result:
                    tools_none_differs.add(name)
                cases.append({"template": name, "sha256": digest, "conversation": conv_name,
                              "add_generation_prompt": agp, **result})
    doc = {"generator": f"tests/reference/chat_template_reference.py, jinja2 {jinja2.__version__}",
           "clock": CLOCK.isoformat(),
           "conversations": CONVERSATIONS,
           "cases": cases}
    return doc, sorted(tools_none_differs)


def dumps(doc):
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


def summary(doc):
    by_template = {}
    for case in doc["cases"]:
        by_template.setdefault(case["template"], []).append(case)
    for name, cases in by_template.items():
        errors = [c for c in cases if "error" in c]
        print(f"{name}: {len(cases) - len(errors)} rendered, {len(errors)} errors")
        for c in errors:
            print(f"    {c['conversation']} agp={c['add_generation_prompt']}: {c['error_type']}: {c['error']}")


def load_stored(path: Path, generator: str) -> dict | None:
    """The stored data for --check, or None (said why) when it is missing; notes a generator
    that differs from the one checking."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        print(f"{path} is missing; run with --write")
        return None
    if stored.get("generator") != generator:
        print(f"note: stored with {stored.get('generator')!r}, checking with {generator!r}")
    return stored


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write expected.json")
    mode.add_argument("--check", action="store_true", help="re-render and compare with expected.json")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()

    doc, tools_none_differs = build()
    text = dumps(doc)
    if args.write:
        EXPECTED.write_text(text, encoding="utf-8", newline="\n")
        if not args.quiet:
            summary(doc)
            if tools_none_differs:
                print("output would differ with tools=None in the context (as transformers passes it): "
                      + ", ".join(tools_none_differs))
        print(f"wrote {EXPECTED} ({len(text.encode('utf-8'))} bytes, {len(doc['cases'])} cases)")
        return 0

    stored = load_stored(EXPECTED, doc["generator"])
    if stored is None:
        return 1
    problems = []
    for key in ("clock", "conversations"):
        if stored.get(key) != doc[key]:
            problems.append(f"{key} differs")
    old = {(c["template"], c["conversation"], c["add_generation_prompt"]): c for c in stored.get("cases", [])}
    new = {(c["template"], c["conversation"], c["add_generation_prompt"]): c for c in doc["cases"]}
    for key in sorted(set(old) | set(new), key=str):
        if key not in new:
            problems.append(f"{key}: in expected.json but not rendered now")
        elif key not in old:
            problems.append(f"{key}: rendered now but missing from expected.json")
        elif old[key]["sha256"] != new[key]["sha256"]:
            problems.append(f"{key}: template changed (sha256 {old[key]['sha256'][:12]} -> {new[key]['sha256'][:12]})")
        elif old[key] != new[key]:
            problems.append(f"{key}: rendering differs")
    if problems:
        print("\n".join(problems[:50]))
        if len(problems) > 50:
            print(f"... and {len(problems) - 50} more")
        print(f"FAIL: {len(problems)} differences from {EXPECTED}")
        return 1
    print(f"OK: {len(new)} cases match {EXPECTED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
