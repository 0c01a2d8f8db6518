"""1,000 random JSON schemas from a seeded generator (types, nested objects with required and
optional members, additionalProperties false, enums, consts, arrays with bounds, anyOf, oneOf, type
lists, $ref into $defs, string lengths), each sent to the real pagedchat-server as
response_format json_schema, half greedy and half sampled, 16 at a time: every reply ends whole
("stop"), parses, and validates against its schema (the `jsonschema` package, not our grammar).
Every string has a maxLength and every array a maxItems, so each schema's documents are bounded
and a reply that never ends would be our bug. Run by ctest (server_test_random_schemas)."""
import concurrent.futures
import http.client
import json
import os
import random
import sys
import time
import unittest

import jsonschema

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess  # noqa: E402

# Under the sanitizers (several times slower) the first 250 of the same seeded sequence.
NUM_SCHEMAS = int(os.environ.get("PAGEDCHAT_RANDOM_SCHEMAS", "250" if os.environ.get("PAGEDCHAT_SANITIZED") else "1000"))
WORDS = ["id", "name", "title", "count", "tags", "ok", "kind", "value", "items", "note", "x", "y", "colour", "when"]


class SchemaGenerator:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.defs = {}

    def schema(self):
        self.defs = {}
        s = self.value(0)
        if self.defs:
            s = dict(s)
            s["$defs"] = self.defs
        return s

    def value(self, depth):
        r = self.rng
        kinds = ["string", "integer", "number", "boolean", "null", "enum", "const", "types"]
        if depth < 3:
            kinds += ["object", "object", "array", "anyOf", "oneOf", "ref"]
        kind = r.choice(kinds)
        if kind == "string":
            s = {"type": "string", "maxLength": r.randint(0, 10)}
            if r.random() < 0.3:
                s["minLength"] = r.randint(0, s["maxLength"])
            return s
        if kind in ("integer", "number", "boolean", "null"):
            return {"type": kind}
        if kind == "enum":
            return {"enum": r.sample(["red", "green", "blue", 0, 1, 2.5, True, None, "a b", "é"], r.randint(1, 4))}
        if kind == "const":
            return {"const": r.choice(["fixed", 42, False, None, [1, "two"], {"k": "v"}])}
        if kind == "types":
            return {"type": r.sample(["string", "integer", "boolean", "null"], 2), "maxLength": 6}
        if kind == "object":
            names = r.sample(WORDS, r.randint(0, 4))
            props = {n: self.value(depth + 1) for n in names}
            s = {"type": "object", "properties": props, "required": [n for n in names if r.random() < 0.6]}
            # Without properties an open object is any object, unbounded: closed then.
            if r.random() < 0.7 or not names:
                s["additionalProperties"] = False
            if r.random() < 0.3:
                s["title"] = "annotated"
            return s
        if kind == "array":
            hi = r.randint(0, 3)
            return {"type": "array", "items": self.value(depth + 1), "minItems": r.randint(0, hi), "maxItems": hi}
        if kind in ("anyOf", "oneOf"):
            # oneOf's branches must not overlap for a document to validate: distinct types.
            types = r.sample(["string", "integer", "boolean", "null", "array"], 2)
            branches = [{"type": t, "maxLength": 5} if t == "string" else
                        {"type": t, "items": {"type": "integer"}, "maxItems": 2} if t == "array" else {"type": t} for t in types]
            return {kind: branches}
        name = f"d{len(self.defs)}"
        self.defs[name] = {}  # the name taken before its body is made (which may make defs too)
        self.defs[name] = self.value(depth + 1)
        return {"$ref": f"#/$defs/{name}"}


class RandomSchemasTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def complete(self, model, i, schema):
        sampled = i % 2 == 1
        body = {"model": model, "max_tokens": 1500, "temperature": 1.0 if sampled else 0.0, "seed": i,
                "messages": [{"role": "user", "content": "Reply with a JSON value."}],
                "response_format": {"type": "json_schema", "json_schema": {"name": f"s{i}", "schema": schema, "strict": True}}}
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=600)
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        r = conn.getresponse()
        data = json.loads(r.read())
        conn.close()
        if r.status != 200:
            return f"schema {i} ({json.dumps(schema)}): HTTP {r.status}: {data}"
        choice = data["choices"][0]
        text = choice["message"]["content"]
        if choice["finish_reason"] != "stop":
            return f"schema {i} ({json.dumps(schema)}): finish {choice['finish_reason']} after {text!r}"
        try:
            jsonschema.validate(json.loads(text), schema)
        except (json.JSONDecodeError, jsonschema.ValidationError) as e:
            return f"schema {i} ({json.dumps(schema)}), {'sampled' if sampled else 'greedy'}: {text!r}: {e}"
        return None

    def test_every_reply_validates(self):
        # The model name is the server's one model.
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        conn.request("GET", "/v1/models")
        model = json.loads(conn.getresponse().read())["data"][0]["id"]
        gen = SchemaGenerator(20261206)
        schemas = []
        for _ in range(NUM_SCHEMAS):
            s = gen.schema()
            jsonschema.Draft202012Validator.check_schema(s)
            schemas.append(s)
        start = time.time()
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            failures = [f for f in pool.map(lambda a: self.complete(model, *a), enumerate(schemas)) if f]
        print(f"{NUM_SCHEMAS} schemas in {time.time() - start:.0f} s", file=sys.stderr)
        self.assertEqual(failures, [], "\n".join(failures[:5]))


if __name__ == "__main__":
    unittest.main()
