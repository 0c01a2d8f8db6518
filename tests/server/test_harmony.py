"""gpt-oss's harmony format on the real pagedchat-server, through the official `openai` client.
The default model is given gpt-oss's chat template (--chat-template): it has no harmony vocabulary
and never writes channels, so what is checked is what does not need it: a named call is forced by
its header in the prompt and comes back in tool_calls (streamed too); "required" and the thinking
budgets are refused by name; a call's turn sent back with its reasoning_content renders (the
template's `thinking`), a reply holding channel markup is refused as the template refuses it; a
schema's answer is the final channel's. The split itself is checked on every cut of harmony replies
by tests/engine/chat/test_harmony_split.cpp. Run by ctest (server_test_harmony)."""
import json
import os
import sys
import unittest

import openai

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess, openai_client  # noqa: E402

TEMPLATE = os.path.join(os.environ.get("PAGEDCHAT_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data")),
                        "chat_templates", "templates", "gpt-oss-120b.jinja")
ADD = {"type": "function", "function": {"name": "add", "description": "a + b", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"], "additionalProperties": False}}}
ASK = [{"role": "user", "content": "What is 2 + 3?"}]
NAMED = {"type": "function", "function": {"name": "add"}}


class Harmony(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess("--chat-template", TEMPLATE)
        cls.client, cls.model = openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def chat(self, messages=ASK, **kw):
        kw.setdefault("temperature", 0)
        kw.setdefault("max_tokens", 40)
        return self.client.chat.completions.create(model=self.model, messages=messages, **kw)

    def test_a_named_call_is_forced_and_read_back(self):
        r = self.chat(tools=[ADD], tool_choice=NAMED, max_tokens=300)  # the grammar lets it pad with spaces
        c = r.choices[0]
        self.assertEqual(c.finish_reason, "tool_calls")
        self.assertEqual(len(c.message.tool_calls), 1)
        self.assertEqual(c.message.tool_calls[0].function.name, "add")
        args = json.loads(c.message.tool_calls[0].function.arguments)
        self.assertEqual(sorted(args), ["a", "b"])
        self.assertFalse(c.message.content)  # the header and arguments are the call's, not said
        calls, content = [], ""
        for chunk in self.chat(tools=[ADD], tool_choice=NAMED, max_tokens=300, stream=True):
            if chunk.choices:
                d = chunk.choices[0].delta
                content += d.content or ""
                calls += d.tool_calls or []
        self.assertEqual([(x.function.name, json.loads(x.function.arguments)) for x in calls], [("add", args)])
        self.assertEqual(content, "")

    def test_required_and_budgets_are_refused_by_name(self):
        with self.assertRaises(openai.BadRequestError) as ctx:
            self.chat(tools=[ADD], tool_choice="required")
        self.assertIn("harmony", ctx.exception.body.get("message"))
        with self.assertRaises(openai.BadRequestError) as ctx:
            self.chat(reasoning_effort="low")
        self.assertEqual(ctx.exception.body.get("param"), "reasoning_effort")
        self.assertIn("harmony", ctx.exception.body.get("message"))

    def test_a_calls_turn_goes_back_with_its_thinking(self):
        call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
        turn = [*ASK, {"role": "assistant", "content": "Adding.", "reasoning_content": "Use the tool.", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_1", "content": "5"}]
        r = self.chat(turn, tools=[ADD], max_tokens=5)
        self.assertIn(r.choices[0].finish_reason, ("stop", "length", "tool_calls"))
        with self.assertRaises(openai.BadRequestError) as ctx:  # the template's own refusal
            self.chat([*ASK, {"role": "assistant", "content": "<|channel|>analysis<|message|>x<|end|>"}, *ASK])
        self.assertEqual(ctx.exception.body.get("param"), "messages")

    def test_a_schema_is_the_final_channels_answer(self):
        schema = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"], "additionalProperties": False}
        r = self.chat(response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": schema}})
        m = r.choices[0].message
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assertIsInstance(json.loads(m.content)["sum"], int)
        self.assertFalse(getattr(m, "reasoning_content", None))

    def test_a_reply_without_channels_is_all_answer(self):
        m = self.chat(max_tokens=12).choices[0].message
        self.assertFalse(getattr(m, "reasoning_content", None))
        self.assertIsInstance(m.content, str)


if __name__ == "__main__":
    unittest.main()
