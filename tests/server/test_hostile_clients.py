"""The real pagedchat-server against what a hostile web page or a sloppy client sends (issue 23,
first probes): a DNS-rebinding Host, a cross-origin page with and without --allow-origin (CORS
preflight and the headers of the answer), POSTs that are not JSON, a lowercase 'bearer', an
HTTP/1.1 request without Host, and a 429 that says when to retry. Loopback only, bounded.
Run by ctest (server_test_hostile_clients)."""
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess, ServerTestCase  # noqa: E402

CHAT = json.dumps({"model": "SmolLM2-135M-Instruct.Q4_1", "max_tokens": 4, "temperature": 0,
                   "messages": [{"role": "user", "content": "Hi"}]})


def request(server, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    # http.client adds Host: 127.0.0.1:PORT unless one is given.
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def error_code(data):
    return json.loads(data)["error"]["code"]


class DefaultPolicyTest(ServerTestCase):
    SERVER_ARGS = ("--api-key", "k3y")

    def auth(self, **extra):
        return {"Authorization": "Bearer k3y", "Content-Type": "application/json", **extra}

    def test_a_rebinding_host_is_refused_on_every_route(self):
        for method, path, body in [("GET", "/v1/models", None), ("GET", "/health", None),
                                   ("POST", "/v1/chat/completions", CHAT)]:
            status, _, data = request(self.server, method, path, body, self.auth(Host="evil.example:8080"))
            self.assertEqual(status, 403, path)
            self.assertEqual(error_code(data), "host_not_allowed")
        status, _, _ = request(self.server, "GET", "/v1/models", headers=self.auth(Host="localhost:1"))
        self.assertEqual(status, 200)

    def test_a_cross_origin_page_is_refused(self):
        status, headers, data = request(self.server, "POST", "/v1/chat/completions", CHAT,
                                        self.auth(Origin="https://evil.example"))
        self.assertEqual(status, 403)
        self.assertEqual(error_code(data), "origin_not_allowed")
        self.assertNotIn("access-control-allow-origin", headers)
        # Its preflight too.
        status, headers, _ = request(self.server, "OPTIONS", "/v1/chat/completions",
                                     headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
        self.assertEqual(status, 403)

    def test_a_simple_post_a_page_could_send_is_refused(self):
        for ctype in ["text/plain", "application/x-www-form-urlencoded", None]:
            headers = {"Authorization": "Bearer k3y"}
            if ctype:
                headers["Content-Type"] = ctype
            status, _, data = request(self.server, "POST", "/v1/chat/completions", CHAT, headers)
            self.assertEqual(status, 415, ctype)
            self.assertEqual(error_code(data), "unsupported_media_type")
        status, _, _ = request(self.server, "POST", "/v1/chat/completions", CHAT, self.auth())
        self.assertEqual(status, 200)

    def test_the_auth_scheme_is_case_insensitive_the_key_is_not(self):
        base = {"Content-Type": "application/json"}
        self.assertEqual(request(self.server, "GET", "/v1/models", headers={**base, "Authorization": "bearer k3y"})[0], 200)
        self.assertEqual(request(self.server, "GET", "/v1/models", headers={**base, "Authorization": "BEARER k3y"})[0], 200)
        self.assertEqual(request(self.server, "GET", "/v1/models", headers={**base, "Authorization": "Bearer K3Y"})[0], 401)
        self.assertEqual(request(self.server, "GET", "/v1/models", headers={**base, "Authorization": "Basic k3y"})[0], 401)

    def test_http11_without_host_is_a_400(self):
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=30) as s:
            s.sendall(b"GET /v1/models HTTP/1.1\r\nAuthorization: Bearer k3y\r\n\r\n")
            reply = s.recv(65536).decode(errors="replace")
        self.assertTrue(reply.startswith("HTTP/1.1 400"), reply[:200])
        self.assertIn("missing_host", reply)

def token_id(text):
    out = subprocess.run([os.environ["PAGEDCHAT_CLI"], "tokenize", "--model", os.environ["PAGEDCHAT_TEST_MODEL"],
                          "--text", text, "--no-special"], capture_output=True, text=True, check=True).stdout.split()
    assert len(out) == 1, out
    return int(out[0])


class UnsupportedFieldsTest(ServerTestCase):
    """Fields of the API we do not implement are refused by name, not ignored; logit_bias works."""

    def chat(self, **fields):
        body = {**json.loads(CHAT), "max_tokens": 8, "messages": [{"role": "user", "content": "What is the capital of France?"}],
                **fields}
        status, _, data = request(self.server, "POST", "/v1/chat/completions", json.dumps(body),
                                  {"Content-Type": "application/json"})
        return status, json.loads(data)

    def test_unsupported_fields_are_400_naming_them(self):
        # (Structured output and tools are served: test_structured_output.py, test_tool_calls.py.)
        for field, value in [("guided_regex", "a+"), ("functions", [{"name": "f"}]), ("function_call", "auto"),
                             ("best_of", 2), ("echo", True)]:
            status, data = self.chat(**{field: value})
            self.assertEqual(status, 400, field)
            self.assertEqual(data["error"]["param"], field)
            self.assertIn("is not supported", data["error"]["message"])
        # Their neutral values are accepted.
        for field, value in [("response_format", {"type": "text"}), ("tools", []), ("tool_choice", "none")]:
            self.assertEqual(self.chat(**{field: value})[0], 200, field)

    def test_logit_bias_bans_and_forces(self):
        status, plain = self.chat(logprobs=True)
        self.assertEqual(status, 200)
        first = plain["choices"][0]["logprobs"]["content"][0]["token"]  # the greedy reply's first token
        status, banned = self.chat(logprobs=True, logit_bias={str(token_id(first)): -100})
        self.assertEqual(status, 200)
        self.assertNotEqual(banned["choices"][0]["logprobs"]["content"][0]["token"], first)
        status, forced = self.chat(logit_bias={str(token_id("Hello")): 100}, max_tokens=3)
        self.assertEqual(forced["choices"][0]["message"]["content"], "HelloHelloHello")
        for bad, why in [({"abc": 1}, "keys must be token ids"), ({"5": 101}, "in [-100, 100]"),
                         ({"99999999": 1}, "outside the vocabulary"), ([1, 2], "an object")]:
            status, data = self.chat(logit_bias=bad)
            self.assertEqual(status, 400, bad)
            self.assertIn(why, data["error"]["message"])


SECRET_SYSTEM = ("You are the assistant of ACME's legal team. The merger code name is BLUE HERON and the "
                 "closing date is the fourteenth of March; never reveal either to anyone outside the team.")


class CacheSaltTest(unittest.TestCase):
    """The prefix cache must not tell one client what another sent (issue 23, item 6): a right
    guess of another client's system prompt shows in cached_tokens unless the two are salted apart."""
    @classmethod
    def setUpClass(cls):
        cls.keys = os.path.abspath(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"pagedchat-keys-{os.getpid()}.txt"))
        with open(cls.keys, "w") as f:
            f.write("# one key a line\nalice-key\nbob-key\n")
        cls.server = ServerProcess("--api-key-file", cls.keys)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        os.remove(cls.keys)

    def cached(self, key, system, **fields):
        body = {"model": "SmolLM2-135M-Instruct.Q4_1", "max_tokens": 2, "temperature": 0,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": "Hi"}], **fields}
        status, _, data = request(self.server, "POST", "/v1/chat/completions", json.dumps(body),
                                  {"Content-Type": "application/json", "Authorization": "Bearer " + key})
        self.assertEqual(status, 200, data)
        return json.loads(data)["usage"]["prompt_tokens_details"]["cached_tokens"]

    def test_a_right_guess_under_another_key_gets_no_cached_tokens(self):
        self.assertEqual(self.cached("alice-key", SECRET_SYSTEM), 0)    # alice's prompt, now cached
        self.assertGreater(self.cached("alice-key", SECRET_SYSTEM), 0)  # alice herself is served from it
        self.assertEqual(self.cached("bob-key", SECRET_SYSTEM), 0)      # bob's right guess learns nothing
        self.assertEqual(request(self.server, "GET", "/v1/models", headers={"Authorization": "Bearer eve"})[0], 401)

    def test_cache_salt_separates_one_keys_requests(self):
        # A prompt of its own, so nothing cached by the other test chains into it.
        system = "Tenant notes: the quarterly figures are confidential until the board has met; " * 2
        self.assertEqual(self.cached("bob-key", system, cache_salt="tenant-1"), 0)
        self.assertGreater(self.cached("bob-key", system, cache_salt="tenant-1"), 0)
        self.assertEqual(self.cached("bob-key", system, cache_salt="tenant-2"), 0)
        self.assertEqual(self.cached("bob-key", system), 0)
        # The same salt under another key is still another user's.
        self.assertEqual(self.cached("alice-key", system, cache_salt="tenant-1"), 0)
        status, _, data = request(self.server, "POST", "/v1/chat/completions",
                                  json.dumps({**json.loads(CHAT), "cache_salt": ""}),
                                  {"Content-Type": "application/json", "Authorization": "Bearer bob-key"})
        self.assertEqual(status, 400)
        self.assertEqual(json.loads(data)["error"]["param"], "cache_salt")


class FullQueueTest(ServerTestCase):
    SERVER_ARGS = ("--max-active", "1")

    def auth(self):
        return {"Content-Type": "application/json"}

    def test_a_full_queue_says_when_to_retry(self):
        # --max-active 1: a long stream holds the one slot while a second request comes.
        body = json.dumps({"model": "SmolLM2-135M-Instruct.Q4_1", "max_tokens": 400, "ignore_eos": True,
                           "stream": True, "messages": [{"role": "user", "content": "Count."}]})
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=120)
        conn.request("POST", "/v1/chat/completions", body=body, headers=self.auth())
        first = conn.getresponse()
        self.assertEqual(first.status, 200)
        first.readline()  # the stream has started: the request is in flight
        status, headers, data = request(self.server, "POST", "/v1/chat/completions", CHAT, self.auth())
        conn.close()
        self.assertEqual(status, 429)
        self.assertEqual(headers.get("retry-after"), "1")
        self.assertEqual(error_code(data), "queue_full")


class AllowedOriginTest(ServerTestCase):
    SERVER_ARGS = ("--allow-origin", "http://localhost:3000", "--allowed-hosts", "gpu-box.lan")

    def test_the_preflight_and_the_answer_name_the_origin(self):
        status, headers, _ = request(self.server, "OPTIONS", "/v1/chat/completions",
                                     headers={"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST",
                                              "Access-Control-Request-Headers": "content-type"})
        self.assertEqual(status, 204)
        self.assertEqual(headers["access-control-allow-origin"], "http://localhost:3000")
        self.assertIn("POST", headers["access-control-allow-methods"])
        self.assertIn("Content-Type", headers["access-control-allow-headers"])
        # The answer itself, whole and streamed, carries the header a browser needs to read it.
        status, headers, _ = request(self.server, "POST", "/v1/chat/completions", CHAT,
                                     {"Origin": "http://localhost:3000", "Content-Type": "application/json"})
        self.assertEqual(status, 200)
        self.assertEqual(headers["access-control-allow-origin"], "http://localhost:3000")
        stream = json.dumps({**json.loads(CHAT), "stream": True})
        status, headers, data = request(self.server, "POST", "/v1/chat/completions", stream,
                                        {"Origin": "http://localhost:3000", "Content-Type": "application/json"})
        self.assertEqual(status, 200)
        self.assertEqual(headers["access-control-allow-origin"], "http://localhost:3000")
        self.assertIn(b"data: [DONE]", data)
        # Another origin still is not.
        status, _, _ = request(self.server, "POST", "/v1/chat/completions", CHAT,
                               {"Origin": "http://localhost:3001", "Content-Type": "application/json"})
        self.assertEqual(status, 403)

    def test_an_allowed_host_name(self):
        self.assertEqual(request(self.server, "GET", "/v1/models", headers={"Host": "gpu-box.lan:8080"})[0], 200)
        self.assertEqual(request(self.server, "GET", "/v1/models", headers={"Host": "evil.example"})[0], 403)


if __name__ == "__main__":
    unittest.main(verbosity=2)
