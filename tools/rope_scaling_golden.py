#!/usr/bin/env python3
"""RoPE's scaled frequencies from Hugging Face `transformers`, an independent
reference for the crate's `attn::rope_scaling`.

Not run in CI (it needs PyTorch and transformers). To regenerate, from the
repository root:

    python3 -m venv /tmp/venv-torch
    /tmp/venv-torch/bin/pip install torch transformers
    /tmp/venv-torch/bin/python tools/rope_scaling_golden.py

It writes tests/golden/rope_scaling.txt, which tests/rope_scaling.rs reads,
in tools/golden.py's format: for each case, `NAME_omega 1 D/2` (the inverse
frequencies, fastest first) and `NAME_attention_factor 1 1`. The cases' inputs
are listed here and again in the test, which builds each one with the crate
and requires agreement to 1e-6 of each frequency (transformers computes them
in f32, the crate in f64).

NTK-aware scaling is transformers' "dynamic" scaling asked at a length of
s·L with a factor of 1: its base becomes base·s^(d/(d−2)), bloc97's static
NTK-aware base.
"""
import os

import torch
import transformers
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "rope_scaling.txt")

# name, head width d, base, transformers' rope_type, its parameters, max
# positions, the length asked (for "dynamic").
CASES = [
    ("linear_d64_s4", 64, 10000.0, "linear", {"factor": 4.0}, 256, None),
    ("linear_d128_s2_base500000", 128, 500000.0, "linear", {"factor": 2.0}, 16384, None),
    ("ntk_d64_s4_l64", 64, 10000.0, "dynamic", {"factor": 1.0}, 64, 256),
    ("ntk_d16_s8_l64", 16, 10000.0, "dynamic", {"factor": 1.0}, 64, 512),
    ("yarn_d64_s8_l64", 64, 10000.0, "yarn",
     {"factor": 8.0, "original_max_position_embeddings": 64, "beta_fast": 32.0, "beta_slow": 1.0},
     512, None),
    ("yarn_d16_s4_l64", 16, 10000.0, "yarn",
     {"factor": 4.0, "original_max_position_embeddings": 64, "beta_fast": 32.0, "beta_slow": 1.0},
     256, None),
    ("yarn_d128_s32_l4096", 128, 10000.0, "yarn",
     {"factor": 32.0, "original_max_position_embeddings": 4096, "beta_fast": 32.0,
      "beta_slow": 1.0}, 131072, None),
    ("llama3_d128_s8_l8192_base500000", 128, 500000.0, "llama3",
     {"factor": 8.0, "original_max_position_embeddings": 8192, "low_freq_factor": 1.0,
      "high_freq_factor": 4.0}, 131072, None),
    ("llama3_d32_s4_l64", 32, 10000.0, "llama3",
     {"factor": 4.0, "original_max_position_embeddings": 64, "low_freq_factor": 1.0,
      "high_freq_factor": 4.0}, 256, None),
]


def main():
    with open(OUT, "w") as f:
        f.write(f"# transformers {transformers.__version__} modeling_rope_utils, PyTorch "
                f"{torch.__version__}; written by tools/rope_scaling_golden.py\n")
        for name, d, base, rope_type, params, max_positions, length in CASES:
            config = LlamaConfig(
                hidden_size=4 * d, num_attention_heads=4, head_dim=d,
                max_position_embeddings=max_positions,
                rope_parameters={"rope_type": rope_type, "rope_theta": base, **params})
            inv_freq, factor = ROPE_INIT_FUNCTIONS[rope_type](config, "cpu", seq_len=length)
            inv_freq = inv_freq.to(torch.float32).tolist()
            f.write(f"{name}_omega 1 {len(inv_freq)}\n")
            f.write(" ".join(f"{v:.9g}" for v in inv_freq) + "\n")
            f.write(f"{name}_attention_factor 1 1\n{float(factor):.9g}\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
