"""The real pagedchat-server against connections that would hold it (issue 23, items 2 and 8):
framings that could be read two ways, a declared body far over the limit, Expect: 100-continue,
slow-loris senders and idle connections (closed within the timeouts, while a long reply on an
otherwise quiet connection is not), a connection cap answered with 503, and the process's
descriptor limit reached without the server spinning (the cap stays below it, even when asked
for more). Loopback only; every wait is bounded.
Run by ctest (server_test_connection_limits)."""
import json
import os
import resource
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerTestCase, cpu_seconds  # noqa: E402

MODEL = "SmolLM2-135M-Instruct.Q4_1"
CHAT = json.dumps({"model": MODEL, "max_tokens": 4, "temperature": 0, "messages": [{"role": "user", "content": "Hi"}]}).encode()


def connect(server, timeout=30):
    return socket.create_connection(("127.0.0.1", server.port), timeout=timeout)


def head(path, body_len=None, extra=""):
    lines = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    if body_len is not None:
        lines += f"Content-Length: {body_len}\r\n"
    return (lines + extra + "\r\n").encode()


def read_reply(s, limit=1 << 20):
    """What the server sends until it closes or a whole response (by Content-Length) is in."""
    data = b""
    while len(data) < limit:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        data += chunk
        end = data.find(b"\r\n\r\n")
        if end >= 0 and not data.startswith(b"HTTP/1.1 100"):
            length = [int(line.split(b":")[1]) for line in data[:end].split(b"\r\n") if line.lower().startswith(b"content-length:")]
            if length and len(data) >= end + 4 + length[0]:
                break
    return data


def closed_within(s, seconds):
    """Whether the server closes (EOF or reset) the connection within `seconds`; returns what it sent."""
    s.settimeout(0.2)
    deadline = time.time() + seconds
    got = b""
    while time.time() < deadline:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            return True, got
        if not chunk:
            return True, got
        got += chunk
    return False, got


class FramingTest(ServerTestCase):

    def exchange(self, data):
        with connect(self.server) as s:
            s.sendall(data)
            return read_reply(s)

    def test_two_different_content_lengths_are_a_400(self):
        reply = self.exchange(head("/v1/chat/completions", len(CHAT), f"Content-Length: {len(CHAT) + 5}\r\n") + CHAT)
        self.assertTrue(reply.startswith(b"HTTP/1.1 400"), reply[:200])
        self.assertIn(b"bad_content_length", reply)

    def test_content_length_with_transfer_encoding_is_a_400(self):
        reply = self.exchange(head("/v1/chat/completions", len(CHAT), "Transfer-Encoding: chunked\r\n") + CHAT)
        self.assertTrue(reply.startswith(b"HTTP/1.1 400"), reply[:200])
        self.assertIn(b"bad_framing", reply)

    def test_a_huge_declared_body_is_a_413_before_it_is_sent(self):
        with connect(self.server, timeout=5) as s:
            started = time.time()
            s.sendall(head("/v1/chat/completions", 10 ** 14))
            reply = read_reply(s)
        self.assertTrue(reply.startswith(b"HTTP/1.1 413"), reply[:200])
        self.assertLess(time.time() - started, 3)

    def test_expect_100_continue_is_answered_before_the_body(self):
        with connect(self.server) as s:
            s.sendall(head("/v1/chat/completions", len(CHAT), "Expect: 100-continue\r\n"))
            s.settimeout(5)
            interim = s.recv(4096)
            self.assertTrue(interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), interim)
            s.sendall(CHAT)
            s.settimeout(60)
            reply = read_reply(s)
        self.assertTrue(reply.startswith(b"HTTP/1.1 200"), reply[:200])
        self.assertIn(b'"finish_reason"', reply)

    def test_an_unknown_expectation_is_a_417(self):
        reply = self.exchange(head("/v1/chat/completions", len(CHAT), "Expect: teapot\r\n") + CHAT)
        self.assertTrue(reply.startswith(b"HTTP/1.1 417"), reply[:200])

    def test_headers_past_64_kib_are_a_431(self):
        reply = self.exchange(head("/v1/chat/completions", len(CHAT), "X-Junk: " + "a" * 70000 + "\r\n") + CHAT)
        self.assertTrue(reply.startswith(b"HTTP/1.1 431"), reply[:200])

    def test_pipelined_requests_are_each_answered(self):
        one = b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        with connect(self.server) as s:
            s.sendall(one + one)
            s.settimeout(5)
            data = b""
            while data.count(b"HTTP/1.1 200") < 2:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        self.assertEqual(data.count(b"HTTP/1.1 200"), 2, data[:400])


    # Issue 46, item 7: a client that reads to the close is not left waiting for the idle timeout.
    def test_connection_close_is_honoured(self):
        with connect(self.server) as s:
            s.sendall(head("/v1/chat/completions", len(CHAT), "Connection: close\r\n") + CHAT)
            closed, got = closed_within(s, 30)
        self.assertTrue(closed, got[:300])
        self.assertTrue(got.startswith(b"HTTP/1.1 200"), got[:300])
        self.assertIn(b"\r\nConnection: close\r\n", got.split(b"\r\n\r\n")[0] + b"\r\n")

    def test_a_stream_to_connection_close_ends_with_the_connection(self):
        body = json.dumps({"model": MODEL, "max_tokens": 4, "temperature": 0, "stream": True,
                           "messages": [{"role": "user", "content": "Hi"}]}).encode()
        with connect(self.server) as s:
            s.sendall(head("/v1/chat/completions", len(body), "Connection: close\r\n") + body)
            closed, got = closed_within(s, 30)
        self.assertTrue(closed, got[:300])
        self.assertIn(b"Transfer-Encoding: chunked", got)
        self.assertTrue(got.endswith(b"0\r\n\r\n"), got[-100:])

    def test_http10_gets_no_chunks_and_the_close_ends_it(self):
        body = json.dumps({"model": MODEL, "max_tokens": 4, "temperature": 0, "stream": True,
                           "messages": [{"role": "user", "content": "Hi"}]}).encode()
        request = (f"POST /v1/chat/completions HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        with connect(self.server) as s:
            s.sendall(request)
            closed, got = closed_within(s, 30)
        self.assertTrue(closed, got[:300])
        head_part, _, stream = got.partition(b"\r\n\r\n")
        self.assertNotIn(b"Transfer-Encoding", head_part)
        self.assertTrue(stream.startswith(b"data: "), stream[:100])  # no chunk sizes in the body
        self.assertIn(b"data: [DONE]", stream)
        with connect(self.server) as s:
            s.sendall(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")  # Host: the server asks every client for it (DNS rebinding)
            closed, got = closed_within(s, 10)
        self.assertTrue(closed and b" 200 " in got.split(b"\r\n")[0], got[:200])

    def test_keep_alive_still_keeps_the_connection(self):
        with connect(self.server) as s:
            s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            first = read_reply(s)
            s.sendall(b"GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n")
            second = read_reply(s)
        self.assertTrue(first.startswith(b"HTTP/1.1 200") and second.startswith(b"HTTP/1.1 200"), (first[:100], second[:100]))


class TimeoutTest(ServerTestCase):
    READ, IDLE = 2, 3
    SERVER_ARGS = ("--read-timeout", str(READ), "--idle-timeout", str(IDLE))

    def test_slow_loris_connections_are_closed_within_the_read_timeout(self):
        conns = [connect(self.server) for _ in range(100)]
        for s in conns:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.time()
        # A header line every half second: never done, always busy.
        while time.time() - started < self.READ + 1:
            for i, s in enumerate(conns):
                try:
                    s.sendall(f"X-Slow-{i}: 1\r\n".encode())
                except OSError:
                    pass
            time.sleep(0.5)
        timed_out = 0
        for s in conns:
            closed, got = closed_within(s, 3)
            self.assertTrue(closed)
            timed_out += got.startswith(b"HTTP/1.1 408")
            s.close()
        self.assertLess(time.time() - started, self.READ + 6)
        self.assertGreater(timed_out, 90)  # a reset may beat the 408 to a few of them

    def test_idle_connections_are_closed_within_the_idle_timeout(self):
        conns = [connect(self.server) for _ in range(200)]
        started = time.time()
        for s in conns:
            closed, got = closed_within(s, self.IDLE + 3 - (time.time() - started))
            self.assertTrue(closed)
            self.assertEqual(got, b"")
            s.close()
        self.assertGreater(time.time() - started, self.IDLE - 0.5)
        # And one kept alive after its answer.
        with connect(self.server) as s:
            s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            self.assertTrue(read_reply(s).startswith(b"HTTP/1.1 200"))
            answered = time.time()
            closed, _ = closed_within(s, self.IDLE + 3)
            self.assertTrue(closed)
            self.assertGreater(time.time() - answered, self.IDLE - 0.5)

    def test_a_reply_longer_than_the_idle_timeout_is_not_cut(self):
        # Not streamed: nothing crosses the connection until the reply is whole.
        body = json.dumps({"model": MODEL, "max_tokens": 400, "temperature": 0, "logit_bias": {"2": -100, "0": -100},
                           "messages": [{"role": "user", "content": "Count to a thousand."}]}).encode()
        with connect(self.server, timeout=120) as s:
            started = time.time()
            s.sendall(head("/v1/chat/completions", len(body)) + body)
            reply = read_reply(s)
        self.assertTrue(reply.startswith(b"HTTP/1.1 200"), reply[:200])
        self.assertEqual(json.loads(reply.split(b"\r\n\r\n", 1)[1])["usage"]["completion_tokens"], 400)
        print(f"a 400-token reply took {time.time() - started:.1f} s against an idle timeout of {self.IDLE} s")


class ConnectionCapTest(ServerTestCase):
    SERVER_ARGS = ("--max-connections", "20")

    def test_connections_over_the_cap_get_a_503_and_the_rest_are_served(self):
        conns = [connect(self.server) for _ in range(25)]
        time.sleep(0.5)
        held, refused = [], []
        for s in conns:
            s.settimeout(0.05)
            try:
                reply = s.recv(4096)
            except socket.timeout:
                held.append(s)
                continue
            refused.append(reply)
            s.close()
        # A connection the server is still closing (the start-up's /health poll) may count a moment.
        self.assertGreaterEqual(len(refused), 5)
        self.assertGreaterEqual(len(held), 19)
        for reply in refused:
            self.assertTrue(reply.startswith(b"HTTP/1.1 503"), reply[:200])
            self.assertIn(b"too_many_connections", reply)
            self.assertIn(b"Retry-After: 1", reply)
        for s in held[:5]:
            s.close()
        time.sleep(0.3)
        with connect(self.server, timeout=30) as s:
            s.sendall(head("/v1/chat/completions", len(CHAT)) + CHAT)
            self.assertTrue(read_reply(s).startswith(b"HTTP/1.1 200"))
        metrics = self.server.metrics()
        self.assertGreaterEqual(metrics["pagedchat_http_connections_refused_total"], 1)
        for s in held[5:]:
            s.close()
        print(f"25 connections at a cap of 20: {len(held)} held, {len(refused)} answered 503")


def flood(test, n):
    """Opens n connections at once, holds them 3 s, closes them, then asks for a reply. Returns
    how many were answered 503 and the server's CPU seconds while they were held."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 512), hard))
    before = cpu_seconds(test.server.proc.pid)
    conns, refused = [connect(test.server, timeout=5) for _ in range(n)], 0
    time.sleep(1)
    for s in conns:
        s.settimeout(0.05)
        try:
            refused += s.recv(4096).startswith(b"HTTP/1.1 503")
        except (socket.timeout, ConnectionResetError):
            pass
    time.sleep(2)
    spent = cpu_seconds(test.server.proc.pid) - before
    for s in conns:
        s.close()
    time.sleep(0.5)
    with connect(test.server, timeout=30) as s:  # and service goes on
        s.sendall(head("/v1/chat/completions", len(CHAT)) + CHAT)
        test.assertTrue(read_reply(s).startswith(b"HTTP/1.1 200"))
    return refused, spent


class DescriptorLimitTest(ServerTestCase):
    """Started with 128 descriptors: the default cap sits below them, so a flood of 400
    connections is answered (503 past the cap) rather than left hanging, and costs little CPU."""
    DESCRIPTORS = 128

    def test_a_flood_of_connections_is_refused_without_spinning(self):
        refused, spent = flood(self, 400)
        self.assertGreater(refused, 300)
        self.assertLess(spent, 1.5, f"the server used {spent:.2f} s of CPU in 3 s with 400 connections")
        print(f"400 connections at a limit of 128 descriptors: {refused} answered 503, {spent:.2f} s of server CPU")


class CapAboveTheDescriptorLimitTest(ServerTestCase):
    """A cap asked above what 128 descriptors allow: Qt 6.4 would spin on accept()'s EMFILE
    (4,200 failed accepts a second, measured), so the server lowers the cap and says so."""
    SERVER_ARGS = ("--max-connections", "1000")
    DESCRIPTORS = 128

    def test_the_cap_is_lowered_and_nothing_spins(self):
        self.assertTrue(any("--max-connections 1000 is above what the descriptor limit allows; using 64" in line
                            for line in self.server.log), "\n".join(self.server.log))
        refused, spent = flood(self, 200)
        self.assertGreater(refused, 100)
        self.assertLess(spent, 1.5, f"the server used {spent:.2f} s of CPU in 3 s with 200 connections")


if __name__ == "__main__":
    unittest.main(verbosity=2)
