#!/usr/bin/env python3
"""Hugging Face transformers generate() on the same random-weight model shape as
`pagedchat-cli bench throughput --random-weights SHAPE`, in bf16 on the GPU, with static batches
(default 64): the baseline that continuous batching and paged KV should beat.

The workload comes from the CLI (--write-workload PATH: one {"input_len", "output_len"} per
line), so both engines serve the same request lengths. Prompts are random token ids (fixed seed);
generation is greedy with EOS disabled, so every request produces its full length. A static batch
runs until its longest request is done: padding and the extra tokens count as time, not as output,
which is exactly the cost of static batching. Weights are transformers' own random init (values do
not change the speed). Prints one JSON line: requests, output tokens, wall seconds, output tok/s.

    hf_baseline.py --shape llama-3.2-1b --workload fixed.jsonl [--batch-size 64] [--seed 1]
"""
import argparse
import json
import sys
import time

SHAPES = {
    # The published configs, as engine/model/random_model.cpp builds them.
    "llama-3.2-1b": dict(num_hidden_layers=16, hidden_size=2048, num_attention_heads=32, num_key_value_heads=8,
                         intermediate_size=8192, rope_factor=32.0, tie_word_embeddings=True),
    "llama-3.1-8b": dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                         intermediate_size=14336, rope_factor=8.0, tie_word_embeddings=False),
}


def build_model(shape):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    s = dict(SHAPES[shape])
    rope_factor = s.pop("rope_factor")
    config = LlamaConfig(
        vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
        rope_scaling={"rope_type": "llama3", "factor": rope_factor, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
        bos_token_id=None, eos_token_id=None, pad_token_id=0, torch_dtype="bfloat16", **s)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.eval()
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shape", default="llama-3.2-1b", choices=sorted(SHAPES))
    p.add_argument("--workload", required=True, help="JSON lines from pagedchat-cli bench throughput --write-workload")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--label", default="")
    args = p.parse_args()

    import torch

    jobs = [json.loads(line) for line in open(args.workload) if line.strip()]
    model = build_model(args.shape)
    gen = torch.Generator(device="cpu").manual_seed(args.seed)
    vocab = model.config.vocab_size

    def run_batch(batch):
        width = max(j["input_len"] for j in batch)
        new = max(j["output_len"] for j in batch)
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, j in enumerate(batch):  # left padding, as decoder-only generation needs
            n = j["input_len"]
            ids[i, width - n:] = torch.randint(1, vocab, (n,), generator=gen)
            mask[i, width - n:] = 1
        with torch.inference_mode():
            model.generate(input_ids=ids.cuda(), attention_mask=mask.cuda(), max_new_tokens=new, min_new_tokens=new,
                           do_sample=False, pad_token_id=0, eos_token_id=None)

    run_batch([{"input_len": 16, "output_len": 4}] * 2)  # warm-up: kernels, allocator
    torch.cuda.synchronize()
    start = time.perf_counter()
    for b in range(0, len(jobs), args.batch_size):
        run_batch(jobs[b:b + args.batch_size])
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    output = sum(j["output_len"] for j in jobs)
    print(json.dumps({"bench": "hf_generate", "workload": args.label, "shape": args.shape, "batch_size": args.batch_size,
                      "requests": len(jobs), "output_tokens": output, "wall_s": round(wall, 3),
                      "output_tok_s": round(output / wall, 2), "requests_s": round(len(jobs) / wall, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
