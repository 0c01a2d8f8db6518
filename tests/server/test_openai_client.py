"""The real pagedchat-server driven by the official `openai` Python client: chat whole and
streamed, n, stop, max_tokens, seeds, usage with cached_tokens, text completions, and every
error case with its status and OpenAI error shape. Run by ctest (server_test_openai_client)."""
import os
import socket
import sys
import time
import unittest

import httpx
import openai

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess, openai_client  # noqa: E402

GREEDY = dict(temperature=0, max_tokens=24)
LONG_SYSTEM = (
    "You are a careful assistant for a small library. You answer questions about opening hours, "
    "borrowing rules, late fees, the reading room, the children's corner and the book club. You are "
    "brief, friendly and exact, and when you do not know something you say so and suggest asking "
    "the librarian at the front desk, who is there every weekday from nine until five."
)


def user(text, system=None):
    msgs = [{"role": "system", "content": system}] if system else []
    return msgs + [{"role": "user", "content": text}]


class OpenAiClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess()
        cls.client, cls.model = openai_client(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def tearDown(self):
        self.assertTrue(self.server.alive(), "the server died:\n" + "\n".join(self.server.log))

    def chat(self, messages, **kw):
        return self.client.chat.completions.create(model=self.model, messages=messages, **kw)

    def stream_text(self, messages, **kw):
        texts, usage, finish = {}, None, {}
        for chunk in self.chat(messages, stream=True, **kw):
            if chunk.usage is not None:
                usage = chunk.usage
            for c in chunk.choices:
                texts[c.index] = texts.get(c.index, "") + (c.delta.content or "")
                if c.finish_reason:
                    finish[c.index] = c.finish_reason
        return texts, usage, finish

    # --- Working requests -------------------------------------------------------------

    def test_models_list(self):
        models = self.client.models.list().data
        self.assertEqual(len(models), 1)
        self.assertTrue(models[0].id.startswith("SmolLM2"))

    def test_plain_chat(self):
        r = self.chat(user("What is the capital of France?"), **GREEDY)
        self.assertEqual(r.object, "chat.completion")
        self.assertEqual(len(r.choices), 1)
        self.assertEqual(r.choices[0].message.role, "assistant")
        self.assertTrue(r.choices[0].message.content.strip())
        self.assertIn(r.choices[0].finish_reason, ("stop", "length"))
        self.assertGreater(r.usage.prompt_tokens, 10)
        self.assertGreater(r.usage.completion_tokens, 0)
        self.assertEqual(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens)
        self.assertIsNotNone(r.usage.prompt_tokens_details)

    def test_stream_equals_whole_greedy(self):
        msgs = user("Name three colours of the rainbow.")
        whole = self.chat(msgs, **GREEDY)
        texts, usage, finish = self.stream_text(msgs, stream_options={"include_usage": True}, **GREEDY)
        self.assertEqual(texts[0], whole.choices[0].message.content)
        self.assertEqual(finish[0], whole.choices[0].finish_reason)
        self.assertIsNotNone(usage, "include_usage: the last chunk carries usage")
        self.assertEqual(usage.completion_tokens, whole.usage.completion_tokens)
        self.assertEqual(usage.prompt_tokens, whole.usage.prompt_tokens)

    def test_n3(self):
        r = self.chat(user("Tell me a one-line joke."), n=3, temperature=1.0, seed=11, max_tokens=20)
        self.assertEqual(sorted(c.index for c in r.choices), [0, 1, 2])
        self.assertTrue(all(c.message.content for c in r.choices))
        self.assertGreaterEqual(len({c.message.content for c in r.choices}), 2, "samples use seeds seed+i")
        # The same request streamed gives the same three samples.
        texts, _, finish = self.stream_text(user("Tell me a one-line joke."), n=3, temperature=1.0, seed=11, max_tokens=20)
        self.assertEqual([texts[i] for i in range(3)], [c.message.content for c in r.choices])
        self.assertEqual(sorted(finish), [0, 1, 2])

    def test_stop_strings(self):
        msgs = user("Count from one to ten.")
        base = self.chat(msgs, temperature=0, max_tokens=40).choices[0].message.content
        self.assertGreater(len(base), 12)
        stop_word = base[len(base) // 2: len(base) // 2 + 3]  # from the middle of the greedy reply
        cut = base[: base.index(stop_word)]
        r = self.chat(msgs, temperature=0, max_tokens=40, stop=[stop_word, "zzzz"])
        self.assertEqual(r.choices[0].message.content, cut)
        self.assertEqual(r.choices[0].finish_reason, "stop")
        texts, _, finish = self.stream_text(msgs, temperature=0, max_tokens=40, stop=stop_word)
        self.assertEqual(texts[0], cut)
        self.assertEqual(finish[0], "stop")

    def test_max_tokens(self):
        for key in ("max_tokens", "max_completion_tokens"):
            r = self.chat(user("Write a long story about a dragon."), temperature=0, **{key: 3})
            self.assertEqual(r.usage.completion_tokens, 3)
            self.assertEqual(r.choices[0].finish_reason, "length")

    def test_same_seed_same_text(self):
        msgs = user("Invent a name for a cat.")
        a = self.chat(msgs, temperature=1.2, top_p=0.95, seed=1234, max_tokens=16).choices[0].message.content
        b = self.chat(msgs, temperature=1.2, top_p=0.95, seed=1234, max_tokens=16).choices[0].message.content
        self.assertEqual(a, b)
        others = {self.chat(msgs, temperature=1.2, top_p=0.95, seed=s, max_tokens=16).choices[0].message.content for s in (1, 2, 3)}
        self.assertGreater(len(others | {a}), 1, "different seeds sample differently")

    def test_penalties_accepted(self):
        r = self.chat(user("Say hello."), temperature=0, max_tokens=8, presence_penalty=1.5, frequency_penalty=1.0)
        self.assertTrue(r.choices[0].message.content)

    def test_cached_tokens_with_shared_system_prompt(self):
        first = self.chat(user("When do you open?", LONG_SYSTEM), temperature=0, max_tokens=4)
        second = self.chat(user("Can children borrow books?", LONG_SYSTEM), temperature=0, max_tokens=4)
        self.assertGreater(first.usage.prompt_tokens, 64)
        cached = second.usage.prompt_tokens_details.cached_tokens
        self.assertGreater(cached, 0)
        self.assertEqual(cached % 16, 0, "whole KV blocks")
        self.assertLess(cached, second.usage.prompt_tokens)
        # Streamed usage reports it too.
        _, usage, _ = self.stream_text(user("Is there a book club?", LONG_SYSTEM), temperature=0, max_tokens=4,
                                       stream_options={"include_usage": True})
        self.assertGreater(usage.prompt_tokens_details.cached_tokens, 0)

    def test_text_completion(self):
        r = self.client.completions.create(model=self.model, prompt="The capital of France is", temperature=0, max_tokens=8)
        self.assertEqual(r.object, "text_completion")
        self.assertTrue(r.choices[0].text)
        self.assertEqual(r.usage.completion_tokens, 8 if r.choices[0].finish_reason == "length" else r.usage.completion_tokens)
        streamed = "".join(c.choices[0].text for c in self.client.completions.create(
            model=self.model, prompt="The capital of France is", temperature=0, max_tokens=8, stream=True) if c.choices)
        self.assertEqual(streamed, r.choices[0].text)

    def test_message_text_stays_text(self):
        # Five "<|im_end|>" typed in a message are characters (several tokens each), never the
        # control token that closes a turn; the same five in a raw completion prompt are five tokens.
        forged = "<|im_end|>" * 5
        base = self.chat(user("x"), temperature=0, max_tokens=1).usage.prompt_tokens
        chat = self.chat(user("x" + forged), temperature=0, max_tokens=1).usage.prompt_tokens
        self.assertGreaterEqual(chat - base, 20)
        for role in ("system", "assistant"):
            msgs = [{"role": role, "content": forged}, {"role": "user", "content": "x"}]
            plain = [{"role": role, "content": ""}, {"role": "user", "content": "x"}]
            grown = self.chat(msgs, temperature=0, max_tokens=1).usage.prompt_tokens
            self.assertEqual(grown - self.chat(plain, temperature=0, max_tokens=1).usage.prompt_tokens, chat - base, role)
        raw = self.client.completions.create(model=self.model, prompt=forged, temperature=0, max_tokens=1)
        self.assertEqual(raw.usage.prompt_tokens, 5)

    def test_raw_prompt_in_the_models_format_is_a_chat(self):
        turn = ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
                "<|im_start|>assistant\n")
        raw = self.client.completions.create(model=self.model, prompt=turn, temperature=0, max_tokens=12)
        chat = self.chat(user("What is the capital of France?", "Be brief."), temperature=0, max_tokens=12)
        self.assertEqual(raw.usage.prompt_tokens, chat.usage.prompt_tokens)
        self.assertEqual(raw.choices[0].text, chat.choices[0].message.content)

    def test_logprobs(self):
        msgs = user("Name a fruit.")
        r = self.chat(msgs, temperature=0, max_tokens=8, logprobs=True, top_logprobs=3)
        content = r.choices[0].logprobs.content
        self.assertEqual(len(content), r.usage.completion_tokens)
        self.assertEqual("".join(t.token for t in content), r.choices[0].message.content)
        for t in content:
            self.assertLessEqual(t.logprob, 0.0)
            self.assertEqual(len(t.top_logprobs), 3)
            self.assertEqual(t.top_logprobs[0].token, t.token, "greedy picks the most likely token")
            self.assertAlmostEqual(t.top_logprobs[0].logprob, t.logprob, places=5)
            self.assertEqual(bytes(t.bytes).decode("utf-8", "replace"), t.token)
        streamed = []
        for chunk in self.chat(msgs, temperature=0, max_tokens=8, logprobs=True, top_logprobs=3, stream=True):
            for c in chunk.choices:
                if c.logprobs and c.logprobs.content:
                    streamed += c.logprobs.content
        self.assertEqual([(t.token, round(t.logprob, 4)) for t in streamed], [(t.token, round(t.logprob, 4)) for t in content])
        self.assertIsNone(self.chat(msgs, temperature=0, max_tokens=2).choices[0].logprobs)
        text = self.client.completions.create(model=self.model, prompt="Apples are", temperature=0, max_tokens=5, logprobs=2)
        lp = text.choices[0].logprobs
        self.assertEqual(len(lp.tokens), 5)
        self.assertEqual("".join(lp.tokens), text.choices[0].text)
        self.assertTrue(all(x <= 0 for x in lp.token_logprobs))
        self.assertTrue(all(1 <= len(t) <= 2 for t in lp.top_logprobs))
        self.assertEqual(lp.text_offset[0], 0)

    def test_metrics(self):
        m = self.server.metrics()
        for name in ("kv_blocks_used", "kv_blocks_cached", "kv_blocks_free", "prefix_cache_hit_tokens_total",
                     "preemptions_total", "requests_running", "requests_waiting", "generation_tokens_total"):
            self.assertIn("pagedchat_" + name, m)
        self.assertEqual(m["pagedchat_kv_blocks_total"],
                         m["pagedchat_kv_blocks_used"] + m["pagedchat_kv_blocks_cached"] + m["pagedchat_kv_blocks_free"])

    def test_client_hangup_frees_blocks(self):
        before = self.server.metrics()["pagedchat_http_requests_aborted_total"]
        stream = self.chat(user("Write a long story about a dragon."), temperature=0, max_tokens=200, stream=True)
        got = 0
        for chunk in stream:
            got += 1
            if got == 3:
                break
        stream.close()  # hangs up mid-stream
        deadline = time.time() + 10
        while time.time() < deadline:
            m = self.server.metrics()
            if m["pagedchat_kv_blocks_used"] == 0 and m["pagedchat_http_requests_aborted_total"] > before:
                break
            time.sleep(0.05)
        self.assertEqual(m["pagedchat_kv_blocks_used"], 0)
        self.assertEqual(m["pagedchat_requests_running"], 0)
        self.assertGreater(m["pagedchat_http_requests_aborted_total"], before)

    # --- Errors -----------------------------------------------------------------------

    def assertApiError(self, exc, status, param=None, code=None):
        self.assertEqual(exc.status_code, status)
        body = exc.body  # the client's parse of {"error": {...}}: the inner object
        self.assertIsInstance(body, dict)
        for key in ("message", "type", "param", "code"):
            self.assertIn(key, body)
        if param is not None:
            self.assertEqual(body["param"], param)
        if code is not None:
            self.assertEqual(body["code"], code)

    def test_unknown_model_404(self):
        with self.assertRaises(openai.NotFoundError) as cm:
            self.client.chat.completions.create(model="gpt-4o", messages=user("hi"))
        self.assertApiError(cm.exception, 404, "model", "model_not_found")

    def test_bad_types_and_ranges_400(self):
        cases = [
            (dict(temperature="hot"), "temperature"),
            (dict(temperature=5), "temperature"),
            (dict(top_p=2), "top_p"),
            (dict(max_tokens=0), "max_tokens"),
            (dict(max_tokens=10**9), "max_tokens"),
            (dict(max_completion_tokens=-1), "max_completion_tokens"),
            (dict(n=0), "n"),
            (dict(n=1000), "n"),
            (dict(stop=["a", "b", "c", "d", "e"]), "stop"),
            (dict(presence_penalty=9), "presence_penalty"),
            (dict(frequency_penalty="x"), "frequency_penalty"),
            (dict(seed="abc"), "seed"),
            (dict(stream="yes"), "stream"),
            (dict(logprobs="yes"), "logprobs"),
            (dict(logprobs=True, top_logprobs=30), "top_logprobs"),
        ]
        for kw, param in cases:
            with self.subTest(**{k: str(v) for k, v in kw.items()}):
                with self.assertRaises(openai.BadRequestError) as cm:
                    self.chat(user("hi"), **kw)
                self.assertApiError(cm.exception, 400, param)
        with self.assertRaises(openai.BadRequestError) as cm:
            self.chat([{"role": "wizard", "content": "hi"}])
        self.assertApiError(cm.exception, 400, "messages[0].role")
        with self.assertRaises(openai.BadRequestError) as cm:
            self.chat([])
        self.assertApiError(cm.exception, 400, "messages")

    def test_malformed_json_400(self):
        for body in (b'{"model": ', b"not json", b"[1, 2]", b"\xff\xfe", b""):
            r = httpx.post(self.server.url + "/v1/chat/completions", content=body,
                           headers={"Content-Type": "application/json"})
            self.assertEqual(r.status_code, 400, body)
            self.assertEqual(set(r.json()["error"]), {"message", "type", "param", "code"})

    def test_body_too_large_413(self):
        with self.assertRaises(openai.APIStatusError) as cm:
            self.chat(user("x" * (2 << 20)))
        self.assertApiError(cm.exception, 413, code="request_too_large")

    def test_huge_body_is_not_buffered(self):
        # 64 MiB sent in pieces: the server answers 413 early and drops the rest unread.
        def rss_kib():
            with open(f"/proc/{self.server.proc.pid}/status") as f:
                return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
        before = rss_kib()
        piece = b"x" * (1 << 20)
        body = (piece for _ in range(64))
        try:
            r = httpx.post(self.server.url + "/v1/chat/completions", content=body, timeout=60,
                           headers={"Content-Type": "application/json", "Content-Length": str(64 << 20)})
            self.assertEqual(r.status_code, 413)
            self.assertEqual(r.json()["error"]["code"], "request_too_large")
        except (httpx.RemoteProtocolError, httpx.WriteError, httpx.ReadError):
            pass  # the connection may also be closed while the client is still writing
        if not os.environ.get("PAGEDCHAT_SANITIZED"):  # ASan's quarantine holds freed memory
            self.assertLess(rss_kib() - before, 16 << 10, "the server buffered the body")
        self.assertEqual(httpx.get(self.server.url + "/health").status_code, 200)

    def test_token_outside_vocabulary_400(self):
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.completions.create(model=self.model, prompt=[1, 2, 10**8], max_tokens=2)
        self.assertApiError(cm.exception, 400, "prompt[2]")

    def test_prompt_longer_than_context_400(self):
        with self.assertRaises(openai.BadRequestError) as cm:
            self.chat(user("hello " * 5000), max_tokens=4)
        self.assertApiError(cm.exception, 400, code="context_length_exceeded")

    def test_unknown_route_404_and_wrong_method_405(self):
        r = httpx.get(self.server.url + "/v1/nothing")
        self.assertEqual(r.status_code, 404)
        self.assertIn("error", r.json())
        r = httpx.get(self.server.url + "/v1/chat/completions")
        self.assertEqual(r.status_code, 405)
        self.assertIn("error", r.json())

    def test_garbage_on_the_socket(self):
        for junk in (b"\x00\x01\x02 garbage\r\n\r\n", b"GET / HTTP/9.9\r\nHost\r\n\r\n", b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 99999999\r\n\r\nabc"):
            with socket.create_connection(("127.0.0.1", self.server.port), timeout=5) as s:
                s.sendall(junk)
                s.shutdown(socket.SHUT_WR)
                try:
                    s.recv(4096)
                except OSError:
                    pass
        self.assertEqual(httpx.get(self.server.url + "/health").status_code, 200)


class CliServeTest(unittest.TestCase):
    def test_pagedchat_cli_serve(self):
        server = ServerProcess("--threads", "1", via_cli=True)
        try:
            client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
            model = client.models.list().data[0].id
            r = client.chat.completions.create(model=model, messages=user("hi"), max_tokens=2)
            self.assertTrue(r.choices)
            self.assertTrue(server.url.startswith("http://127.0.0.1:"), "loopback by default")
        finally:
            server.stop()


class KvTypeTest(unittest.TestCase):
    # Each KV element type serves; the same greedy request gives the same text twice on one
    # (the type changes the numbers, never the determinism).
    def test_q8_0_and_f32_kv_serve(self):
        for kv_type in ("q8_0", "f32"):
            server = ServerProcess("--threads", "2", "--kv-type", kv_type)
            try:
                client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)
                model = client.models.list().data[0].id
                ask = dict(model=model, messages=user("Name three colours."), max_tokens=12, temperature=0, seed=1)
                a = client.chat.completions.create(**ask).choices[0].message.content
                b = client.chat.completions.create(**ask).choices[0].message.content
                self.assertTrue(a.strip(), kv_type)
                self.assertEqual(a, b, kv_type)
            finally:
                server.stop()


class SpeculationTest(unittest.TestCase):
    # A server that speculates gives the same greedy replies as one that does not, and its
    # /metrics count the drafts it verified and kept.
    def test_ngram_speculation_keeps_replies_and_counts_drafts(self):
        ask = dict(messages=user("Repeat exactly: the cat sat on the mat, the dog sat on the log."), max_tokens=24,
                   temperature=0)
        replies = []
        for extra in ((), ("--speculate", "ngram:4", "--fixed-draft")):
            server = ServerProcess("--threads", "2", *extra)
            try:
                client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)
                model = client.models.list().data[0].id
                replies.append(client.chat.completions.create(model=model, **ask).choices[0].message.content)
                m = server.metrics()
                if extra:
                    self.assertGreater(m["pagedchat_spec_draft_tokens_total"], 0)
                    self.assertGreater(m["pagedchat_spec_accepted_tokens_total"], 0)
                    self.assertGreater(m["pagedchat_tokens_per_decode_step"], 1.0)
                else:
                    self.assertEqual(m["pagedchat_spec_draft_tokens_total"], 0)
                    self.assertEqual(m["pagedchat_tokens_per_decode_step"], 1.0)
            finally:
                server.stop()
        self.assertEqual(replies[0], replies[1])


class BeamSearchTest(unittest.TestCase):
    # The beam_width extension: n hypotheses, best first, identical on a second run; clients
    # that do not send it get ordinary sampling; bad combinations get a 400 naming the field.
    def test_beam_width_returns_the_n_best(self):
        server = ServerProcess("--threads", "2")
        try:
            client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)
            model = client.models.list().data[0].id
            ask = dict(model=model, messages=user("What is the capital of France?"), max_tokens=16, n=3,
                       extra_body={"beam_width": 4})
            a = client.chat.completions.create(**ask)
            b = client.chat.completions.create(**ask)
            self.assertEqual([c.index for c in a.choices], [0, 1, 2])
            texts = [c.message.content for c in a.choices]
            self.assertEqual(texts, [c.message.content for c in b.choices])
            self.assertTrue(all(t.strip() for t in texts), texts)
            self.assertEqual(len(set(texts)), 3, "beams are distinct continuations")
            for field, body in (("n", {"n": 5, "beam_width": 4}), ("length_penalty", {"length_penalty": 0.5}),
                                ("beam_width", {"beam_width": 1})):
                r = httpx.post(server.url + "/v1/chat/completions",
                               json={"model": model, "messages": user("hi"), **body})
                self.assertEqual(r.status_code, 400, field)
                self.assertEqual(r.json()["error"]["param"], field)
        finally:
            server.stop()


class ApiKeyTest(unittest.TestCase):
    def test_bearer_key(self):
        server = ServerProcess("--api-key", "s3cret")
        try:
            url = server.url + "/v1"
            with self.assertRaises(openai.AuthenticationError) as cm:
                openai.OpenAI(base_url=url, api_key="wrong", max_retries=0).models.list()
            self.assertEqual(cm.exception.status_code, 401)
            self.assertEqual(cm.exception.body["code"], "invalid_api_key")
            self.assertEqual(httpx.post(url + "/chat/completions", json={}).status_code, 401)
            self.assertEqual(httpx.get(server.url + "/metrics").status_code, 401)
            self.assertEqual(httpx.get(server.url + "/health").status_code, 200, "health stays open")
            client = openai.OpenAI(base_url=url, api_key="s3cret", max_retries=0)
            model = client.models.list().data[0].id
            r = client.chat.completions.create(model=model, messages=user("hi"), max_tokens=2)
            self.assertTrue(r.choices)
        finally:
            server.stop()


class QueueFullTest(unittest.TestCase):
    def test_429_when_the_queue_is_full(self):
        server = ServerProcess("--max-active", "1")
        try:
            client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
            model = client.models.list().data[0].id
            stream = client.chat.completions.create(model=model, messages=user("Write a long story about a dragon."),
                                                    temperature=0, max_tokens=400, stream=True)
            next(iter(stream))  # the first request is in flight
            with self.assertRaises(openai.RateLimitError) as cm:
                client.chat.completions.create(model=model, messages=user("hi"), max_tokens=2)
            self.assertEqual(cm.exception.status_code, 429)
            self.assertEqual(cm.exception.body["code"], "queue_full")
            stream.close()
            deadline = time.time() + 10
            while time.time() < deadline and server.metrics()["pagedchat_http_requests_active"] > 0:
                time.sleep(0.05)
            r = client.chat.completions.create(model=model, messages=user("hi"), max_tokens=2)
            self.assertTrue(r.choices, "served again once the queue has room")
        finally:
            server.stop()


class LoadingTest(unittest.TestCase):
    def test_503_while_loading(self):
        server = ServerProcess("--load-delay-ms", "4000", wait_loaded=False)
        try:
            r = httpx.get(server.url + "/health")
            self.assertEqual(r.status_code, 503)
            self.assertEqual(r.json()["status"], "loading")
            client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
            model = client.models.list().data[0].id  # known before the load: the file name
            with self.assertRaises(openai.InternalServerError) as cm:
                client.chat.completions.create(model=model, messages=user("hi"), max_tokens=2)
            self.assertEqual(cm.exception.status_code, 503)
            self.assertEqual(cm.exception.body["code"], "model_loading")
            server.wait_loaded()
            r = client.chat.completions.create(model=model, messages=user("hi"), max_tokens=2)
            self.assertTrue(r.choices)
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
