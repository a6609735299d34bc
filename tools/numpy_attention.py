"""Times NumPy attention on the shapes of the appendix "Making it fast" (not part of CI).

`cargo xtask measure fast` runs it, in the same run as the crate's timings,
with the Python that TORCH_PYTHON names (one with numpy, e.g. the venv of
tools/torch_attention.py's header), and writes book/data/appendix-numpy.csv.
By hand, for a look (the book refuses a file from another run):

    python3 -m venv /tmp/npenv && /tmp/npenv/bin/pip install numpy
    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647 \
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
        /tmp/npenv/bin/python tools/numpy_attention.py

The malloc variables are the ones the crate's benchmarks run with, so that
neither side pays page faults for fresh n×n buffers.

Two versions, both on float32 inputs:
- "numpy_f32": softmax(Q @ K.T / sqrt(d)) @ V with every step kept in float32
  (the scale is a float32 scalar, the softmax is stable and in place);
- "numpy_tutorial": the common tutorial form, whose `np.sqrt(d)` is a float64
  scalar, so `scores / np.sqrt(d)` promotes the n×n scores to float64.
Each is timed as criterion times the crate: half a second of warm-up, then
runs for two seconds (at least 10), whose mean is written; one thread (the
variables above), as the crate's benchmarks.
"""
import platform
import sys

import numpy as np

from measuring import allocator_settings, mean_ns, run_header


def attention_f32(q, k, v):
    scores = q @ k.T                       # n×n, float32
    scores *= np.float32(1.0 / np.sqrt(q.shape[1]))
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    return scores @ v


def attention_tutorial(q, k, v):
    d_k = q.shape[-1]
    scores = q @ k.T / np.sqrt(d_k)        # float64 from here on
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ v


def main():
    rng = np.random.default_rng(0)
    d = 64
    print(
        f"# {run_header()}; statistic: mean; mean of 2 s of calls after 0.5 s of warm-up, "
        f"one thread; numpy {np.__version__}, python {platform.python_version()}"
        f"{allocator_settings()}"
    )
    print("version,n,mean_ns")
    for n in [1024, 2048, 4096]:
        q, k, v = (rng.standard_normal((n, d), dtype=np.float32) for _ in range(3))
        ref = attention_tutorial(q, k, v)
        out = attention_f32(q, k, v)
        assert out.dtype == np.float32 and np.abs(out - ref).max() < 1e-4
        for name, f in [("numpy_f32", attention_f32), ("numpy_tutorial", attention_tutorial)]:
            print(f"{name},{n},{mean_ns(f, q, k, v):.0f}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
