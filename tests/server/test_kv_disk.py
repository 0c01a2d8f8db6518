"""The disk tier on the API (`pagedchat-server --kv-disk DIR`): a restarted server reads a prompt
it answered before from disk, replies as before (greedy) and says so in cached_tokens; a server
killed with SIGKILL right after answering leaves only whole blocks (and temporary files the next
start removes), and the next one still replies the same; a model file replaced under the same name
reads nothing written for the old one, and the log says so. Run by ctest (server_test_kv_disk)."""
import glob
import http.client
import json
import os
import shutil
import signal
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess  # noqa: E402

SYSTEM = ("You are the assistant of a small public library in a coastal town. You answer questions about "
          "opening hours, borrowing rules, the reading room, the children's corner and the local history "
          "archive. You are brief and friendly, and when you do not know something you say so and suggest "
          "asking at the front desk.")


def chat(server, question):
    body = {"model": "m", "temperature": 0, "max_tokens": 12,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]}
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    data = json.loads(r.read())
    conn.close()
    if r.status != 200:
        raise AssertionError(f"status {r.status}: {data}")
    return data["choices"][0]["message"]["content"], data["usage"]


def cached(usage):
    return (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)


class TestKvDisk(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="pagedchat-kv-disk-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def blocks(self):
        return glob.glob(os.path.join(self.dir, "*", "*.kvb"))

    def test_a_restarted_server_reads_the_prompt_from_disk(self):
        first = ServerProcess("--model-id", "m", "--kv-disk", self.dir)
        try:
            text, usage = chat(first, "When do you open on Sundays?")
        finally:
            first.stop()
        self.assertEqual(cached(usage), 0)
        self.assertGreater(len(self.blocks()), 3)
        second = ServerProcess("--model-id", "m", "--kv-disk", self.dir)
        try:
            again, usage2 = chat(second, "When do you open on Sundays?")
            metrics = second.metrics()
        finally:
            second.stop()
        self.assertEqual(metrics["pagedchat_kv_disk_hit_tokens_total"], cached(usage2))
        self.assertEqual(metrics["pagedchat_kv_disk_read_blocks_total"], cached(usage2) // 16)
        self.assertGreater(metrics["pagedchat_kv_disk_blocks"], 3)
        self.assertEqual(again, text)
        self.assertFalse(any("is not the file" in line for line in second.log), "the same file is not said changed")
        full = (usage2["prompt_tokens"] - 1) // 16 * 16
        self.assertEqual(cached(usage2), full, "every full block of the prompt read from disk")

    def test_a_killed_server_leaves_blocks_the_next_one_reads(self):
        first = ServerProcess("--model-id", "m", "--kv-disk", self.dir)
        try:
            text, _ = chat(first, "Can children borrow books?")
        finally:
            first.proc.send_signal(signal.SIGKILL)
            first.proc.wait(10)
        second = ServerProcess("--model-id", "m", "--kv-disk", self.dir)
        try:
            again, usage = chat(second, "Can children borrow books?")
        finally:
            second.stop()
        self.assertEqual(again, text)  # whatever the kill left on disk (whole files only), the reply is the same
        self.assertEqual(glob.glob(os.path.join(self.dir, "*", f"*.{first.proc.pid}.*.tmp")), [],
                         "a dead writer's temporary files are removed at the next start")

    def test_a_replaced_model_reads_nothing_of_the_old_one(self):
        model = os.path.join(self.dir, "model.gguf")
        shutil.copy(os.environ["PAGEDCHAT_TEST_MODEL"], model)
        disk = os.path.join(self.dir, "kv")
        first = ServerProcess("--model-id", "m", "--model", model, "--kv-disk", disk)
        try:
            text, _ = chat(first, "Is there a reading room?")
        finally:
            first.stop()
        # Another file under the same name: the same model with one metadata byte changed (its name),
        # which is all it takes for the blocks' namespace to differ.
        with open(model, "r+b") as f:
            head = bytearray(f.read(1 << 16))
            at = head.find(b"Smollm2")
            self.assertGreater(at, 0)
            head[at] = ord("T")
            f.seek(0)
            f.write(head)
        second = ServerProcess("--model-id", "m", "--model", model, "--kv-disk", disk)
        try:
            again, usage = chat(second, "Is there a reading room?")
        finally:
            second.stop()
        self.assertEqual(cached(usage), 0, "nothing written for the old file is read")
        self.assertEqual(again, text)  # the same weights: the same reply, computed
        said = [line for line in second.log if "is not the file whose blocks were written there before" in line]
        self.assertEqual(len(said), 1, "the replaced file is said once in the log:\n" + "\n".join(second.log))
        self.assertIn(model, said[0])
        self.assertFalse(any("is not the file" in line for line in first.log), "a first run says nothing")


if __name__ == "__main__":
    unittest.main()
