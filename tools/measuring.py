"""What the measuring scripts of tools/ share: the header of a measurement run,
and criterion's way of timing (imported by numpy_attention.py,
torch_attention.py and minilm_speed.py, which run from the repository root
as `python tools/NAME.py`)."""
import datetime
import os
import platform
import re
import time

WARM_UP_S = 0.5
MEASURE_S = 2.0
MIN_RUNS = 10


def run_header():
    """The run's header from `cargo xtask`, or one that says it was run by hand
    (which the book's tests refuse: a comparison needs one run)."""
    header = os.environ.get("ATTN_RUN_HEADER")
    if not header:
        now = datetime.datetime.now(datetime.timezone.utc)
        header = f"date: {now:%Y-%m-%d}; cpu: {platform.processor() or 'unknown'}; run: by hand {now:%Y-%m-%dT%H:%MZ}"
    return header


def allocator_settings():
    """The environment a timing depends on (glibc's allocator settings and
    OpenBLAS's thread count), as `; env: …` for a header, or nothing when
    none is set."""
    names = ["MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "OPENBLAS_NUM_THREADS"]
    env = [f"{n}={os.environ[n]}" for n in names if n in os.environ]
    return f"; env: {' '.join(env)}" if env else ""


def mean_ns(f, *args):
    """The mean nanoseconds of `f(*args)`, timed as criterion times the crate:
    half a second of warm-up, then calls for two seconds (at least 10)."""
    start = time.perf_counter()
    while time.perf_counter() - start < WARM_UP_S:
        f(*args)
    times = []
    start = time.perf_counter()
    while len(times) < MIN_RUNS or time.perf_counter() - start < MEASURE_S:
        t = time.perf_counter_ns()
        f(*args)
        times.append(time.perf_counter_ns() - t)
    return sum(times) / len(times)


def torch_config(torch):
    """What a PyTorch timing depends on, for a header: its version, the
    vector instructions its CPU kernels chose (its CPU capability) and the
    BLAS its products run through (BLAS_INFO in its build settings)."""
    found = re.search(r"BLAS_INFO=([^,\s]+)", torch.__config__.show())
    blas = found.group(1) if found else "not reported"
    capability = torch.backends.cpu.get_cpu_capability()
    return f"torch {torch.__version__}, cpu capability {capability}, BLAS {blas}"
