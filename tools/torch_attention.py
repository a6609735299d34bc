"""Times PyTorch's attention on the shapes of the appendix "Making it fast" (not part of CI).

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch
    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647 \
        /tmp/torchenv/bin/python tools/torch_attention.py > book/data/appendix-pytorch.csv

Run it in the same session and on the same machine as `cargo xtask measure`,
whose numbers it is compared with; the malloc variables are the ones that
command sets for the crate. Measured, each with 1 and with 2 threads
(`torch.set_num_threads`), f32, as criterion times the crate: half a
second of warm-up, then runs for two seconds (at least 10), whose mean is
compared with criterion's mean; the best run is written too:
- "sdpa", "sdpa_causal": `F.scaled_dot_product_attention` (its fused CPU
  kernel) on one head, n = 1024, 2048, 4096, d = 64;
- "multihead": `nn.MultiheadAttention(512, 8, bias=False, batch_first=True)`
  with need_weights=False at n = 512, the crate's layer (which has no biases).
"""
import datetime
import platform
import time

import torch
import torch.nn.functional as F

D = 64
LENGTHS = [1024, 2048, 4096]
WARM_UP_S = 0.5
MEASURE_S = 2.0
MIN_RUNS = 10


def mean_and_best_ns(f):
    start = time.perf_counter()
    while time.perf_counter() - start < WARM_UP_S:
        f()
    times = []
    start = time.perf_counter()
    while len(times) < MIN_RUNS or time.perf_counter() - start < MEASURE_S:
        t = time.perf_counter_ns()
        f()
        times.append(time.perf_counter_ns() - t)
    return sum(times) / len(times), min(times)


def cpu():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    print(f"# measured {date} on {cpu()}, by tools/torch_attention.py (torch {torch.__version__}, mean of 2 s of runs)")
    print("function,threads,n,mean_ns,best_ns")
    gen = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for threads in [1, 2]:
            torch.set_num_threads(threads)
            for n in LENGTHS:
                q, k, v = (torch.randn(1, 1, n, D, generator=gen) for _ in range(3))
                for name, causal in [("sdpa", False), ("sdpa_causal", True)]:
                    mean, best = mean_and_best_ns(
                        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    )
                    print(f"{name},{threads},{n},{mean:.0f},{best:.0f}")
            layer = torch.nn.MultiheadAttention(512, 8, bias=False, batch_first=True).eval()
            x = torch.randn(1, 512, 512, generator=gen)
            mean, best = mean_and_best_ns(lambda: layer(x, x, x, need_weights=False))
            print(f"multihead,{threads},512,{mean:.0f},{best:.0f}")


if __name__ == "__main__":
    main()
