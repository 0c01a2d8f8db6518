"""A bounded load test of the real server over loopback with the official `openai` client:
64 concurrent streaming clients, 3 short greedy requests each. Every streamed reply must equal
the non-streamed reply to the same prompt (no token lost or duplicated under batching); some
clients hang up midway and must not leak blocks; afterwards the pool holds no block in use.
Prints requests/s and p50/p99 time to first token. Run by ctest (server_test_server_load)."""
import asyncio
import os
import statistics
import sys
import time
import unittest

import openai

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess  # noqa: E402

NUM_CLIENTS = 64
REQUESTS_PER_CLIENT = 3
MAX_TOKENS = 12
SYSTEM = "You are a helpful assistant. Answer in one short sentence."
QUESTIONS = [
    "What is a cat?", "Why is the sky blue?", "What is 7 times 6?", "Name a large city.",
    "What do bees make?", "What is ice?", "Who wrote Hamlet?", "What is a planet?",
]


def messages(q):
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}]


class ServerLoadTest(unittest.TestCase):
    def test_concurrent_streaming_clients(self):
        server = ServerProcess()
        try:
            asyncio.run(self.run_load(server))
        finally:
            server.stop()

    async def run_load(self, server):
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=300)
        model = (await client.models.list()).data[0].id

        # The non-streamed greedy replies, the reference the streams must equal.
        reference = {}
        for q in QUESTIONS:
            r = await client.chat.completions.create(model=model, messages=messages(q), temperature=0, max_tokens=MAX_TOKENS)
            reference[q] = r.choices[0].message.content
            self.assertTrue(reference[q])

        ttfts, mismatches, completed, hung_up = [], [], 0, 0

        async def one_request(c, i):
            nonlocal completed, hung_up
            q = QUESTIONS[(c + i) % len(QUESTIONS)]
            hang_up = c % 8 == 0 and i == 1  # 8 clients hang up in their second request
            t0 = time.perf_counter()
            stream = await client.chat.completions.create(model=model, messages=messages(q), temperature=0,
                                                          max_tokens=MAX_TOKENS, stream=True)
            text, first, chunks = "", None, 0
            async for chunk in stream:
                chunks += 1
                for ch in chunk.choices:
                    if ch.delta.content:
                        if first is None:
                            first = time.perf_counter() - t0
                        text += ch.delta.content
                if hang_up and chunks == 3:
                    await stream.close()
                    hung_up += 1
                    return
            if first is not None:
                ttfts.append(first)
            if text != reference[q]:
                mismatches.append((q, text, reference[q]))
            completed += 1

        async def one_client(c):
            for i in range(REQUESTS_PER_CLIENT):
                await one_request(c, i)

        t0 = time.perf_counter()
        await asyncio.gather(*(one_client(c) for c in range(NUM_CLIENTS)))
        elapsed = time.perf_counter() - t0
        await client.close()

        # The pool settles: nothing in use, nothing running (cached prefix blocks may stay).
        deadline = time.time() + 15
        while time.time() < deadline:
            m = server.metrics()
            if m["pagedchat_kv_blocks_used"] == 0 and m["pagedchat_requests_running"] == 0 and m["pagedchat_requests_waiting"] == 0:
                break
            await asyncio.sleep(0.05)

        ttfts.sort()
        p50 = statistics.median(ttfts)
        p99 = ttfts[min(len(ttfts) - 1, int(round(0.99 * (len(ttfts) - 1))))]
        print(f"\nload: {NUM_CLIENTS} clients x {REQUESTS_PER_CLIENT} streamed requests (max_tokens {MAX_TOKENS}, greedy): "
              f"{completed} completed, {hung_up} hung up, {elapsed:.1f} s, {completed / elapsed:.2f} requests/s, "
              f"TTFT p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms; "
              f"preemptions {m['pagedchat_preemptions_total']:.0f}, prefix-cache hit tokens {m['pagedchat_prefix_cache_hit_tokens_total']:.0f}, "
              f"blocks used/cached/free after: {m['pagedchat_kv_blocks_used']:.0f}/{m['pagedchat_kv_blocks_cached']:.0f}/"
              f"{m['pagedchat_kv_blocks_free']:.0f}", flush=True)
        self.assertEqual(mismatches, [], "streamed replies differ from the non-streamed ones")
        self.assertEqual(completed + hung_up, NUM_CLIENTS * REQUESTS_PER_CLIENT)
        self.assertEqual(hung_up, NUM_CLIENTS // 8)
        self.assertEqual(m["pagedchat_kv_blocks_used"], 0, "blocks still in use after the run")
        self.assertEqual(m["pagedchat_requests_running"], 0)
        self.assertGreaterEqual(m["pagedchat_http_requests_aborted_total"], 1)
        self.assertTrue(server.alive())


if __name__ == "__main__":
    unittest.main(verbosity=2)
