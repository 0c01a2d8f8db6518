"""A stream whose first token has not come yet (its request queued, or paused here) gets an SSE
comment every --waiting-comment seconds, so its client can tell a waiting request from a dead
server, and /metrics says how long requests waited for their first token (issue 46, item 9).
The engine is paused through POST /v1/kv/control (--allow-pool-control) so that the wait is
certain. Run by ctest (server_test_waiting_streams)."""
import http.client
import json
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess  # noqa: E402


class TestWaitingStreams(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess("--allow-pool-control", "--waiting-comment", "1")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def control(self, action):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        conn.request("POST", "/v1/kv/control", json.dumps({"action": action}), {"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        conn.close()
        self.assertEqual(r.status, 200, action)

    def test_a_waiting_stream_gets_comments_then_its_reply(self):
        self.control("pause")
        try:
            body = json.dumps({"model": "SmolLM2-135M-Instruct.Q4_1", "stream": True, "max_tokens": 4,
                               "messages": [{"role": "user", "content": "Hi"}]}).encode()
            s = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            got = b""
            deadline = time.time() + 3.5
            while time.time() < deadline:
                s.settimeout(max(deadline - time.time(), 0.05))
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    break
                if not chunk:
                    break
                got += chunk
            text = got.decode("utf-8", "replace")
            self.assertIn("200", text.split("\r\n", 1)[0])
            self.assertGreaterEqual(text.count(": waiting for the first token"), 2, text)
            self.assertNotIn('"content":"', text.replace('"content":""', ""), "no token while paused")
        finally:
            self.control("resume")
        s.settimeout(30)
        while b"data: [DONE]" not in got:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        s.close()
        self.assertIn(b"data: [DONE]", got)
        m = self.server.metrics()
        self.assertGreaterEqual(m["pagedchat_time_to_first_token_seconds_count"], 1)
        self.assertGreaterEqual(m["pagedchat_time_to_first_token_seconds_max"], 2.0)
        self.assertGreaterEqual(m["pagedchat_time_to_first_token_seconds_sum"], m["pagedchat_time_to_first_token_seconds_max"])


if __name__ == "__main__":
    unittest.main()
