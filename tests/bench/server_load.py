"""The server under a long, rough load: many streaming clients for a fixed time, n samples per
request, some clients hanging up midway. It counts what a user would count: failures (an
exception or a status other than 200 and 429), requests the server's admission cap turned away
(429 with Retry-After: counted, then retried when it says), tokens lost or duplicated (each
choice's streamed tokens, one logprobs entry each, against usage.completion_tokens), greedy text
that changed under load (a fixed greedy request repeated throughout against its reply on an idle
server), KV blocks still in use after, and the server's RSS before and after. Loopback only; it
stops by itself.

  python tests/bench/server_load.py --server build/app/server/pagedchat-server \\
      --model ~/.cache/pagedchat/models/SmolLM2-135M-Instruct.Q4_1.gguf [--clients 128] [--seconds 120] [--n 4] [--rounds R]

Prints one table row (Markdown) per round for docs/benchmarks.md; exits 1 when any check fails."""
import argparse
import asyncio
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

import httpx
import openai

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from server_process import rss_mib  # noqa: E402

QUESTIONS = ["What is a cat?", "Why is the sky blue?", "What is 7 times 6?", "Name a large city.", "What do bees make?",
             "What is ice?", "Who wrote Hamlet?", "What is a planet?", "Tell me about rivers.", "How do birds fly?"]
GREEDY = [{"role": "user", "content": "Name three colours and say why you like them."}]


def metrics(url):
    with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
        return {k: float(v) for k, v in (line.split() for line in r.read().decode().splitlines() if line and not line.startswith("#"))}


def start_server(args):
    proc = subprocess.Popen([args.server, "--model", args.model, "--port", "0", "--threads", str(args.threads),
                             "--max-connections", "1024", "--max-active", str(args.max_active)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    port, lines = None, []
    for line in proc.stdout:
        lines.append(line)
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            port = int(m.group(1))
        if "model loaded" in line:
            break
    if port is None:
        sys.exit("the server did not start:\n" + "".join(lines))
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    return proc, f"http://127.0.0.1:{port}"


async def run(args, url):
    http = httpx.AsyncClient(limits=httpx.Limits(max_connections=args.clients * 2, max_keepalive_connections=args.clients * 2),
                             timeout=httpx.Timeout(600))
    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="x", max_retries=0, http_client=http)
    model = (await client.models.list()).data[0].id

    async def greedy_text():
        r = await client.chat.completions.create(model=model, messages=GREEDY, temperature=0, max_tokens=args.max_tokens)
        return r.choices[0].message.content

    reference = await greedy_text()
    stats = {"requests": 0, "completed": 0, "hung_up": 0, "busy": 0, "failures": 0, "lost": 0, "tokens": 0, "greedy": 0,
             "greedy_changed": 0}
    ttfts, errors = [], []
    deadline = time.time() + args.seconds
    rng = random.Random(args.seed)

    async def one_request(c):
        stats["requests"] += 1
        if rng.random() < 0.1:  # the greedy probe, whole
            text = await greedy_text()
            stats["greedy"] += 1
            stats["greedy_changed"] += text != reference
            stats["completed"] += 1
            return
        hang_up = rng.random() < args.disconnect
        t0 = time.perf_counter()
        stream = await client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": rng.choice(QUESTIONS)}], temperature=0.8, seed=rng.randrange(1 << 30),
            max_tokens=args.max_tokens, n=args.n, stream=True, logprobs=True, stream_options={"include_usage": True})
        received, first, chunks, usage = [0] * args.n, None, 0, None
        async for chunk in stream:
            chunks += 1
            if chunk.usage:
                usage = chunk.usage
            for ch in chunk.choices:
                if ch.logprobs and ch.logprobs.content:
                    received[ch.index] += len(ch.logprobs.content)
                    if first is None:
                        first = time.perf_counter() - t0
            if hang_up and chunks >= 4:
                await stream.close()
                stats["hung_up"] += 1
                return
        if first is not None:
            ttfts.append(first)
        stats["tokens"] += sum(received)
        if usage is None or usage.completion_tokens != sum(received):
            stats["lost"] += abs((usage.completion_tokens if usage else 0) - sum(received)) or 1
        stats["completed"] += 1

    async def one_client(c):
        while time.time() < deadline:
            try:
                await one_request(c)
            except openai.RateLimitError as e:
                # The server's admission cap (--max-active): a 429 that says when to come back
                # (Retry-After), which a client honours, as the openai client does by default.
                stats["busy"] += 1
                await asyncio.sleep(float(e.response.headers.get("retry-after", "1")))
            except Exception as e:  # noqa: BLE001 - every failure is counted and shown
                stats["failures"] += 1
                if len(errors) < 5:
                    errors.append(repr(e)[:300])

    t0 = time.perf_counter()
    await asyncio.gather(*(one_client(c) for c in range(args.clients)))
    elapsed = time.perf_counter() - t0
    await client.close()
    return stats, ttfts, errors, elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--clients", type=int, default=128)
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--disconnect", type=float, default=0.15, help="share of requests whose client hangs up midway")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1, help="loads run one after another on the same server")
    ap.add_argument("--max-active", type=int, default=256, help="the server's admission cap (its --max-active)")
    args = ap.parse_args()

    proc, url = start_server(args)
    rounds = []
    try:
        rss_before = rss_mib(proc.pid)
        # Rounds on one server: RSS that keeps growing round after round would be a leak; a
        # first-round rise that then stays is the allocator's high-water mark.
        for _ in range(args.rounds):
            stats, ttfts, errors, elapsed = asyncio.run(run(args, url))
            deadline = time.time() + 30
            m = metrics(url)
            while time.time() < deadline and (m["pagedchat_kv_blocks_used"] or m["pagedchat_requests_running"] or m["pagedchat_requests_waiting"]):
                time.sleep(0.2)
                m = metrics(url)
            rounds.append((stats, ttfts, errors, m, rss_mib(proc.pid)))
    finally:
        proc.terminate()
        proc.wait(30)
    ok = proc.returncode == 0
    for stats, ttfts, errors, m, rss_after in rounds:
        ok &= report(args, stats, ttfts, errors, m, rss_before, rss_after, proc.returncode)
        rss_before = rss_after
    sys.exit(0 if ok else 1)


def report(args, stats, ttfts, errors, m, rss_before, rss_after, returncode):
    ttfts.sort()
    p50 = statistics.median(ttfts) if ttfts else float("nan")
    p99 = ttfts[min(len(ttfts) - 1, int(round(0.99 * (len(ttfts) - 1))))] if ttfts else float("nan")
    print(f"{args.clients} clients, n={args.n}, {args.seconds:.0f} s, max_tokens {args.max_tokens}, {args.disconnect:.0%} hang up: "
          f"{stats}; TTFT p50 {p50:.2f} s p99 {p99:.2f} s; RSS {rss_before:.0f} -> {rss_after:.0f} MiB; "
          f"blocks used after {m['pagedchat_kv_blocks_used']:.0f}; server exit {returncode}")
    for e in errors:
        print("  failure:", e)
    print(f"| {time.strftime('%Y-%m-%d')} | {args.clients} x n={args.n}, {args.seconds:.0f} s | {stats['requests']} | {stats['completed']} | "
          f"{stats['hung_up']} | {stats['busy']} | {stats['failures']} | {stats['tokens']} | {stats['lost']} | {stats['greedy']} / {stats['greedy_changed']} | "
          f"{p50:.1f} s / {p99:.1f} s | {rss_before:.0f} -> {rss_after:.0f} MiB | {m['pagedchat_kv_blocks_used']:.0f} |")
    return stats["failures"] == 0 and stats["lost"] == 0 and stats["greedy_changed"] == 0 and m["pagedchat_kv_blocks_used"] == 0


if __name__ == "__main__":
    main()
