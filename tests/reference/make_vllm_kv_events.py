#!/usr/bin/env python3
"""Golden vLLM KV event payloads, encoded by msgspec itself (the encoder vLLM uses), for
tests/remote/test_vllm_kv_events.cpp. Our own Structs with the field layout of vLLM's
(vllm/distributed/kv_events.py) in its old positional form and its current map form; what each
file holds is in tests/data/vllm_kv_events/README.md.

msgspec is not one of the project's reference packages (installer/install-deps.sh); make the
files in a throwaway environment:
    python3 -m venv /tmp/msgspec-venv && /tmp/msgspec-venv/bin/pip install msgspec==0.23.0
    /tmp/msgspec-venv/bin/python tests/reference/make_vllm_kv_events.py
writes tests/data/vllm_kv_events/*.msgpack. With --out DIR (how ctest runs every make_*.py) it
writes them under DIR and fails when they differ from the committed ones; without msgspec it
exits 77, which ctest counts as skipped.
"""
import argparse
import hashlib
import pathlib
import sys
from typing import Any

try:
    import msgspec
except ImportError:
    msgspec = None

DATA_DIR = pathlib.Path(__file__).resolve().parent.parent / "data" / "vllm_kv_events"
SKIPPED = 77

Hash = bytes | int


def sha(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def positional_batches():
    """The old layouts (array_like=True). Structs are declared here, once msgspec is known to be there."""

    # --- the oldest: positional, no medium, no data_parallel_rank ---------------------------
    class OldestBatch(msgspec.Struct, array_like=True, omit_defaults=True):
        ts: float
        events: list[Any]

    class OldestEvent(msgspec.Struct, array_like=True, omit_defaults=True, tag=True):
        pass

    class OldestBlockStored(OldestEvent, tag="BlockStored"):
        block_hashes: list[int]
        parent_block_hash: int | None
        token_ids: list[int]
        block_size: int
        lora_id: int | None

    class OldestBlockRemoved(OldestEvent, tag="BlockRemoved"):
        block_hashes: list[int]

    class OldestAllBlocksCleared(OldestEvent, tag="AllBlocksCleared"):
        pass

    # --- old: positional, with medium and data_parallel_rank --------------------------------
    class OldBatch(msgspec.Struct, array_like=True, omit_defaults=True):
        ts: float
        events: list[Any]
        data_parallel_rank: int | None = None

    class OldEvent(msgspec.Struct, array_like=True, omit_defaults=True, tag=True):
        pass

    class OldBlockStored(OldEvent, tag="BlockStored"):
        block_hashes: list[Hash]
        parent_block_hash: Hash | None
        token_ids: list[int]
        block_size: int
        lora_id: int | None
        medium: str | None

    class OldBlockRemoved(OldEvent, tag="BlockRemoved"):
        block_hashes: list[Hash]
        medium: str | None

    class OldAllBlocksCleared(OldEvent, tag="AllBlocksCleared"):
        pass

    return {
        "oldest_layout.msgpack": OldestBatch(
            ts=1718000000.5,
            events=[
                OldestBlockStored(block_hashes=[-7046029254386353131, 2**63 + 1, 42], parent_block_hash=None,
                                  token_ids=list(range(1, 13)), block_size=4, lora_id=None),
                OldestBlockRemoved(block_hashes=[42]),
                OldestAllBlocksCleared(),
            ]),
        "old_layout.msgpack": OldBatch(
            ts=1718000001.25,
            events=[
                OldBlockStored(block_hashes=[1001, 1002], parent_block_hash=1000, token_ids=list(range(100, 132)),
                               block_size=16, lora_id=3, medium="GPU"),
                OldBlockRemoved(block_hashes=[1000], medium="CPU"),
                OldAllBlocksCleared(),
            ],
            data_parallel_rank=1),
    }


def map_batches():
    """The current layout: maps tagged by "type", defaults omitted."""

    class NewBatch(msgspec.Struct, omit_defaults=True):
        ts: float
        events: list[Any]
        data_parallel_rank: int | None = None

    class NewEvent(msgspec.Struct, omit_defaults=True, tag=True):
        pass

    class NewBlockStored(NewEvent, tag="BlockStored"):
        block_hashes: list[Hash]
        parent_block_hash: Hash | None
        token_ids: list[int]
        block_size: int
        lora_id: int | None
        medium: str | None
        lora_name: str | None
        extra_keys: list[tuple[Any, ...] | None] | None = None
        group_idx: int | None = None
        kv_cache_spec_kind: str | None = None
        kv_cache_spec_sliding_window: int | None = None

    class NewBlockRemoved(NewEvent, tag="BlockRemoved"):
        block_hashes: list[Hash]
        medium: str | None
        group_idx: int | None = None

    class NewAllBlocksCleared(NewEvent, tag="AllBlocksCleared"):
        pass

    # A type a later vLLM might add: the reader must skip it and count it.
    class BlockPinned(NewEvent, tag="BlockPinned"):
        block_hashes: list[Hash]
        pinned_until: float

    return {
        "new_layout.msgpack": NewBatch(
            ts=1718000002.75,
            events=[
                NewBlockStored(block_hashes=[sha("block-1"), sha("block-2")], parent_block_hash=sha("block-0"),
                               token_ids=list(range(200, 232)), block_size=16, lora_id=None, medium="GPU",
                               lora_name=None),
                NewBlockStored(block_hashes=[sha("block-3")], parent_block_hash=None, token_ids=list(range(300, 316)),
                               block_size=16, lora_id=7, medium="CPU", lora_name="sql-adapter",
                               extra_keys=[("mm-hash-1", 0)], group_idx=1, kv_cache_spec_kind="sliding_window",
                               kv_cache_spec_sliding_window=128),
                NewBlockRemoved(block_hashes=[sha("block-1")], medium="GPU", group_idx=1),
                NewBlockRemoved(block_hashes=[sha("block-3")], medium=None),
                NewAllBlocksCleared(),
            ]),
        "unknown_event.msgpack": NewBatch(
            ts=1718000003.0,
            events=[
                NewBlockStored(block_hashes=[5], parent_block_hash=4, token_ids=list(range(400, 416)), block_size=16,
                               lora_id=None, medium="GPU", lora_name=None),
                BlockPinned(block_hashes=[5], pinned_until=1718000100.0),
                NewBlockRemoved(block_hashes=[5], medium="GPU"),
            ],
            data_parallel_rank=2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, help="write here and compare with the committed files")
    args = parser.parse_args()
    if msgspec is None:
        print("make_vllm_kv_events: msgspec is not installed here; the committed files are not re-checked "
              "(see this script's docstring)")
        return SKIPPED if args.out else 1
    out_dir = args.out / "vllm_kv_events" if args.out else DATA_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    encoder = msgspec.msgpack.Encoder()
    differ = []
    for name, batch in {**positional_batches(), **map_batches()}.items():
        payload = encoder.encode(batch)
        (out_dir / name).write_bytes(payload)
        if args.out and (DATA_DIR / name).read_bytes() != payload:
            differ.append(name)
        print(f"{out_dir / name}: {len(payload)} bytes")
    if differ:
        print(f"make_vllm_kv_events: msgspec {msgspec.__version__} encodes {', '.join(differ)} differently "
              f"from tests/data/vllm_kv_events", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
