"""Structured output on the real pagedchat-server, driven by the official `openai` client and
checked by the `jsonschema` package: response_format json_schema (whole, streamed, n > 1, and
the members in the schema's order), json_object, llama.cpp's `grammar` and `json_schema`, vLLM's
guided_json and guided_choice, the same on /v1/completions, and every refusal a 400 naming its
field (a schema keyword outside the subset, a GBNF error, two constraints at once, guided_regex).
Run by ctest (server_test_structured_output)."""
import json
import os
import re
import sys
import unittest

import jsonschema
import openai

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess, openai_client  # noqa: E402

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 16},
        "age": {"type": "integer"},
        "languages": {"type": "array", "items": {"enum": ["English", "French", "German", "Spanish"]}, "maxItems": 3},
        "employed": {"type": "boolean"},
    },
    "required": ["name", "age", "employed"],
    "additionalProperties": False,
}
ASK = [{"role": "user", "content": "Describe a fictional person as JSON."}]


def schema_format(schema, name="answer"):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


class StructuredOutputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess()
        cls.client, cls.model = openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def chat(self, **kw):
        kw.setdefault("max_tokens", 300)
        return self.client.chat.completions.create(model=self.model, messages=kw.pop("messages", ASK), **kw)

    def assert_valid(self, text, schema):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            self.fail(f"not JSON ({e}): {text!r}")
        jsonschema.validate(doc, schema)
        return doc

    def test_json_schema_greedy_and_sampled_validate(self):
        for kw in (dict(temperature=0), dict(temperature=1.0, seed=3), dict(temperature=0.7, seed=4, top_p=0.9)):
            r = self.chat(response_format=schema_format(PERSON), **kw)
            self.assertEqual(r.choices[0].finish_reason, "stop")
            self.assert_valid(r.choices[0].message.content, PERSON)

    def test_members_come_in_the_schemas_order(self):
        # Not alphabetical: the client's order, as the reply is asked to write them.
        schema = {"type": "object", "properties": {"zebra": {"type": "integer"}, "apple": {"type": "boolean"}},
                  "required": ["zebra", "apple"], "additionalProperties": False}
        doc = self.assert_valid(self.chat(response_format=schema_format(schema), temperature=0).choices[0].message.content, schema)
        self.assertEqual(list(doc), ["zebra", "apple"])

    def test_streamed_and_parallel_samples_validate(self):
        stream = self.chat(response_format=schema_format(PERSON), temperature=0.9, seed=5, n=3, stream=True)
        texts, reasons = {}, {}
        for chunk in stream:
            for c in chunk.choices:
                texts[c.index] = texts.get(c.index, "") + (c.delta.content or "")
                if c.finish_reason:
                    reasons[c.index] = c.finish_reason
        self.assertEqual(sorted(texts), [0, 1, 2])
        for i in range(3):
            self.assertEqual(reasons[i], "stop")
            self.assert_valid(texts[i], PERSON)

    def test_json_object_is_an_object(self):
        # Any object: its strings are not bounded, so a reply may run to max_tokens (greedy text
        # differs between builds: the sanitized one looped in a string). Every reply that ends is
        # an object; one of a few seeds ends.
        ended = 0
        for seed in range(4):
            r = self.chat(response_format={"type": "json_object"}, temperature=0.8, seed=seed, max_tokens=400,
                          messages=[{"role": "user", "content": "List 3 fruits in JSON"}])
            text = r.choices[0].message.content
            self.assertTrue(text.lstrip().startswith("{"), text)
            if r.choices[0].finish_reason == "stop":
                self.assertIsInstance(json.loads(text), dict)
                ended += 1
        self.assertGreater(ended, 0)

    def test_llama_cpp_and_vllm_fields(self):
        r = self.chat(extra_body={"grammar": 'root ::= ("yes" | "no") "." '}, temperature=0)
        self.assertRegex(r.choices[0].message.content, r"^(yes|no)\.$")
        r = self.chat(extra_body={"json_schema": PERSON}, temperature=0)
        self.assert_valid(r.choices[0].message.content, PERSON)
        r = self.chat(extra_body={"guided_json": json.dumps(PERSON)}, temperature=0.5, seed=1)
        self.assert_valid(r.choices[0].message.content, PERSON)
        r = self.chat(extra_body={"guided_choice": ["left", "right", "straight on"]}, temperature=1.0, seed=2)
        self.assertIn(r.choices[0].message.content, ["left", "right", "straight on"])
        r = self.chat(response_format={"type": "json_object", "schema": PERSON}, temperature=0)
        self.assert_valid(r.choices[0].message.content, PERSON)
        r = self.chat(response_format={"type": "text"}, temperature=0, max_tokens=5)  # no constraint
        self.assertEqual(r.choices[0].finish_reason, "length")

    def test_text_completions_take_the_same_fields(self):
        r = self.client.completions.create(model=self.model, prompt="A person as JSON:", max_tokens=300, temperature=0,
                                           extra_body={"response_format": schema_format(PERSON)})
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assert_valid(r.choices[0].text, PERSON)
        r = self.client.completions.create(model=self.model, prompt="Three numbers:", max_tokens=60, temperature=0,
                                           extra_body={"grammar": 'root ::= [0-9]{1,3} (", " [0-9]{1,3}){2}'})
        self.assertRegex(r.choices[0].text, r"^\d{1,3}, \d{1,3}, \d{1,3}$")

    def test_refusals_name_the_field(self):
        cases = [
            (dict(response_format=schema_format({"type": "string", "pattern": "^a+$"})), "response_format.json_schema.schema", "'pattern'"),
            (dict(response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"n": {"type": "number", "minimum": 3}}}}}),
             "response_format.json_schema.schema", "'minimum'"),
            (dict(response_format={"type": "xml"}), "response_format.type", "'xml'"),
            (dict(response_format={"type": "json_schema"}), "response_format.json_schema", "schema"),
            (dict(extra_body={"grammar": "root ::= \"a\" missing"}), "grammar", "line 1"),
            (dict(extra_body={"grammar": 42}), "grammar", "GBNF"),
            (dict(response_format={"type": "json_object"}, extra_body={"grammar": 'root ::= "a"'}), "grammar", "both"),
            (dict(extra_body={"guided_regex": "a+"}), "guided_regex", "not supported"),
            (dict(extra_body={"guided_choice": []}), "guided_choice", "non-empty"),
            (dict(extra_body={"json_schema": {"$ref": "#/$defs/missing"}}), "json_schema", "missing"),
        ]
        for kw, param, words in cases:
            with self.subTest(param=param, kw=kw):
                with self.assertRaises(openai.BadRequestError) as ctx:
                    self.chat(**kw)
                err = ctx.exception.body
                self.assertEqual(err.get("param"), param, err)
                self.assertIn(words, err.get("message", ""), err)
        # The server is unharmed.
        self.assertEqual(self.chat(temperature=0, max_tokens=3).choices[0].finish_reason, "length")


if __name__ == "__main__":
    unittest.main()
