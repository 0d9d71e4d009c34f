"""Which machine made a result, and whether another machine's kernels are the same.

A store job is deterministic on one machine: the same spec and inputs give the same bits.  Another CPU (or the same
one with another kernel path) does not: MKL picks its GEMM kernels by the instruction set it finds, torch's ATen
picks its vectorised kernels by its CPU capability, and OpenBLAS (numpy, scipy) by its core type.  A trained net
amplifies those last-bit differences along its trajectory.  So every record names the machine (:func:`describe`),
and the audit compares a re-run bit for bit only where the *kernel environment* (:func:`kernel_key`) is the one the
store recorded; elsewhere it compares within a tolerance and by the verdicts that depend on the store.

``cpu_kernels: portable`` (config key; ``$DEPTHLAB_CPU_KERNELS`` in a job) pins every kernel path to one that does not
depend on the CPU: MKL's conditional numerical reproducibility path (``MKL_CBWR=COMPATIBLE``), ATen's scalar
kernels (``ATEN_CPU_CAPABILITY=default``) and OpenBLAS's Prescott core.  They must be set before MKL, torch and
OpenBLAS load, so :func:`apply_portable` runs first thing in the ``depthlab`` command (``depthlab._launch``).  The
machine is not part of a job's identity: moving a folder to another machine reruns nothing.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import re
import subprocess
import sys

# variables that change which kernel a library runs, or how many threads it splits a product over
KERNEL_VARS = (
    "MKL_CBWR",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_DEBUG_CPU_TYPE",
    "ATEN_CPU_CAPABILITY",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "NPY_DISABLE_CPU_FEATURES",
    "NUMBA_CPU_NAME",
    "NUMBA_CPU_FEATURES",
)
THREAD_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMBA_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
MODES = ("native", "portable")
# what portable mode pins (before the libraries load)
PORTABLE = {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "default", "OPENBLAS_CORETYPE": "Prescott"}
MODE_VAR = "DEPTHLAB_CPU_KERNELS"


def mode() -> str:
    """This process's kernel mode: ``portable`` when $DEPTHLAB_CPU_KERNELS says so, else ``native``."""
    return "portable" if os.environ.get(MODE_VAR, "native") == "portable" else "native"


def apply_portable() -> None:
    """In portable mode, pin the kernel paths through the environment, before MKL, torch and OpenBLAS read it.  An
    unknown value of $DEPTHLAB_CPU_KERNELS is refused: a typo must not silently run native kernels."""
    raw = os.environ.get(MODE_VAR)
    if raw is None or raw == "":
        return
    if raw not in MODES:
        raise SystemExit(f"error: ${MODE_VAR} must be one of {', '.join(MODES)}; got {raw[:100]!r}")
    if raw == "portable":
        os.environ.update(PORTABLE)
        os.environ.pop("MKL_ENABLE_INSTRUCTIONS", None)  # CBWR=COMPATIBLE decides the path; this one would only cap it


@functools.lru_cache(maxsize=1)
def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (lower-case keys); empty where there is none."""
    out: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor's block ends here
                key, _, value = line.partition(":")
                out.setdefault(key.strip().lower(), value.strip())
    except OSError:
        pass
    return out


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux, else what the platform module says)."""
    return _cpuinfo().get("model name") or platform.processor() or platform.machine() or "unknown"


def cpu_flags() -> tuple[str, ...]:
    """The SIMD flags that decide a kernel path (of those /proc/cpuinfo lists), sorted."""
    wanted = {
        "sse4_2",
        "avx",
        "avx2",
        "fma",
        "avx512f",
        "avx512bw",
        "avx512vl",
        "avx512dq",
        "avx512_vnni",
        "avx512_bf16",
        "amx_tile",
        "asimd",
        "sve",
    }
    info = _cpuinfo()
    return tuple(sorted(wanted & set((info.get("flags") or info.get("features") or "").split())))


def _predicted_capability() -> str:
    """The CPU capability torch would choose here, from the CPU's flags and $ATEN_CPU_CAPABILITY (torch not loaded)."""
    flags = set(cpu_flags())
    best = (
        "AVX512"
        if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags
        else "AVX2"
        if {"avx2", "fma"} <= flags
        else "DEFAULT"
    )
    order = ["DEFAULT", "AVX2", "AVX512"]
    cap = os.environ.get("ATEN_CPU_CAPABILITY", "").upper()
    if cap in order and order.index(cap) < order.index(best):
        best = cap
    return best


def torch_capability() -> str:
    """torch's CPU capability (the vectorised kernels ATen runs): asked of torch where the stage loaded it, else
    predicted from the CPU's flags, and said so."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            return str(torch.backends.cpu.get_cpu_capability())
        except Exception:  # an old torch
            pass
    return f"{_predicted_capability()} (predicted: this stage did not load torch)"


@functools.lru_cache(maxsize=1)
def _torch_blas() -> str:
    torch = sys.modules.get("torch")
    if torch is None:
        return "torch not loaded"
    try:
        text = torch.__config__.show()
    except Exception:
        return "unknown"
    m = re.search(r"Math Kernel Library Version ([^\n]+?)(?: for|\n)", text)
    if m:
        return f"MKL {m.group(1).strip()}"
    m = re.search(r"BLAS_INFO=(\w+)", text)
    return m.group(1) if m else "unknown"


def blas() -> list[dict]:
    """The BLAS and LAPACK libraries loaded in this process, each with its version, kernel (core type) and threads:
    threadpoolctl's view of numpy's and scipy's OpenBLAS (and any other it finds), plus torch's own MKL, which is
    linked into torch and invisible to threadpoolctl."""
    out = []
    try:
        from threadpoolctl import threadpool_info

        for lib in threadpool_info():
            if lib.get("user_api") != "blas":
                continue
            out.append(
                {
                    "library": str(lib.get("internal_api")),
                    "prefix": str(lib.get("prefix")),
                    "version": str(lib.get("version")),
                    "architecture": str(lib.get("architecture")),
                    "threads": int(lib.get("num_threads") or 0),
                }
            )
    except Exception as e:  # threadpoolctl missing or failing: say so, never fail the job for it
        out.append({"library": "unknown", "error": f"{type(e).__name__}: {str(e)[:100]}"})
    torch = sys.modules.get("torch")
    if torch is not None:
        out.append({"library": "torch", "version": _torch_blas(), "threads": int(torch.get_num_threads())})
    return sorted(out, key=lambda d: (d.get("library", ""), d.get("prefix", "")))


@functools.lru_cache(maxsize=1)
def _gpu() -> dict | None:
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    out = {
        "model": torch.cuda.get_device_name(0),
        "cuda": str(torch.version.cuda),
        "cudnn": str(torch.backends.cudnn.version()),
    }
    try:
        p = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        out["driver"] = p.stdout.strip().splitlines()[0] if p.returncode == 0 and p.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        out["driver"] = "unknown"
    return out


def describe(device: str = "cpu") -> dict:
    """The machine a result was made on, for its record.  Not part of a job's identity."""
    out = {
        "cpu": cpu_model(),
        "cpu_flags": list(cpu_flags()),
        "arch": platform.machine(),
        "torch_cpu_capability": torch_capability(),
        "blas": blas(),
        "cpu_kernels": mode(),
        "env": {v: os.environ.get(v) for v in KERNEL_VARS + THREAD_VARS},
    }
    if str(device).startswith("cuda") and (gpu := _gpu()) is not None:
        out["gpu"] = gpu
    return out


def kernel_key(machine: dict | None, packages: dict | None = None) -> dict | None:
    """What decides a store's bits beyond its spec, inputs and code: None when the record names no machine (made before
    depthlab recorded one).  In portable mode the CPU drops out: only the packages and the pinned paths remain."""
    if not isinstance(machine, dict):
        return None
    pk = (
        {k: v for k, v in (packages or {}).items() if k in ("torch", "numpy", "scipy", "numba")}
        if isinstance(packages, dict)
        else {}
    )
    env = machine.get("env") if isinstance(machine.get("env"), dict) else {}
    libs = sorted(
        (
            {k: b.get(k) for k in ("library", "prefix", "version", "architecture", "threads")}
            for b in machine.get("blas") or []
            if isinstance(b, dict)
        ),
        key=lambda b: json.dumps(b, sort_keys=True),
    )
    # the threads each library splits its products over (what the thread variables end in): they change the bits
    threads = [(b.get("library"), b.get("version"), b.get("threads")) for b in libs]
    if machine.get("cpu_kernels") == "portable":
        return {"cpu_kernels": "portable", "arch": machine.get("arch"), "packages": pk, "threads": threads}
    blas_libs = libs
    cap = str(machine.get("torch_cpu_capability", "")).split(" ")[0]
    return {
        "cpu_kernels": "native",
        "cpu": machine.get("cpu"),
        "arch": machine.get("arch"),
        "capability": cap,
        "blas": blas_libs,
        "packages": pk,
        "env": {k: env.get(k) for k in KERNEL_VARS},
        "threads": threads,
        "gpu": machine.get("gpu"),
    }


def summary(machine: dict | None) -> str:
    """One line: CPU, torch capability, the BLAS, the kernel variables that are set, the mode."""
    if not isinstance(machine, dict):
        return "machine not recorded (made before depthlab recorded it)"
    libs = ", ".join(
        f"{b.get('library')} {b.get('version')}"
        + (f" ({b['architecture']})" if b.get("architecture") not in (None, "None") else "")
        for b in machine.get("blas") or []
        if isinstance(b, dict)
    )
    env = machine.get("env") if isinstance(machine.get("env"), dict) else {}
    set_vars = " ".join(f"{k}={v}" for k, v in sorted(env.items()) if v is not None and k in KERNEL_VARS)
    gpu = machine.get("gpu")
    gpu_s = (
        f"; GPU {gpu.get('model')} (driver {gpu.get('driver')}, CUDA {gpu.get('cuda')})"
        if isinstance(gpu, dict)
        else ""
    )
    return (
        f"{machine.get('cpu')} [{machine.get('arch')}], torch capability {machine.get('torch_cpu_capability')}, "
        f"BLAS {libs or 'none loaded'}, kernels {machine.get('cpu_kernels')}"
        + (f", {set_vars}" if set_vars else "")
        + gpu_s
    )


def differences(a: dict | None, b: dict | None) -> list[str]:
    """The fields in which two kernel keys differ, named (``capability AVX2 -> AVX512``)."""
    if a is None or b is None:
        return ["environment unknown"]
    out = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) == b.get(k):
            continue
        va, vb = a.get(k), b.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += [f"{k}.{j} {va.get(j)} -> {vb.get(j)}" for j in sorted(set(va) | set(vb)) if va.get(j) != vb.get(j)]
        elif isinstance(va, list) and isinstance(vb, list):
            gone = [x for x in va if x not in vb]
            new = [x for x in vb if x not in va]
            out.append(f"{k}: {_short(gone) or '-'} -> {_short(new) or '-'}")
        else:
            out.append(f"{k} {va} -> {vb}")
    return out


def _short(items: list) -> str:
    def one(x):
        if isinstance(x, dict):
            return " ".join(str(v) for v in x.values() if v is not None)
        if isinstance(x, (list, tuple)):
            return " ".join(str(v) for v in x if v is not None)
        return str(x)

    return ", ".join(one(x) for x in items)
