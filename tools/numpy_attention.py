"""Times NumPy attention on the shapes of the appendix "Making it fast" (not part of CI).

    python3 -m venv /tmp/npenv && /tmp/npenv/bin/pip install numpy
    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647 \
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
        /tmp/npenv/bin/python tools/numpy_attention.py > book/data/ch08-numpy.csv

The malloc variables are the ones `cargo xtask measure` sets for the crate's
benchmarks, so that neither side pays page faults for fresh n×n buffers.

Two versions, both on float32 inputs:
- "numpy_f32": softmax(Q @ K.T / sqrt(d)) @ V with every step kept in float32
  (the scale is a float32 scalar, the softmax is stable and in place);
- "numpy_tutorial": the common tutorial form, whose `np.sqrt(d)` is a float64
  scalar, so `scores / np.sqrt(d)` promotes the n×n scores to float64.
Each is timed as the best of 7 runs after a warm-up; one thread (the
variables above), matching the crate's single-threaded benchmarks.
"""
import platform
import sys
import time

import numpy as np


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


def best_of(f, *args, runs=7):
    f(*args)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    rng = np.random.default_rng(0)
    d = 64
    print(f"# numpy {np.__version__}, python {platform.python_version()}, {platform.machine()}")
    print("version,n,seconds")
    for n in [1024, 2048, 4096]:
        q, k, v = (rng.standard_normal((n, d), dtype=np.float32) for _ in range(3))
        ref = attention_tutorial(q, k, v)
        out = attention_f32(q, k, v)
        assert out.dtype == np.float32 and np.abs(out - ref).max() < 1e-4
        for name, f in [("numpy_f32", attention_f32), ("numpy_tutorial", attention_tutorial)]:
            print(f"{name},{n},{best_of(f, q, k, v):.6f}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
