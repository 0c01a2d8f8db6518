"""The real pagedchat-server against clients that stop reading their streams (issue 23, item 1).
A stream's unread bytes past --max-unread-bytes hold its request back (not scheduled, its
output waiting in the engine rather than in the server's buffers), so memory stays flat; a
client that reads again gets the very reply it would have had; one that never does is aborted
after --slow-reader-timeout and its KV blocks come back. Other clients are served meanwhile.
Loopback only, bounded (about a minute). Run by ctest (server_test_slow_readers)."""
import http.client
import json
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerTestCase, rss_mib  # noqa: E402

MODEL = "SmolLM2-135M-Instruct.Q4_1"
UNREAD_LIMIT = 128 * 1024
SLOW_READER_TIMEOUT = 8
NO_EOS = {"2": -100, "0": -100}  # <|im_end|> and <|endoftext|>: the reply runs to max_tokens


def small_window_connection(port):
    """An HTTP connection whose receive buffer is a few KiB, so a client that does not read
    leaves the server's bytes in the server instead of in this side's kernel."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.sock = s
    return conn


def chat(max_tokens, **fields):
    return {"model": MODEL, "max_tokens": max_tokens, "temperature": 0, "logit_bias": NO_EOS,
            "messages": [{"role": "user", "content": "Tell me about the sea."}], **fields}


def streamed_text(raw):
    """Each choice's text, by index, and how many [DONE]s the stream had."""
    text, done = {}, 0
    for line in raw.decode().split("\n"):
        if line == "data: [DONE]":
            done += 1
        elif line.startswith("data: "):
            event = json.loads(line[6:])
            for choice in event.get("choices", []):
                text[choice["index"]] = text.get(choice["index"], "") + (choice["delta"].get("content") or "")
    return text, done


class SlowReaderTest(ServerTestCase):
    SERVER_ARGS = ("--max-unread-bytes", str(UNREAD_LIMIT), "--slow-reader-timeout", str(SLOW_READER_TIMEOUT))

    def post(self, conn, body):
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        return conn.getresponse()

    def wait_for(self, what, predicate, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            metrics = self.server.metrics()
            if predicate(metrics):
                return metrics
            time.sleep(0.25)
        self.fail(f"{what} did not happen within {seconds} s: {metrics}")

    def test_a_reader_that_pauses_gets_the_same_reply(self):
        # Larger than the kernel's socket buffers (a few MiB on loopback), which fill first.
        body = chat(1024, stream=True, n=4, logprobs=True, top_logprobs=20)
        fast = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=120)
        reference, done = streamed_text(self.post(fast, body).read())
        fast.close()
        self.assertEqual(done, 1)
        holds = self.server.metrics()["pagedchat_http_slow_reader_holds_total"]

        slow = small_window_connection(self.server.port)
        response = self.post(slow, body)  # the head is read; the stream is not
        self.wait_for("a hold", lambda m: m["pagedchat_http_slow_reader_holds_total"] > holds and m["pagedchat_sequences_held"] == 4, 60)
        # While it is held, others are served.
        other = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        started = time.time()
        quick = self.post(other, chat(8))
        self.assertEqual(quick.status, 200)
        quick.read()
        other.close()
        self.assertLess(time.time() - started, 20)
        text, done = streamed_text(response.read())
        slow.close()
        self.assertEqual(done, 1)
        self.assertEqual(len(text), 4)
        self.assertEqual(text, reference)
        metrics = self.server.metrics()
        self.assertEqual(metrics["pagedchat_sequences_held"], 0)
        self.assertEqual(metrics["pagedchat_http_slow_reader_aborts_total"], 0)

    def test_readers_that_never_read_are_held_then_aborted_and_memory_stays_flat(self):
        pid = self.server.proc.pid
        before = self.server.metrics()
        rss_before = rss_mib(pid)
        body = chat(1024, stream=True, n=8, logprobs=True, top_logprobs=20)
        stalled = []
        for _ in range(2):
            conn = small_window_connection(self.server.port)
            conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
            stalled.append(conn)  # never read, not even the head
        rss_peak = rss_before
        deadline = time.time() + 90
        while time.time() < deadline:
            rss_peak = max(rss_peak, rss_mib(pid))
            m = self.server.metrics()
            if m["pagedchat_http_slow_reader_aborts_total"] >= before["pagedchat_http_slow_reader_aborts_total"] + 2:
                break
            time.sleep(0.5)
        m = self.server.metrics()
        self.assertGreaterEqual(m["pagedchat_http_slow_reader_holds_total"], before["pagedchat_http_slow_reader_holds_total"] + 2)
        self.assertGreaterEqual(m["pagedchat_http_slow_reader_aborts_total"], before["pagedchat_http_slow_reader_aborts_total"] + 2)
        # Their blocks come back at the next step.
        deadline = time.time() + 10
        while time.time() < deadline and (m["pagedchat_kv_blocks_used"] or m["pagedchat_sequences_held"]):
            time.sleep(0.2)
            m = self.server.metrics()
        self.assertEqual(m["pagedchat_kv_blocks_used"], 0)
        self.assertEqual(m["pagedchat_sequences_held"], 0)
        self.assertEqual(m["pagedchat_http_requests_held"], 0)
        for conn in stalled:
            conn.close()
        grown = rss_peak - rss_before
        print(f"2 clients x n=8 x 1024 tokens with top_logprobs 20, never read: RSS {rss_before:.0f} -> peak {rss_peak:.0f} MiB "
              f"(+{grown:.0f}); held then aborted after {SLOW_READER_TIMEOUT} s")
        if not os.environ.get("PAGEDCHAT_SANITIZED"):  # ASan's quarantine holds freed memory
            self.assertLess(grown, 64)


if __name__ == "__main__":
    unittest.main(verbosity=2)
