#!/usr/bin/env python3
"""Golden vectors from PyTorch, an independent reference for the crate.

Not run in CI (it needs PyTorch). To regenerate, from the repository root:

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch
    /tmp/torchenv/bin/python tools/golden.py

It writes tests/golden/*.txt, which tests/golden.rs loads; the tests require
the crate to agree to 1e-5 (f32). Inputs are drawn from a seeded generator
and rounded to 4 decimals, so the files are short and exact in f32 too.

File format (plain text): a comment line starting with '#', then for each
tensor a line `NAME ROWS COLS` followed by ROWS lines of COLS numbers.
Every tensor is two-dimensional; per-head weights are written one head at a
time as `weights_head0`, `weights_head1`, ...
"""
import os

import torch
import torch.nn.functional as F

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden")


def rand(gen, *shape):
    x = torch.randn(*shape, generator=gen, dtype=torch.float32)
    return torch.round(x * 1e4) / 1e4


def write(name, tensors, note):
    path = os.path.join(HERE, name)
    with open(path, "w") as f:
        f.write(f"# {note}; PyTorch {torch.__version__}; written by tools/golden.py\n")
        for key, t in tensors:
            t = t.detach().to(torch.float32)
            f.write(f"{key} {t.shape[0]} {t.shape[1]}\n")
            for row in t.tolist():
                f.write(" ".join(f"{v:.9g}" for v in row) + "\n")
    print("wrote", path)


def sdpa_case(name, n, m, d_k, d_v, causal, seed):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = rand(gen, n, d_k), rand(gen, m, d_k), rand(gen, m, d_v)
    out = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[0]
    write(name, [("q", q), ("k", k), ("v", v), ("output", out)],
          f"F.scaled_dot_product_attention, is_causal={causal}")


def mha_case(name, n, m, d_model, h, seed):
    gen = torch.Generator().manual_seed(seed)
    x_q, x_kv = rand(gen, n, d_model), rand(gen, m, d_model)
    # The crate's convention: Q = X W_Q with W_Q of shape d_model x d_model.
    w_q, w_k, w_v, w_o = (rand(gen, d_model, d_model) / d_model ** 0.5 for _ in range(4))
    w_q, w_k, w_v, w_o = (torch.round(w * 1e4) / 1e4 for w in (w_q, w_k, w_v, w_o))
    mha = torch.nn.MultiheadAttention(d_model, h, bias=False, batch_first=True)
    with torch.no_grad():
        # PyTorch computes X W^T, with the three projections stacked by rows.
        mha.in_proj_weight.copy_(torch.cat([w_q.T, w_k.T, w_v.T], dim=0))
        mha.out_proj.weight.copy_(w_o.T)
    out, weights = mha(x_q[None], x_kv[None], x_kv[None], need_weights=True,
                       average_attn_weights=False)
    tensors = [("x_q", x_q), ("x_kv", x_kv), ("w_q", w_q), ("w_k", w_k), ("w_v", w_v),
               ("w_o", w_o), ("output", out[0])]
    tensors += [(f"weights_head{i}", weights[0, i]) for i in range(h)]
    write(name, tensors, f"nn.MultiheadAttention(d_model={d_model}, h={h}, bias=False, batch_first=True)")


if __name__ == "__main__":
    os.makedirs(HERE, exist_ok=True)
    sdpa_case("sdpa_4x6_d8.txt", n=4, m=6, d_k=8, d_v=5, causal=False, seed=1)
    sdpa_case("sdpa_3x9_d64.txt", n=3, m=9, d_k=64, d_v=16, causal=False, seed=2)
    sdpa_case("sdpa_causal_5_d8.txt", n=5, m=5, d_k=8, d_v=8, causal=True, seed=3)
    mha_case("mha_5x7_d16_h4.txt", n=5, m=7, d_model=16, h=4, seed=4)
    mha_case("mha_6x6_d64_h8.txt", n=6, m=6, d_model=64, h=8, seed=5)
