"""What llama.cpp's llama-imatrix measures on the default model, stored small for test_quantize
(tests/data/llamacpp/imatrix_smollm2.json): our ImportanceCollector must measure the same
statistic. Run by hand after installer/build-llama-server.sh (which builds llama-imatrix):

    ~/.cache/pagedchat/venv/bin/python tests/reference/llamacpp_imatrix_reference.py

llama-quantize turns SmolLM2-135M-Instruct Q4_1 into F16 (test_quantize makes the same bytes with
ours, and checks that it did: the sha256 is kept), so both engines multiply the same weights in
float; llama-imatrix runs that over the first 4 chunks of 512 tokens of Debian's
GPL-3 text on 2 threads (4 chunks make one batch of 2048 that splits into whole chunks; with 3,
a few rows landed in a piece under 16 rows, which llama-imatrix does not count); for each matrix the file keeps its token count and, of the per-column
weights (sums / count), the mean, the maximum and the column holding it (a loud channel: what an
importance matrix is for). Its final perplexity is kept too.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import gguf

REPO = Path(__file__).resolve().parent.parent.parent
BIN = Path.home() / ".cache/pagedchat/llama.cpp/build/bin/llama-imatrix"
QUANTIZE = BIN.parent / "llama-quantize"
MODEL = Path.home() / ".cache/pagedchat/models/SmolLM2-135M-Instruct.Q4_1.gguf"
TEXT = "/usr/share/common-licenses/GPL-3"
CHUNKS, CHUNK = 4, 512


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "imatrix.gguf"
        f16 = Path(tmp) / "f16.gguf"
        subprocess.run([str(QUANTIZE), "--allow-requantize", str(MODEL), str(f16), "F16", "2"], check=True,
                       capture_output=True)
        f16_sha256 = hashlib.sha256(f16.read_bytes()).hexdigest()
        run = subprocess.run([str(BIN), "-m", str(f16), "-f", TEXT, "-o", str(out), "-c", str(CHUNK),
                              "--chunks", str(CHUNKS), "-t", "2"], capture_output=True, text=True, check=True)
        ppl = float(re.search(r"Final estimate: PPL = ([0-9.]+)", run.stdout + run.stderr).group(1))
        reader = gguf.GGUFReader(str(out))
        sums, counts = {}, {}
        for t in reader.tensors:
            if t.name.endswith(".in_sum2"):
                sums[t.name[:-8]] = np.array(t.data, dtype=np.float64).reshape(-1)
            elif t.name.endswith(".counts"):
                counts[t.name[:-7]] = float(np.array(t.data).reshape(-1)[0])
    entries = {}
    for name in sorted(sums):
        w = sums[name] / counts[name]
        entries[name] = {"count": counts[name], "mean": float(w.mean()), "max": float(w.max()), "argmax": int(w.argmax())}
    path = REPO / "tests/data/llamacpp/imatrix_smollm2.json"
    path.write_text(json.dumps({"model": MODEL.name, "f16_sha256": f16_sha256, "text": TEXT, "chunks": CHUNKS, "chunk": CHUNK,
                                "perplexity": ppl, "entries": entries}, indent=0) + "\n")
    print(f"wrote {path}: {len(entries)} entries, perplexity {ppl}")


if __name__ == "__main__":
    main()
