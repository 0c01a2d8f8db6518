"""SIGTERM and SIGINT end the real pagedchat-server gracefully (issue 23, item 7): it stops
accepting at once, requests in flight that finish within --shutdown-timeout end normally, the
rest are cut short with an error event and [DONE] (streamed) or a 503 (whole), and the process
exits 0. Clients count their [DONE]s. Loopback only, bounded. Run by ctest
(server_test_graceful_shutdown)."""
import http.client
import json
import os
import signal
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess  # noqa: E402

MODEL = "SmolLM2-135M-Instruct.Q4_1"
# The short replies must finish within it: under the sanitizers generation is several times slower.
GRACE = 20 if os.environ.get("PAGEDCHAT_SANITIZED") else 3
NO_EOS = {"2": -100, "0": -100}


class Client(threading.Thread):
    """One request; remembers its status, the streamed events and the [DONE]s it read."""

    def __init__(self, port, max_tokens, stream):
        super().__init__(daemon=True)
        self.port, self.max_tokens, self.stream = port, max_tokens, stream
        self.status, self.events, self.done, self.body, self.error = None, [], 0, None, None
        self.first_token = threading.Event()

    def run(self):
        body = {"model": MODEL, "max_tokens": self.max_tokens, "temperature": 0, "logit_bias": NO_EOS, "stream": self.stream,
                "messages": [{"role": "user", "content": "Tell me a long story."}]}
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
            r = conn.getresponse()
            self.status = r.status
            if not self.stream:
                self.first_token.set()
                self.body = json.loads(r.read())
                return
            for raw in r:
                line = raw.decode().strip()
                if line == "data: [DONE]":
                    self.done += 1
                elif line.startswith("data: "):
                    self.events.append(json.loads(line[6:]))
                    if len(self.events) >= 2:
                        self.first_token.set()
        except Exception as e:  # noqa: BLE001 - what the client saw is the finding
            self.error = repr(e)
        finally:
            self.first_token.set()

    def finish_reasons(self):
        return [c.get("finish_reason") for e in self.events for c in e.get("choices", []) if c.get("finish_reason")]

    def error_code(self):
        errors = [e["error"]["code"] for e in self.events if "error" in e]
        return errors[0] if errors else None


class GracefulShutdownTest(unittest.TestCase):
    def run_shutdown(self, signal_number):
        server = ServerProcess("--shutdown-timeout", str(GRACE))
        try:
            short = [Client(server.port, 24, True) for _ in range(4)]
            long = [Client(server.port, 2000, True) for _ in range(3)]
            whole_long = Client(server.port, 2000, False)
            clients = short + long + [whole_long]
            for c in clients:
                c.start()
            for c in short + long:
                self.assertTrue(c.first_token.wait(60))
            sent = time.time()
            server.proc.send_signal(signal_number)
            time.sleep(0.5)
            with self.assertRaises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", server.port), timeout=5).close()
            rc = server.proc.wait(GRACE + 10)
            took = time.time() - sent
            for c in clients:
                c.join(10)
                self.assertFalse(c.is_alive())
                self.assertIsNone(c.error, c.error)
                self.assertEqual(c.status, 200 if c.stream else 503)
            self.assertEqual(rc, 0, "\n".join(server.log))
            self.assertLess(took, GRACE + 3)
            for c in short:  # finished within the grace period, normally
                self.assertEqual(c.done, 1)
                self.assertEqual(c.finish_reasons(), ["length"])
                self.assertIsNone(c.error_code())
            for c in long:  # cut short, told why, and closed properly
                self.assertEqual(c.done, 1)
                self.assertEqual(c.finish_reasons(), [])
                self.assertEqual(c.error_code(), "shutting_down")
            self.assertEqual(whole_long.body["error"]["code"], "shutting_down")
            dones = sum(c.done for c in short + long)
            print(f"signal {signal_number}: exit {rc} after {took:.1f} s; {dones} of {len(short + long)} streams ended with [DONE]")
        finally:
            server.stop()

    def test_sigterm(self):
        self.run_shutdown(signal.SIGTERM)

    def test_sigint(self):
        self.run_shutdown(signal.SIGINT)


if __name__ == "__main__":
    unittest.main(verbosity=2)
