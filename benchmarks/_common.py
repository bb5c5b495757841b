"""Small helpers shared by the benchmarks: timing medians and Markdown tables."""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable


def median_time(fn: Callable[[], object], *, repeats: int) -> tuple[float, object]:
    """Median wall time of ``repeats`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def compile_tree(root) -> None:
    """Byte-compile a tree's Python files, as a deployed server has them.

    A process that imports a module whose cached bytecode is missing or stale compiles it
    from source (0.4 s for 88 of PeerBoard's modules) and, under ``PYTHONDONTWRITEBYTECODE``
    (set on this machine), does so in every process: timing cold starts without this
    measures the compiler. ``py_compile`` writes the caches whatever that variable says.
    """
    import subprocess
    import sys
    from pathlib import Path

    targets = [str(Path(root) / name) for name in ("peercore", "pages", "app.py") if (Path(root) / name).exists()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *targets], check=True)


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs ({cpu})"


def markdown_table(header: list[str], rows: list[list[object]]) -> str:
    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def publish(path, lines: list[str]) -> int:
    """Write a result file (Markdown lines) under ``results/``, print it, and return 0 (an exit status)."""
    text = "\n".join(lines)
    path.write_text(text)
    print(text)
    return 0
