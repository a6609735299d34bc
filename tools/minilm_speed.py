#!/usr/bin/env python3
"""PyTorch's speed on chapter 15's measurement, for the chapter's comparison.

The same model (all-MiniLM-L6-v2, run by Hugging Face transformers' BertModel
on PyTorch), the same 50 sentences of book/data/ch15-corpus.txt, embedded one
at a time (mean pooling, L2 normalisation) on one thread, best of 10 passes:
what `cargo xtask model --data` measures for the crate. Not run in CI (it needs
PyTorch). `cargo xtask model --data` runs it in the same run as the crate's
measurement, with the Python that TORCH_PYTHON names:

    python3 -m venv /tmp/venv-torch
    /tmp/venv-torch/bin/pip install torch transformers
    TORCH_PYTHON=/tmp/venv-torch/bin/python cargo xtask model --data

It writes book/data/ch15-speed-pytorch.tsv, headed by the run (the book
refuses a comparison of two runs), with the versions.
"""
import os
import time

import torch
import torch.nn.functional as F
import transformers
from transformers import BertModel, BertTokenizer

from measuring import run_header

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MODEL = os.path.join(ROOT, "target", "models", "all-MiniLM-L6-v2")
OUT = os.path.join(ROOT, "book", "data", "ch15-speed-pytorch.tsv")
PASSES = 10


def main():
    torch.set_num_threads(1)
    path = os.path.join(ROOT, "book", "data", "ch15-corpus.txt")
    with open(path, encoding="utf-8") as f:
        sentences = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    tokenizer = BertTokenizer(os.path.join(MODEL, "vocab.txt"), do_lower_case=True)
    model = BertModel.from_pretrained(MODEL, attn_implementation="sdpa").eval()
    ids = [tokenizer(s, return_tensors="pt")["input_ids"] for s in sentences]

    def embed(x):
        hidden = model(input_ids=x).last_hidden_state[0]  # n×d
        return F.normalize(hidden.mean(0), dim=0)

    best = float("inf")
    with torch.inference_mode():
        for x in ids:  # warm up
            embed(x)
        for _ in range(PASSES):
            start = time.perf_counter()
            for x in ids:
                embed(x)
            best = min(best, time.perf_counter() - start)
    per_second = len(ids) / best
    with open(OUT, "w") as out:
        out.write(
            f"# {run_header()}; statistic: best of {PASSES}; one thread, by tools/minilm_speed.py "
            f"(torch {torch.__version__}, transformers {transformers.__version__}): "
            f"the {len(ids)} corpus sentences embedded one at a time, the best of {PASSES} passes\n"
        )
        out.write("implementation\tsentences_per_second\n")
        out.write(f"pytorch\t{per_second:.1f}\n")
    print(f"pytorch: {per_second:.1f} sentence embeddings per second; wrote {OUT}")


if __name__ == "__main__":
    main()
