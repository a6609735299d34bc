#!/usr/bin/env python3
"""Golden values for chapter 15, from PyTorch and Hugging Face transformers.

The pretrained model (all-MiniLM-L6-v2) is run by transformers' own BertModel
and its pure-Python BertTokenizer, independent of the crate and of the Rust
`tokenizers` library the crate uses. Not run in CI (it needs PyTorch). To
regenerate, from the repository root:

    cargo xtask model                     # the model, into target/models/
    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch transformers
    /tmp/torchenv/bin/python tools/minilm_golden.py

It writes tests/golden/minilm.txt, which tests/pretrained_golden.rs loads:
the token ids of three sentences, every head's attention weights in every
layer for the first two, and the sentence embeddings of the first ten
sentences of book/data/ch15-corpus.txt, computed as one padded batch. The
tests require equal ids and values within 1e-5.

Format: as tools/golden.py, a comment line, then for each tensor a line
`NAME ROWS COLS` followed by ROWS lines of COLS numbers.
"""
import os

import torch
import torch.nn.functional as F
from transformers import BertModel, BertTokenizer

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MODEL = os.path.join(ROOT, "target", "models", "all-MiniLM-L6-v2")
OUT = os.path.join(ROOT, "tests", "golden", "minilm.txt")

ATTENTION_SENTENCES = [
    "The trophy did not fit in the suitcase because it was too big.",
    "Attention is all you need.",
]
# Accents, a dash, an emoji, a number and a hyphen: the tokenizer's corners.
TRICKY = "Café naïveté — über-cool 3.14 🙂!"


def corpus():
    path = os.path.join(ROOT, "book", "data", "ch15-corpus.txt")
    with open(path, encoding="utf-8") as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def write(out, name, matrix):
    rows, cols = matrix.shape
    out.write(f"{name} {rows} {cols}\n")
    for row in matrix.tolist():
        out.write(" ".join(f"{x:.9g}" for x in row) + "\n")


def main():
    torch.set_num_threads(1)
    tokenizer = BertTokenizer(os.path.join(MODEL, "vocab.txt"), do_lower_case=True)
    model = BertModel.from_pretrained(MODEL, attn_implementation="eager").eval()
    with open(OUT, "w") as out:
        out.write(f"# tools/minilm_golden.py: torch {torch.__version__}\n")
        for s, text in enumerate(ATTENTION_SENTENCES + [TRICKY]):
            ids = tokenizer(text, return_tensors="pt")["input_ids"]
            write(out, f"ids_{s}", ids)
            if s >= len(ATTENTION_SENTENCES):
                continue
            with torch.inference_mode():
                attentions = model(input_ids=ids, output_attentions=True).attentions
            for layer, a in enumerate(attentions):  # 1×h×n×n
                for head in range(a.shape[1]):
                    write(out, f"attention_{s}_layer{layer}_head{head}", a[0, head])
        batch = tokenizer(corpus()[:10], padding=True, return_tensors="pt")
        with torch.inference_mode():
            hidden = model(**batch).last_hidden_state  # b×T×d
        mask = batch["attention_mask"].unsqueeze(-1).float()
        mean = (hidden * mask).sum(1) / mask.sum(1)
        write(out, "embeddings", F.normalize(mean, p=2, dim=1))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
