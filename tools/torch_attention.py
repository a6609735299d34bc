"""Times PyTorch's attention on the shapes of the appendix "Making it fast" (not part of CI).

    python3 -m venv /tmp/venv-torch && /tmp/venv-torch/bin/pip install torch numpy
    TORCH_PYTHON=/tmp/venv-torch/bin/python cargo xtask measure fast

`cargo xtask measure fast` runs it in the same run as the crate's timings
(whose numbers it is compared with; the book refuses figures from two runs)
and writes its output to book/data/appendix-pytorch.csv; the malloc
variables are the ones the crate's benchmarks run with. Measured, each
with 1 and with 2 threads (`torch.set_num_threads`), f32, as criterion
times the crate: half a second of warm-up, then runs for two seconds (at
least 10), whose mean is written:
- "sdpa", "sdpa_causal": `F.scaled_dot_product_attention` (its fused CPU
  kernel) on one head, n = 1024, 2048, 4096, d = 64;
- "sdpa_backward", "sdpa_causal_backward": the backward pass alone of
  the same call, `torch.autograd.grad` of its output with a fixed output
  gradient into q, k and v, after one forward pass with requires_grad
  (retain_graph, so the same graph is differentiated each time); the
  crate's backward pass is timed the same way, from a forward pass kept
  aside;
- "multihead": `nn.MultiheadAttention(512, 8, bias=False, batch_first=True)`
  with need_weights=False at n = 512, the crate's layer (which has no biases);
- "product": one 512×512 by 512×512 product (`torch.mm`, which calls the BLAS
  PyTorch was built with), the product the crate's benchmark also times.
"""

import torch
import torch.nn.functional as F

from measuring import allocator_settings, mean_ns, run_header, torch_config

D = 64
LENGTHS = [1024, 2048, 4096]


def main():
    print(
        f"# {run_header()}; statistic: mean; mean of 2 s of calls after 0.5 s of warm-up; "
        f"{torch_config(torch)}"
        f"{allocator_settings()}"
    )
    print("function,threads,n,mean_ns")
    gen = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for threads in [1, 2]:
            torch.set_num_threads(threads)
            for n in LENGTHS:
                q, k, v = (torch.randn(1, 1, n, D, generator=gen) for _ in range(3))
                for name, causal in [("sdpa", False), ("sdpa_causal", True)]:
                    mean = mean_ns(
                        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    )
                    print(f"{name},{threads},{n},{mean:.0f}")
            for n in LENGTHS:
                for name, causal in [("sdpa_backward", False), ("sdpa_causal_backward", True)]:
                    mean = backward_mean_ns(gen, n, causal)
                    print(f"{name},{threads},{n},{mean:.0f}")
            layer = torch.nn.MultiheadAttention(512, 8, bias=False, batch_first=True).eval()
            x = torch.randn(1, 512, 512, generator=gen)
            mean = mean_ns(lambda: layer(x, x, x, need_weights=False))
            print(f"multihead,{threads},512,{mean:.0f}")
            a, b = (torch.randn(512, 512, generator=gen) for _ in range(2))
            mean = mean_ns(lambda: torch.mm(a, b))
            print(f"product,{threads},512,{mean:.0f}")


def backward_mean_ns(gen, n, causal):
    """The mean time of SDPA's backward pass alone, one head of n×64."""
    with torch.inference_mode(False), torch.enable_grad():
        q, k, v = (torch.randn(1, 1, n, D, generator=gen).requires_grad_() for _ in range(3))
        d_out = torch.randn(1, 1, n, D, generator=gen)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return mean_ns(lambda: torch.autograd.grad(out, (q, k, v), d_out, retain_graph=True))


if __name__ == "__main__":
    main()
