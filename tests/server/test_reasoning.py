"""A thinking model's reply on the real pagedchat-server, through the official `openai` client: the
thinking comes back as message.reasoning_content (streamed as delta.reasoning_content) and the
answer as content; thinking_budget_tokens and reasoning_effort cap the thinking, whose end is then
written for the model; a json_schema applies to the answer only; reasoning_format "none" keeps the
thinking in content. The thinking templates are given to the default model (--chat-template):
DeepSeek R1's opens the thinking in the prompt, Qwen 3's lets the model open it. A model that does
not think refuses the budget fields by name. Run by ctest (server_test_reasoning)."""
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
ASK = [{"role": "user", "content": "Is 17 a prime number?"}]
ANSWER = {"type": "object", "properties": {"prime": {"type": "boolean"}, "why": {"type": "string", "maxLength": 40}},
          "required": ["prime", "why"], "additionalProperties": False}


def serve(template):
    server = ServerProcess("--chat-template", os.path.join(TEMPLATES, template + ".jinja"))
    client, model = openai_client(server)
    return server, client, model


class ThinkingInThePrompt(unittest.TestCase):
    """DeepSeek R1 distill: the generation prompt ends with <think>; the reply begins inside it."""

    @classmethod
    def setUpClass(cls):
        cls.server, cls.client, cls.model = serve("deepseek-r1-distill-qwen-32b")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def chat(self, **kw):
        kw.setdefault("temperature", 0)
        return self.client.chat.completions.create(model=self.model, messages=ASK, **kw)

    def test_a_budget_ends_the_thinking_and_the_answer_follows(self):
        r = self.chat(max_tokens=60, extra_body={"thinking_budget_tokens": 16})
        m = r.choices[0].message
        self.assertTrue(m.reasoning_content)  # the small model never closes it itself: the budget did
        self.assertNotIn("</think>", m.reasoning_content)
        self.assertFalse((m.content or "").lstrip().startswith("</think>"))  # (the small model may write one again later)
        self.assertEqual(r.choices[0].finish_reason, "length")
        self.assertTrue(m.content)
        # reasoning_effort minimal: no thinking at all.
        r = self.chat(max_tokens=20, reasoning_effort="minimal")
        self.assertFalse((r.choices[0].message.reasoning_content or "").strip())

    def test_streamed_thinking_and_answer_are_the_whole_ones(self):
        whole = self.chat(max_tokens=50, extra_body={"thinking_budget_tokens": 12}).choices[0].message
        reasoning, content = "", ""
        for chunk in self.chat(max_tokens=50, stream=True, extra_body={"thinking_budget_tokens": 12}):
            if chunk.choices:
                d = chunk.choices[0].delta.model_dump()
                reasoning += d.get("reasoning_content") or ""
                content += d.get("content") or ""
        self.assertEqual(reasoning, whole.reasoning_content)
        self.assertEqual(content, whole.content)

    def test_a_schema_applies_to_the_answer_only(self):
        r = self.chat(max_tokens=200, extra_body={"thinking_budget_tokens": 20},
                      response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": ANSWER}})
        m = r.choices[0].message
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assertTrue(m.reasoning_content)
        jsonschema.validate(json.loads(m.content), ANSWER)

    def test_reasoning_format_none_keeps_the_thinking_in_content(self):
        r = self.chat(max_tokens=40, extra_body={"thinking_budget_tokens": 8, "reasoning_format": "none"})
        m = r.choices[0].message
        self.assertIsNone(getattr(m, "reasoning_content", None))
        self.assertIn("</think>", m.content)


class ThinkingOpenedByTheModel(unittest.TestCase):
    """Qwen 3: the model writes <think> itself; with a budget or a schema the reply is begun inside it."""

    @classmethod
    def setUpClass(cls):
        cls.server, cls.client, cls.model = serve("qwen3-0.6b")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_without_a_budget_a_reply_that_does_not_think_is_all_answer(self):
        r = self.client.chat.completions.create(model=self.model, messages=ASK, temperature=0, max_tokens=20)
        m = r.choices[0].message
        self.assertFalse(getattr(m, "reasoning_content", None))
        self.assertTrue(m.content)

    def test_a_budget_opens_and_closes_the_thinking(self):
        r = self.client.chat.completions.create(model=self.model, messages=ASK, temperature=0, max_tokens=200,
                                                extra_body={"thinking_budget_tokens": 10},
                                                response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": ANSWER}})
        m = r.choices[0].message
        self.assertTrue(m.reasoning_content)
        jsonschema.validate(json.loads(m.content), ANSWER)


class NotThinking(unittest.TestCase):
    def test_budget_fields_are_refused_by_a_model_that_does_not_think(self):
        server = ServerProcess()
        try:
            client, model = openai_client(server)
            for kw in (dict(reasoning_effort="low"), dict(extra_body={"thinking_budget_tokens": 5})):
                with self.assertRaises(openai.BadRequestError) as ctx:
                    client.chat.completions.create(model=model, messages=ASK, max_tokens=3, **kw)
                self.assertEqual(ctx.exception.body.get("param"), "reasoning_effort")
                self.assertIn("does not think", ctx.exception.body.get("message"))
            with self.assertRaises(openai.BadRequestError):
                client.chat.completions.create(model=model, messages=ASK, max_tokens=3, reasoning_effort="extreme")
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main()
