#!/usr/bin/env python3
"""Chapter 20's Vision Transformer in PyTorch, built from torch.nn's own
layers (nn.MultiheadAttention, nn.LayerNorm, nn.Linear), to check the
crate's `attn::vision::Vit` against an implementation it shares no code
with.

`golden` loads the crate's trained weights (book/data/ch20-vit-weights.safetensors),
runs the first test images of the digits (target/digits/digits.csv, the
last 500 images of the file) and writes their pixels, logits and every
head's attention weights to tests/golden/vit.txt, which tests/vision_golden.rs
compares with the crate.

Not run in CI (it needs PyTorch):

    python3 -m venv /tmp/venv-torch
    /tmp/venv-torch/bin/pip install torch numpy safetensors
    cargo xtask digits
    /tmp/venv-torch/bin/python tools/vit_reference.py golden

The architecture: the 8x8 image cut into p x p patches, row by row, each
patch's pixels (divided by 16) a row; a linear patch embedding; a learned
[CLS] vector in front; positions added (learned, one a place; or a grid
row's plus a grid column's, nothing for [CLS]; or none); pre-norm blocks of
multi-head attention without biases or mask and an exact-GELU FFN; a final
LayerNorm of [CLS]'s vector and a linear classifier. The crate stores a
product as x @ W; torch.nn.Linear holds W transposed.
"""
import argparse
import json
import os
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
WEIGHTS = os.path.join(ROOT, "book", "data", "ch20-vit-weights.safetensors")
DIGITS = os.path.join(ROOT, "target", "digits", "digits.csv")
GOLDEN = os.path.join(ROOT, "tests", "golden", "vit.txt")
TEST_IMAGES = 500
GOLDEN_IMAGES = 3
EPS = 1e-5


class Block(torch.nn.Module):
    def __init__(self, d, heads, d_ff):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d, eps=EPS)
        self.attn = torch.nn.MultiheadAttention(d, heads, bias=False, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(d, eps=EPS)
        self.w1 = torch.nn.Linear(d, d_ff)
        self.w2 = torch.nn.Linear(d_ff, d)

    def forward(self, x):
        a = self.ln1(x)
        o, weights = self.attn(a, a, a, need_weights=True, average_attn_weights=False)
        x = x + o
        x = x + self.w2(torch.nn.functional.gelu(self.w1(self.ln2(x))))
        return x, weights


class Vit(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        p, d = c["patch"], c["d_model"]
        self.grid = 8 // p
        self.embed = torch.nn.Linear(p * p, d)
        self.cls = torch.nn.Parameter(torch.zeros(1, d))
        places = {"none": 0, "learned": self.grid ** 2 + 1, "row_column": 2 * self.grid}
        self.positions = torch.nn.Parameter(torch.zeros(places[c["positions"]], d))
        self.blocks = torch.nn.ModuleList(
            Block(d, c["heads"], c["d_ff"]) for _ in range(c["layers"]))
        self.ln_f = torch.nn.LayerNorm(d, eps=EPS)
        self.head = torch.nn.Linear(d, 10)

    def patches(self, images):
        """(B, 64) pixels -> (B, P, p*p): patch j is grid row j // g,
        column j % g; its pixels row by row."""
        p, g = self.c["patch"], self.grid
        x = images.view(-1, g, p, g, p).permute(0, 1, 3, 2, 4)
        return x.reshape(images.shape[0], g * g, p * p) / 16.0

    def forward(self, images):
        b, g = images.shape[0], self.grid
        e = self.embed(self.patches(images))
        x = torch.cat([self.cls.expand(b, 1, -1), e], dim=1)
        kind = self.c["positions"]
        if kind == "learned":
            x = x + self.positions
        elif kind == "row_column":
            j = torch.arange(g * g)
            grid = self.positions[j // g] + self.positions[g + j % g]
            x = x + torch.cat([torch.zeros(1, x.shape[2]), grid])
        weights = []
        for block in self.blocks:
            x, w = block(x)
            weights.append(w)
        return self.head(self.ln_f(x[:, 0])), weights


def load(path):
    from safetensors import safe_open
    with safe_open(path, framework="pt") as f:
        meta = f.metadata()
        c = {k: int(meta[k]) for k in ["patch", "d_model", "heads", "layers", "d_ff"]}
        c["positions"] = meta["positions"]
        model = Vit(c)
        t = f.get_tensor
        with torch.no_grad():
            model.embed.weight.copy_(t("patch.w").T)
            model.embed.bias.copy_(t("patch.b"))
            model.cls.copy_(t("cls"))
            model.positions.copy_(t("positions"))
            for l, block in enumerate(model.blocks):
                n = lambda name: t(f"blocks.{l}.{name}")
                block.ln1.weight.copy_(n("ln1.gamma"))
                block.ln1.bias.copy_(n("ln1.beta"))
                # in_proj_weight stacks W_Q, W_K, W_V, each as nn.Linear holds it.
                block.attn.in_proj_weight.copy_(
                    torch.cat([n("w_q").T, n("w_k").T, n("w_v").T]))
                block.attn.out_proj.weight.copy_(n("w_o").T)
                block.ln2.weight.copy_(n("ln2.gamma"))
                block.ln2.bias.copy_(n("ln2.beta"))
                block.w1.weight.copy_(n("w1").T)
                block.w1.bias.copy_(n("b1"))
                block.w2.weight.copy_(n("w2").T)
                block.w2.bias.copy_(n("b2"))
            model.ln_f.weight.copy_(t("ln_f.gamma"))
            model.ln_f.bias.copy_(t("ln_f.beta"))
            model.head.weight.copy_(t("head.w").T)
            model.head.bias.copy_(t("head.b"))
    return model, c


def test_images():
    if not os.path.exists(DIGITS):
        sys.exit(f"{DIGITS} is missing: run `cargo xtask digits`")
    rows = [list(map(int, line.split(","))) for line in open(DIGITS)]
    first = len(rows) - TEST_IMAGES
    chosen = rows[first:first + GOLDEN_IMAGES]
    return torch.tensor([r[:64] for r in chosen], dtype=torch.float32), first


def golden(_args):
    torch.set_num_threads(1)
    model, c = load(WEIGHTS)
    model.eval()
    images, first = test_images()
    with torch.no_grad():
        logits, weights = model(images)
    tensors = [("pixels", images), ("logits", logits)]
    for l, w in enumerate(weights):
        for i in range(GOLDEN_IMAGES):
            for h in range(c["heads"]):
                tensors.append((f"weights_block{l}_image{i}_head{h}", w[i, h]))
    with open(GOLDEN, "w") as f:
        f.write(f"# chapter 20's Vision Transformer (book/data/ch20-vit-weights.safetensors, "
                f"{json.dumps(c)}) in PyTorch {torch.__version__}, float32, on the digits' "
                f"images {first} to {first + GOLDEN_IMAGES - 1}; written by "
                f"tools/vit_reference.py golden\n")
        for key, t in tensors:
            f.write(f"{key} {t.shape[0]} {t.shape[1]}\n")
            for row in t.tolist():
                f.write(" ".join(f"{v:.9g}" for v in row) + "\n")
    print("wrote", GOLDEN)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["golden"])
    args = parser.parse_args()
    golden(args)


if __name__ == "__main__":
    main()
