"""Tool calling on the real pagedchat-server through the official `openai` client: tools offered,
calls made and parsed into message.tool_calls (whole) and delta.tool_calls (streamed), each
call's arguments valid for its function's parameters (the `jsonschema` package), the result sent
back as a tool message, finish_reason "tool_calls"; tool_choice auto, required and a named
function; parallel_tool_calls false. In the generic format (the default model's template does
not render tools) and in the model families' own formats, by giving the server their templates
(--chat-template): Hermes/Qwen <tool_call>, Llama 3 JSON, Mistral [TOOL_CALLS] (whose ids must be
9 letters and digits for its template to take them back). Every refusal is a 400 naming its
field. Run by ctest (server_test_tool_calls)."""
import json
import os
import sys
import unittest

import jsonschema
import openai

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess, openai_client  # noqa: E402

TEMPLATES = os.path.join(os.environ.get("PAGEDCHAT_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data")),
                         "chat_templates", "templates")
WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 24}, "unit": {"enum": ["celsius", "fahrenheit"]}},
           "required": ["city"], "additionalProperties": False}
ADD = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"],
       "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The current weather in a city.", "parameters": WEATHER}},
         {"type": "function", "function": {"name": "add", "description": "Adds two integers.", "parameters": ADD}}]
SCHEMAS = {"get_weather": WEATHER, "add": ADD}
ASK = [{"role": "user", "content": "What's the weather like in Paris today?"}]


class ToolServerTest(unittest.TestCase):
    template = None  # a file of tests/data/chat_templates/templates, or the model's own

    @classmethod
    def setUpClass(cls):
        extra = ["--chat-template", os.path.join(TEMPLATES, cls.template + ".jinja")] if cls.template else []
        cls.server = ServerProcess(*extra)
        cls.client, cls.model = openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def chat(self, messages=ASK, **kw):
        kw.setdefault("max_tokens", 300)
        kw.setdefault("temperature", 0)
        return self.client.chat.completions.create(model=self.model, messages=messages, tools=TOOLS, **kw)

    def assert_calls_valid(self, calls, only=None):
        self.assertTrue(calls)
        for c in calls:
            self.assertEqual(c.type, "function")
            self.assertIn(c.function.name, [only] if only else SCHEMAS)
            jsonschema.validate(json.loads(c.function.arguments), SCHEMAS[c.function.name])
            self.assertTrue(c.id)
        self.assertEqual(len({c.id for c in calls}), len(calls))

    def required_call(self, **kw):
        r = self.chat(tool_choice="required", parallel_tool_calls=False, **kw)
        choice = r.choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls", choice.message)
        self.assertEqual(len(choice.message.tool_calls), 1)
        self.assert_calls_valid(choice.message.tool_calls)
        return choice.message

    def test_a_forced_call_parses_and_its_result_goes_back(self):
        msg = self.required_call()
        history = ASK + [{"role": "assistant", "content": msg.content, "tool_calls": [c.model_dump() for c in msg.tool_calls]},
                         {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": json.dumps({"temp_c": 18, "sky": "clear"})}]
        r = self.chat(history, tool_choice="auto")
        self.assertIn(r.choices[0].finish_reason, ("stop", "tool_calls", "length"))
        # The conversation with its call and result goes through the template as the model's own.
        r = self.chat(history, tool_choice="none", max_tokens=5)
        self.assertIsNone(r.choices[0].message.tool_calls)

    def test_a_named_function_is_the_one_called(self):
        r = self.chat(tool_choice={"type": "function", "function": {"name": "add"}}, parallel_tool_calls=False,
                      messages=[{"role": "user", "content": "What is 2 plus 3?"}])
        self.assertEqual(r.choices[0].finish_reason, "tool_calls")
        self.assert_calls_valid(r.choices[0].message.tool_calls, only="add")

    def test_streamed_calls_are_the_whole_ones(self):
        whole = self.required_call()
        stream = self.chat(tool_choice="required", parallel_tool_calls=False, stream=True)
        calls, content, finish = {}, "", None
        for chunk in stream:
            if not chunk.choices:
                continue
            d = chunk.choices[0].delta
            content += d.content or ""
            for tc in d.tool_calls or []:
                calls.setdefault(tc.index, {"name": "", "arguments": ""})
                calls[tc.index]["name"] += tc.function.name or ""
                calls[tc.index]["arguments"] += tc.function.arguments or ""
            finish = chunk.choices[0].finish_reason or finish
        self.assertEqual(finish, "tool_calls")
        self.assertEqual([(c["name"], c["arguments"]) for c in calls.values()],
                         [(c.function.name, c.function.arguments) for c in whole.tool_calls])
        self.assertEqual(content, whole.content or "")

    def test_auto_answers_or_calls(self):
        for seed in range(3):
            r = self.chat(tool_choice="auto", temperature=1.0, seed=seed)
            m = r.choices[0].message
            if r.choices[0].finish_reason == "tool_calls":
                self.assert_calls_valid(m.tool_calls)
            else:
                self.assertIsNone(m.tool_calls)


class GenericFormatTest(ToolServerTest):
    """The default model: its template does not render tools, so they go the generic way."""

    def test_auto_in_the_generic_format_is_always_parsed(self):
        # The grammar keeps the reply {"response": ...} or {"tool_calls": [...]}: never raw JSON.
        for seed in range(4):
            r = self.chat(tool_choice="auto", temperature=1.0, seed=seed)
            m = r.choices[0].message
            self.assertFalse((m.content or "").lstrip().startswith('{"'), m.content)

    def test_parallel_calls_are_bounded(self):
        r = self.chat(tool_choice="required")
        calls = r.choices[0].message.tool_calls
        self.assert_calls_valid(calls)
        self.assertLessEqual(len(calls), 8)

    def test_refusals_name_their_field(self):
        bad_params = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"s": {"type": "string", "pattern": "x"}}}}}]
        cases = [
            (dict(tools=[{"type": "function", "function": {"name": "bad name"}}]), "tools", "tools[0].function.name"),
            (dict(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}}), "tool_choice", "nope"),
            (dict(tool_choice="required"), "tool_choice", "needs 'tools'"),
            (dict(tools=TOOLS, response_format={"type": "json_object"}), "tools", "another constraint"),
            (dict(tools=bad_params, tool_choice="required"), "tools", "pattern"),
            (dict(tools=TOOLS, tool_choice="sometimes"), "tool_choice", "must be"),
            (dict(extra_body={"functions": [{"name": "f"}]}), "functions", "tools"),
            (dict(tools=TOOLS, messages=ASK + [{"role": "tool", "content": "18C"}]), "messages[1].tool_call_id", "tool_call_id"),
        ]
        for kw, param, words in cases:
            with self.subTest(param=param, words=words):
                body = dict(model=self.model, messages=kw.pop("messages", ASK), max_tokens=5, **kw)
                with self.assertRaises(openai.BadRequestError) as ctx:
                    self.client.chat.completions.create(**body)
                self.assertEqual(ctx.exception.body.get("param"), param, ctx.exception.body)
                self.assertIn(words, ctx.exception.body.get("message", ""))


class HermesFormatTest(ToolServerTest):
    template = "qwen2.5-7b-instruct"


class Llama3FormatTest(ToolServerTest):
    template = "llama-3.2-3b-instruct"


class MistralFormatTest(ToolServerTest):
    template = "mistral-nemo-instruct-2407"

    def test_ids_are_what_mistral_templates_take(self):
        msg = self.required_call()
        self.assertRegex(msg.tool_calls[0].id, r"^[A-Za-z0-9]{9}$")


del ToolServerTest  # the base runs through its subclasses only

if __name__ == "__main__":
    unittest.main()
