"""What llama.cpp's llama-quantize writes for make_quantize.py's models, stored as sha256s in
tests/data/llamacpp/quantize.json for test_quantize (which also runs llama-quantize itself when
installer/build-llama-server.sh has built it, and compares bytes). Run by hand:

    ~/.cache/pagedchat/venv/bin/python tests/reference/llamacpp_quantize_reference.py

Each case is a source, a file type and an optional importance matrix; llama-quantize runs in the
sources' folder with relative names (the output records the importance matrix's path as given,
so relative names keep the bytes the same on every machine), on 2 threads (the output does not
depend on the thread count). The sources' own sha256s are stored too, so a fixture that no longer
writes the same bytes (another numpy or gguf) is reported as such, not as a quantizer bug.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
LLAMA_QUANTIZE = Path.home() / ".cache/pagedchat/llama.cpp/build/bin/llama-quantize"
ALL_TYPES = ["F32", "F16", "BF16", "Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S", "Q5_1", "Q5_0", "Q4_K_M", "Q4_K_S",
             "Q4_1", "Q4_0", "IQ4_NL", "IQ4_XS", "Q3_K_L", "Q3_K_M", "Q3_K_S", "Q2_K"]
CASES = (
    [("llama16-f16.gguf", t, None) for t in ALL_TYPES]
    + [("llama16-f16.gguf", t, "imatrix-llama16.gguf")
       for t in ["Q2_K_S", "Q2_K", "Q3_K_M", "Q4_K_M", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q5_K_M", "Q6_K", "IQ4_NL",
                 "IQ4_XS"]]
    + [("llama16-f16.gguf", "Q4_K_M", "imatrix-llama16.dat")]
    + [("tied-bf16.gguf", t, None) for t in ["Q4_K_M", "Q2_K", "Q3_K_L", "Q8_0", "Q4_0", "Q6_K", "F16", "IQ4_XS"]]
    + [("moe8-f32.gguf", t, None)
       for t in ["Q4_K_M", "Q3_K_M", "Q2_K", "Q5_K_M", "Q8_0", "Q4_K_S", "BF16", "IQ4_XS", "MXFP4_MOE"]]
    + [("moe8-f32.gguf", t, "imatrix-moe8.gguf") for t in ["Q4_K_M", "Q2_K_S", "Q3_K_S", "IQ4_NL"]]
)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    if not LLAMA_QUANTIZE.exists():
        sys.exit(f"{LLAMA_QUANTIZE} is missing: run installer/build-llama-server.sh first")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, str(HERE / "make_quantize.py"), "--out", tmp], check=True)
        folder = Path(tmp) / "quantize"
        sources = {p.name: sha256(p) for p in sorted(folder.iterdir())}
        cases = []
        for source, file_type, imatrix in CASES:
            cmd = [str(LLAMA_QUANTIZE)] + (["--imatrix", imatrix] if imatrix else []) + [source, "out.gguf", file_type, "2"]
            subprocess.run(cmd, cwd=folder, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            cases.append({"source": source, "type": file_type, "imatrix": imatrix, "sha256": sha256(folder / "out.gguf")})
            os.remove(folder / "out.gguf")
            print(source, file_type, imatrix or "", cases[-1]["sha256"][:16])
    out = REPO / "tests/data/llamacpp/quantize.json"
    out.write_text(json.dumps({"llama_cpp": "llama-cpp-python 0.3.36 sdist, llama-quantize", "sources": sources,
                               "cases": cases}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
