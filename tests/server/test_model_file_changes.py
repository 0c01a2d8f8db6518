"""A model file truncated or overwritten under a running server (issue 46, items 2 and 3). The CPU
backend copies at load everything a step reads (panels, and the rows of the rest) into its own
memory and hands the file's pages back, so afterwards no step reads the file: a truncated file
cannot end the server with SIGBUS, and one overwritten in place cannot change its weights. The
server answers on, greedy replies equal to a server's on the intact file, /health 200, streams
end with [DONE]. Run by ctest (server_test_model_file_changes)."""
import http.client
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess  # noqa: E402

QUESTIONS = ["Name three colours.", "What is two plus two?"]


def chat(server, question, stream=False):
    body = {"model": "m", "temperature": 0, "max_tokens": 16, "stream": stream,
            "messages": [{"role": "user", "content": question}]}
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    raw = r.read().decode()
    conn.close()
    if r.status != 200:
        raise AssertionError(f"status {r.status}: {raw}")
    if not stream:
        return json.loads(raw)["choices"][0]["message"]["content"]
    events = [line[6:] for line in raw.splitlines() if line.startswith("data: ")]
    if events[-1] != "[DONE]":
        raise AssertionError(f"the stream did not end with [DONE]: {raw[-300:]}")
    return "".join((json.loads(e)["choices"][0]["delta"].get("content") or "") for e in events[:-1]
                   if json.loads(e).get("choices"))


def health(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("GET", "/health")
    status = conn.getresponse().status
    conn.close()
    return status


class TestModelFileChanges(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.original = os.environ["PAGEDCHAT_TEST_MODEL"]
        server = ServerProcess("--model-id", "m")
        try:
            cls.expected = [chat(server, q) for q in QUESTIONS]
        finally:
            server.stop()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="pagedchat-model-file-")
        self.copy = os.path.join(self.dir, "model.gguf")
        shutil.copyfile(self.original, self.copy)
        os.environ["PAGEDCHAT_TEST_MODEL"] = self.copy

    def tearDown(self):
        os.environ["PAGEDCHAT_TEST_MODEL"] = self.original
        shutil.rmtree(self.dir, ignore_errors=True)

    def answers_on(self, change):
        server = ServerProcess("--model-id", "m")
        try:
            self.assertEqual(chat(server, QUESTIONS[0]), self.expected[0])
            change()
            self.assertEqual(chat(server, QUESTIONS[1]), self.expected[1])  # a new prompt: every weight read
            self.assertEqual(chat(server, QUESTIONS[1] + " Answer briefly.", stream=True) is not None, True)
            self.assertEqual(health(server), 200)
            self.assertTrue(server.alive())
        finally:
            server.stop()

    def test_a_truncated_file(self):
        self.answers_on(lambda: os.truncate(self.copy, 1 << 20))

    def test_a_file_overwritten_in_place(self):
        def scribble():
            size = os.path.getsize(self.copy)
            with open(self.copy, "r+b") as f:
                for offset in range(0, size, 1 << 20):
                    f.write(b"\xa5" * min(1 << 20, size - offset))
        self.answers_on(scribble)


if __name__ == "__main__":
    unittest.main()
