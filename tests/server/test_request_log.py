"""The request log (`pagedchat-server --log-requests`): one line per request once its response has
ended, saying its method, path, status, a completion's tokens (as its usage says them), whether
it streamed, and how long it took; a client that hangs up mid-stream is logged 499. The app's
Serve API lists the same lines (ApiServer::requestEnded). Loopback only, bounded. Run by ctest
(server_test_request_log)."""
import http.client
import json
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess  # noqa: E402

MODEL = "SmolLM2-135M-Instruct.Q4_1"
NO_EOS = {"2": -100, "0": -100}
LINE = re.compile(r"^\d\d:\d\d:\d\d  (\w+) (\S+)  (\d+)( \(client left\))?(?:  (\d+) → (\d+) tokens)?(  streamed)?  (\d+) ms$")


class TestRequestLog(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess("--log-requests")
        # wait_loaded's own GET /health is logged once its response has ended, on the server's
        # thread: wait for that line, so that no test counts it as one of its own
        deadline = time.time() + 10
        while not any((m := LINE.match(l)) and m[2] == "/health" and m[3] == "200" for l in list(cls.server.log)):
            if time.time() > deadline:
                raise RuntimeError("the start's health check was never logged:\n" + "\n".join(cls.server.log))
            time.sleep(0.05)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def request(self, method, path, body=None, read=True):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        conn.request(method, path, json.dumps(body) if body is not None else None,
                     {"Content-Type": "application/json"} if body is not None else {})
        r = conn.getresponse()
        data = None
        if read:
            data = r.read()
            conn.close()
        return conn, r, data

    def logged(self, count, timeout=10):
        """The log lines (parsed) once there are at least `count`."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            lines = [m for m in (LINE.match(l) for l in list(self.server.log)) if m]
            if len(lines) >= count:
                return lines
            time.sleep(0.05)
        self.fail("expected %d log lines, have:\n%s" % (count, "\n".join(self.server.log)))

    def test_each_request_is_one_line_with_its_outcome(self):
        before = len(self.logged(0))
        self.request("GET", "/health")
        self.request("GET", "/nowhere")
        body = {"model": MODEL, "max_tokens": 5, "temperature": 0, "logit_bias": NO_EOS,
                "messages": [{"role": "user", "content": "Name a colour."}]}
        _, r, data = self.request("POST", "/v1/chat/completions", body)
        self.assertEqual(r.status, 200)
        usage = json.loads(data)["usage"]
        _, r, _ = self.request("POST", "/v1/chat/completions", {**body, "stream": True})
        self.assertEqual(r.status, 200)
        _, r, _ = self.request("POST", "/v1/chat/completions", {**body, "model": "elsewhere"})
        self.assertEqual(r.status, 404)
        lines = self.logged(before + 5)[before:]
        got = [(m[1], m[2], int(m[3]), m[5], m[6], bool(m[7])) for m in lines]
        self.assertEqual(got, [
            ("GET", "/health", 200, None, None, False),
            ("GET", "/nowhere", 404, None, None, False),
            ("POST", "/v1/chat/completions", 200, str(usage["prompt_tokens"]), "5", False),
            ("POST", "/v1/chat/completions", 200, str(usage["prompt_tokens"]), "5", True),
            ("POST", "/v1/chat/completions", 404, None, None, False),
        ])

    def test_a_client_that_leaves_mid_stream_is_logged_499(self):
        before = len(self.logged(0))
        body = {"model": MODEL, "max_tokens": 2000, "temperature": 0, "logit_bias": NO_EOS, "stream": True,
                "messages": [{"role": "user", "content": "Tell me a very long story."}]}
        conn, r, _ = self.request("POST", "/v1/chat/completions", body, read=False)
        self.assertEqual(r.status, 200)
        r.fp.readline()  # the stream has begun
        conn.sock.close()
        conn.close()
        line = self.logged(before + 1)[before]
        self.assertEqual((line[1], line[2], int(line[3]), line[4]), ("POST", "/v1/chat/completions", 499, " (client left)"))
        self.assertTrue(line[7])  # streamed
        self.assertLess(int(line[6]), 2000)


if __name__ == "__main__":
    unittest.main()
