#!/usr/bin/env python3
"""Chapter 16's language model in PyTorch: the same architecture, data and
recipe as the crate's `attn::lm`, for two comparisons.

- `golden`: loads the crate's trained weights (book/data/ch16-weights.safetensors)
  and writes the logits and some attention weights for fixed inputs to
  tests/golden/lm.txt, which tests/language_model.rs compares with the crate.
- `speed`: training tokens per second over steps 101 to 300 (the crate's
  statistic), printing one line `pytorch THREADS TOKENS/S`.
- `config`: one line naming what PyTorch's speed depends on (its version,
  CPU capability and BLAS), which `cargo xtask measure lm` writes into the
  speed file's header.
- `profile`: where a training step's time goes: steps 101 to 150 under
  PyTorch's profiler, each operator's own time summed into the parts of a
  step (products, fused attention, GELU, LayerNorm, the loss, the rest),
  printing lines `pytorch THREADS PART MS_PER_STEP`, `total` among them
  (the profiler's own cost included).
- `train`: trains the same configuration from its own initialisation on the
  same windows of the same corpus (SplitMix64 offsets, as the crate draws
  them), printing a log line every 100 steps (step, training loss, validation
  loss, learning rate, training tokens per second) as the crate does.

Not run in CI (it needs PyTorch):

    python3 -m venv /tmp/venv-torch
    /tmp/venv-torch/bin/pip install torch numpy safetensors
    cargo xtask corpus
    /tmp/venv-torch/bin/python tools/lm_reference.py golden
    /tmp/venv-torch/bin/python tools/lm_reference.py train --threads 1

`cargo xtask measure lm` runs `speed` and `train` in the same run as the
crate's measurements, with the Python that TORCH_PYTHON names.

The architecture: token and learned position embeddings; pre-norm blocks of
causal multi-head attention and an exact-GELU FFN; a final LayerNorm; the
logits z Eᵀ with E the token embedding. No biases (LayerNorm has no shift).
Weights are stored as the crate stores them: a product is x @ W.
"""
import argparse
import glob
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measuring import torch_config  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CORPUS = os.environ.get("ATTN_CORPUS_DIR", os.path.join(ROOT, "target", "corpus", "shakespeare"))
WEIGHTS = os.path.join(ROOT, "book", "data", "ch16-weights.safetensors")
GOLDEN = os.path.join(ROOT, "tests", "golden", "lm.txt")

CONFIG = dict(vocab=84, context=64, d_model=128, heads=4, layers=4, d_ff=512)
RECIPE = dict(steps=2000, batch=12, lr=1e-3, warmup=100, min_lr=1e-4, betas=(0.9, 0.99),
              eps=1e-8, weight_decay=0.1, clip=1.0, seed=1, log_every=100, log_windows=240)
MASK64 = (1 << 64) - 1


def corpus():
    """Every *_gut.txt, joined in sorted file-name order; the sorted
    characters as the vocabulary; the first ⌊0.9·n⌋ characters train."""
    files = sorted(glob.glob(os.path.join(CORPUS, "*_gut.txt")))
    if len(files) != 42:
        sys.exit(f"{CORPUS} holds {len(files)} texts, not 42: run `cargo xtask corpus`")
    text = b"".join(open(f, "rb").read() for f in files)
    vocab = sorted(set(text))
    index = {c: i for i, c in enumerate(vocab)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    split = len(text) * 9 // 10
    return vocab, ids[:split], ids[split:]


class SplitMix64:
    def __init__(self, seed):
        self.state = seed

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


def windows(ids, offsets, context):
    x = torch.stack([ids[o:o + context] for o in offsets])
    y = torch.stack([ids[o + 1:o + 1 + context] for o in offsets])
    return x, y


def even_offsets(count, length, context):
    last = length - (context + 1)
    return [i * last // (count - 1) for i in range(count)]


def names(layers):
    out = ["tokens", "positions"]
    for l in range(layers):
        out += [f"blocks.{l}.{p}" for p in
                ["ln1.gamma", "w_q", "w_k", "w_v", "w_o", "ln2.gamma", "w1", "w2"]]
    return out + ["ln_f.gamma"]


class LanguageModel(torch.nn.Module):
    def __init__(self, c, generator=None):
        super().__init__()
        self.c = c
        d, f = c["d_model"], c["d_ff"]
        residual = 0.02 / math.sqrt(2 * c["layers"])
        shapes = {"tokens": (c["vocab"], d), "positions": (c["context"], d)}
        self.params = torch.nn.ParameterDict()
        for name in names(c["layers"]):
            key = name.replace(".", "_")
            last = name.split(".")[-1]
            if last == "gamma":
                p = torch.ones(d)
            else:
                shape = shapes.get(name) or {"w1": (d, f), "w2": (f, d)}.get(last, (d, d))
                std = residual if last in ("w_o", "w2") else 0.02
                p = torch.randn(shape, generator=generator) * std
            self.params[key] = torch.nn.Parameter(p)

    def p(self, name):
        return self.params[name.replace(".", "_")]

    def forward(self, idx, keep_weights=False):
        c = self.c
        b, t = idx.shape
        h, d = c["heads"], c["d_model"]
        x = self.p("tokens")[idx] + self.p("positions")[:t]
        weights = []
        for l in range(c["layers"]):
            blk = lambda n: self.p(f"blocks.{l}.{n}")
            a = F.layer_norm(x, (d,), blk("ln1.gamma"), None, 1e-5)
            q, k, v = (
                (a @ blk(w)).view(b, t, h, d // h).transpose(1, 2) for w in ("w_q", "w_k", "w_v")
            )
            if keep_weights:
                s = q @ k.transpose(-1, -2) / math.sqrt(d // h)
                s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
                p = s.softmax(-1)
                weights.append(p)
                o = p @ v
            else:
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + o.transpose(1, 2).reshape(b, t, d) @ blk("w_o")
            a = F.layer_norm(x, (d,), blk("ln2.gamma"), None, 1e-5)
            x = x + F.gelu(a @ blk("w1")) @ blk("w2")
        z = F.layer_norm(x, (d,), self.p("ln_f.gamma"), None, 1e-5)
        logits = z @ self.p("tokens").T
        return (logits, weights) if keep_weights else logits


def schedule(step, r):
    """The crate's warmup_cosine_to, times the peak learning rate."""
    if step < r["warmup"]:
        return r["lr"] * (step + 1) / r["warmup"]
    floor = r["min_lr"] / r["lr"]
    progress = (step - r["warmup"]) / max(r["steps"] - r["warmup"], 1)
    return r["lr"] * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


@torch.no_grad()
def mean_loss(model, ids, offsets, batch, context):
    total = 0.0
    for i in range(0, len(offsets), batch):
        chunk = offsets[i:i + batch]
        x, y = windows(ids, chunk, context)
        logits = model(x)
        total += F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1)).item() * len(chunk)
    return total / len(offsets)


def train(args):
    torch.set_num_threads(args.threads)
    r = dict(RECIPE, steps=args.steps)
    _, train_ids, valid_ids = corpus()
    context = CONFIG["context"]
    generator = torch.Generator().manual_seed(r["seed"])
    model = LanguageModel(CONFIG, generator)
    decayed = [p for n, p in model.params.items() if p.dim() >= 2]
    others = [p for n, p in model.params.items() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decayed, "weight_decay": r["weight_decay"]},
         {"params": others, "weight_decay": 0.0}],
        lr=r["lr"], betas=r["betas"], eps=r["eps"])
    rng = SplitMix64(r["seed"])
    places = len(train_ids) - context
    evaluation = even_offsets(r["log_windows"], len(valid_ids), context)
    losses, clock = [], time.perf_counter()
    timed = []  # (tokens, seconds) of each logged interval
    if not args.speed:
        print(f"# torch {torch.__version__}, {args.threads} thread(s)")
        print("step\ttrain_loss\tvalidation_loss\tlr\ttokens_per_second")

    def step_once(step):
        offsets = [rng.next() % places for _ in range(r["batch"])]
        x, y = windows(train_ids, offsets, context)
        lr = schedule(step, r)
        for g in opt.param_groups:
            g["lr"] = lr
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), r["clip"])
        opt.step()
        return loss, lr

    if args.profile:
        return profile_step(args, step_once)
    for step in range(r["steps"]):
        loss, lr = step_once(step)
        losses.append(loss.item())
        if (step + 1) % r["log_every"] == 0 or step + 1 == r["steps"]:
            seconds = time.perf_counter() - clock
            tokens = len(losses) * r["batch"] * context
            timed.append((tokens, seconds))
            if not args.speed:
                validation = mean_loss(model, valid_ids, evaluation, r["batch"], context)
                print(f"{step + 1}\t{sum(losses) / len(losses):.5f}\t{validation:.5f}\t{lr:.6e}"
                      f"\t{tokens / seconds:.1f}", flush=True)
            losses, clock = [], time.perf_counter()
    if args.speed:
        tokens = sum(t for t, _ in timed[1:])
        seconds = sum(s for _, s in timed[1:])
        print(f"pytorch\t{args.threads}\t{tokens / seconds:.1f}")


# The parts of a training step, by the operators whose own time they sum;
# the first pattern an operator's name contains decides.
PARTS = [
    ("products", ["aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm"]),
    ("fused attention", ["scaled_dot_product", "flash_attention"]),
    ("GELU", ["gelu"]),
    ("LayerNorm", ["layer_norm"]),
    ("loss", ["log_softmax", "nll_loss", "cross_entropy"]),
]


def profile_step(args, step_once, warm=100, profiled=50):
    from torch.profiler import ProfilerActivity, profile
    for step in range(warm):
        step_once(step)
    clock = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for step in range(warm, warm + profiled):
            step_once(step)[0].item()
    seconds = (time.perf_counter() - clock) / profiled
    parts = {name: 0.0 for name, _ in PARTS}
    parts["the rest"] = 0.0
    for event in prof.key_averages():
        part = next((name for name, keys in PARTS if any(k in event.key for k in keys)), "the rest")
        parts[part] += event.self_cpu_time_total / 1e3 / profiled  # µs in all → ms a step
    for part, ms in parts.items():
        print(f"pytorch\t{args.threads}\t{part}\t{ms:.3f}")
    print(f"pytorch\t{args.threads}\ttotal\t{seconds * 1e3:.3f}")


# The golden inputs: two windows of verse (as characters of the corpus's
# vocabulary), the first the full context, the second shorter.
GOLDEN_TEXTS = [
    "ROMEO:\nBut, soft! what light through yonder window breaks?\nIt is",
    "To be, or not to be: that is the question:",
]


def golden(args):
    from safetensors import safe_open
    vocab, _, _ = corpus()
    index = {chr(c): i for i, c in enumerate(vocab)}
    model = LanguageModel(CONFIG)
    with safe_open(WEIGHTS, framework="pt") as f:
        for name in names(CONFIG["layers"]):
            model.p(name).data.copy_(f.get_tensor(name))
    tensors = []
    with torch.no_grad():
        for i, text in enumerate(GOLDEN_TEXTS):
            idx = torch.tensor([[index[c] for c in text]])
            logits, weights = model(idx, keep_weights=True)
            tensors.append((f"logits{i}", logits[0]))
            for block, head in [(0, 0), (1, 2), (3, 3)]:
                tensors.append((f"weights{i}_block{block}_head{head}", weights[block][0, head]))
    with open(GOLDEN, "w") as f:
        f.write(f"# chapter 16's language model (book/data/ch16-weights.safetensors) in PyTorch "
                f"{torch.__version__}, float32; texts: {GOLDEN_TEXTS!r}; written by "
                f"tools/lm_reference.py golden\n")
        for key, t in tensors:
            f.write(f"{key} {t.shape[0]} {t.shape[1]}\n")
            for row in t.tolist():
                f.write(" ".join(f"{v:.9g}" for v in row) + "\n")
    print("wrote", GOLDEN)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["golden", "train", "speed", "profile", "config"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=RECIPE["steps"])
    args = parser.parse_args()
    args.profile = args.what == "profile"
    if args.what == "config":
        print(torch_config(torch))
    elif args.what in ("speed", "profile"):
        args.steps, args.speed = 300, True
        train(args)
    elif args.what == "train":
        args.speed = False
        train(args)
    else:
        golden(args)


if __name__ == "__main__":
    main()
