"""Peak memory of hostile (and of the largest honest) inputs to the importers.

Each input is built here, then imported in a fresh process exactly as a user would
(``peercore import FILE``, or for a ``.zip`` the dashboard's upload path: extract with
:func:`peercore.ui.imports._materialise`, then :func:`peercore.io.importer.read_path`).
The peak resident memory of that process is read by a small wrapper process with
``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` (the wrapper has one child, so that is
the importer's own peak). The bound (issue 8): under 2 GB for any upload of at most
100 MB on disk, accepted or refused.

The bombs, and the rule of :mod:`peercore.io.rules` that bounds each:

- **Parquet dictionary / RLE**: one 0.9 MB text value stored once in a dictionary page
  and repeated on 5,600 rows by run-length encoded indices: a 0.94 MB file that decodes
  to 4.7 GiB. Bounded by reading text columns dictionary-encoded and summing the lengths
  the rows point to before expanding (``MAX_PARQUET_BYTES``).
- **Parquet RLE rows**: 20,000,000 rows of one repeated value in a few kilobytes.
  Bounded by the footer's row count (``MAX_ROWS``) before any page is read.
- **zip ratio**: 1 GiB of valid JSONL compressed about 1,000 to 1. Bounded before
  extraction by the members' declared sizes and ratio (``ZIP_MAX_BYTES``,
  ``ZIP_MAX_RATIO``); extraction never writes more than a member declares.
- **zip members**: 20,000 empty members. Bounded by the end-of-central-directory count,
  read before ``zipfile`` builds its index (``ZIP_MAX_MEMBERS``).
- **deep JSON**: one JSONL record nested 100,000 levels deep (Python's parser raised
  RecursionError, Arrow's crashes). Bounded by a token scan before parsing
  (``MAX_JSON_DEPTH``), on the small and on the large (> 1 MiB) path.
- **long line**: a 50 MB CSV / JSONL with no line break. Bounded by a byte scan of line
  lengths before pandas or Arrow parse (``MAX_LINE_BYTES``).

And the largest honest inputs, which must stay under the bound too: a 100 MB JSONL of
valid battles (fast path), the same with a bad last line (the fast path gives up and the
careful path names the line), 100 MB of the tiniest CSV rows with a bad last line (the
most rows per byte: 5.3 million), and a zip at the extraction budget.

Run: ``.venv/bin/python benchmarks/io_bombs.py [--quick]`` (``--quick`` skips the
100 MB honest files). Internal: ``--upload FILE`` runs the dashboard upload path on FILE.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, markdown_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BOUND = 2 * 10**9  # bytes: "peak memory under 2 GB"
MiB = 1 << 20

# Runs the command given as arguments and prints its peak RSS (bytes) as the last line.
_WRAPPER = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
    "sys.stderr.write(done.stderr)\n"
    "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
)


@dataclass
class Bomb:
    """One input: what it is, how to build it, how it is imported, what should happen."""

    name: str
    bounds: str          # the rule that bounds it
    build: object        # (folder) -> (path, expanded bytes)
    upload: bool = False  # through the dashboard's upload path (zip) instead of ``peercore import``
    refused: bool = True
    expect: str = ""     # text the one error line must hold (when refused)


@dataclass
class Measured:
    bomb: Bomb
    file_bytes: int
    expands_to: int
    status: int
    peak: int
    seconds: float
    message: str

    @property
    def accepted(self) -> bool:
        return self.status == 0


# ------------------------------------------------------------------------- builders

_RECORD = {"question_id": "q", "model_a": "model-a", "model_b": "model-b", "judge": "judge", "winner": "model_a"}


def _record(k: int, **extra) -> str:
    return json.dumps({**_RECORD, "question_id": f"q{k}", **extra}) + "\n"


def parquet_dictionary(folder: Path, *, rows: int = 5_600, value_bytes: int = 900_000) -> tuple[Path, int]:
    """One incompressible text value in the dictionary page, repeated on every row (RLE indices)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    value = "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz0123456789 "), value_bytes))
    rationale = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), pa.array([value]))
    table = pa.table({"question_id": [f"q{k}" for k in range(rows)], "model_a": ["a"] * rows, "model_b": ["b"] * rows,
                      "judge": ["j"] * rows, "winner": ["model_a"] * rows, "rationale": rationale})
    path = folder / "dictionary_bomb.parquet"
    pq.write_table(table, path, use_dictionary=True, dictionary_pagesize_limit=4 * MiB, compression="snappy")
    return path, rows * value_bytes


def parquet_rle_rows(folder: Path, *, rows: int = 20_000_000) -> tuple[Path, int]:
    """Millions of rows of one repeated value: a few kilobytes on disk."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(c, pa.dictionary(pa.int32(), pa.string())) for c in ("question_id", "model_a", "model_b",
                                                                               "judge", "winner")])
    path = folder / "rle_rows.parquet"
    block = 1_000_000
    with pq.ParquetWriter(path, schema, use_dictionary=True, compression="zstd") as writer:
        for _ in range(rows // block):
            indices = pa.array(np.zeros(block, dtype=np.int32))
            writer.write_table(pa.table({c: pa.DictionaryArray.from_arrays(indices, pa.array([v]))
                                         for c, v in zip(schema.names, ("q", "a", "b", "j", "model_a"))}))
    return path, rows * 5 * 16


def zip_ratio(folder: Path, *, size: int = 1 << 30) -> tuple[Path, int]:
    """``size`` bytes of valid JSONL (long, repetitive rationales) in one zip member."""
    line = _record(0, rationale="a" * 60_000).encode()
    block = line * max(1, (4 * MiB) // len(line))
    path = folder / "ratio_bomb.zip"
    written = 0
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("votes.jsonl", "w", force_zip64=True) as member:
            while written < size:
                member.write(block)
                written += len(block)
    return path, written


def zip_members(folder: Path, *, members: int = 20_000) -> tuple[Path, int]:
    """A zip of many empty members."""
    path = folder / "members_bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for k in range(members):
            archive.writestr(f"f{k}.csv", b"")
    return path, members * 100


def deep_json(folder: Path, *, depth: int = 100_000, pad_bytes: int = 0) -> tuple[Path, int]:
    """A JSONL record nested ``depth`` levels deep, after ``pad_bytes`` of valid records."""
    path = folder / ("deep_json_large.jsonl" if pad_bytes else "deep_json.jsonl")
    with open(path, "w") as handle:
        written, k = 0, 0
        while written < pad_bytes:
            written += handle.write(_record(k))
            k += 1
        handle.write(json.dumps(_RECORD)[:-1] + ', "rationale": ' + "[" * depth + "]" * depth + "}\n")
    return path, path.stat().st_size


def long_line(folder: Path, *, size: int = 50_000_000, suffix: str = ".csv") -> tuple[Path, int]:
    """One line of ``size`` bytes (a rationale) after a header (CSV) or alone (JSONL)."""
    path = folder / f"long_line{suffix}"
    with open(path, "w") as handle:
        if suffix == ".csv":
            handle.write("question_id,model_a,model_b,judge,winner,rationale\n")
            handle.write("q1,a,b,j,model_a,")
            handle.write("x" * size + "\n")
        else:
            handle.write(json.dumps(_RECORD)[:-1] + ', "rationale": "' + "x" * size + '"}\n')
    return path, path.stat().st_size


def honest_jsonl(folder: Path, *, size: int = 100_000_000, bad_last_line: bool = False) -> tuple[Path, int]:
    """Arena-like battles (100 models, 5,000 voters, 16-hex ids) up to ``size`` bytes."""
    rng = np.random.default_rng(0)
    path = folder / ("battles_bad_last.jsonl" if bad_last_line else "battles.jsonl")
    written = 0
    with open(path, "w") as handle:
        while written < size:
            n = 50_000
            a = rng.integers(0, 100, n)
            b = (a + rng.integers(1, 100, n)) % 100
            voters = rng.integers(0, 5000, n)
            winners = rng.choice(["model_a", "model_b", "tie", "tie (bothbad)"], n)
            ids = rng.integers(0, 1 << 62, n)
            chunk = "".join(
                f'{{"question_id": "{i:016x}", "model_a": "model-{x}", "model_b": "model-{y}", '
                f'"judge": "voter{v}", "winner": "{w}", "turn": 1, "anony": true, "language": "English"}}\n'
                for i, x, y, v, w in zip(ids, a, b, voters, winners))
            written += handle.write(chunk)
        if bad_last_line:
            handle.write(json.dumps({**_RECORD, "winner": "modelA"}) + "\n")
    return path, path.stat().st_size


def tiny_rows_csv(folder: Path, *, size: int = 100_000_000) -> tuple[Path, int]:
    """The most rows 100 MB of canonical CSV can hold (``q123,a,b,j,tie``: 5.3 million), the last one bad."""
    path = folder / "tiny_rows.csv"
    with open(path, "w") as handle:
        written, k = handle.write("question_id,model_a,model_b,judge,winner\n"), 0
        while written < size:
            written += handle.write("".join(f"q{i},a,b,j,tie\n" for i in range(k, k + 100_000)))
            k += 100_000
        handle.write("x,a,b,j,modelA\n")
    return path, path.stat().st_size


def zip_at_budget(folder: Path) -> tuple[Path, int]:
    """Honest battles just under the zip budget, compressed about 8 to 1."""
    from peercore.io.rules import ZIP_MAX_BYTES

    inner = folder / "inner"
    inner.mkdir(exist_ok=True)
    source, size = honest_jsonl(inner, size=ZIP_MAX_BYTES - 16 * MiB)  # chunks of ~9 MB may overshoot
    path = folder / "battles_at_budget.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        archive.write(source, "battles.jsonl")
    source.unlink()
    return path, size


BOMBS = [
    Bomb("Parquet dictionary/RLE (one 0.9 MB value on 5,600 rows)", "MAX_PARQUET_BYTES (decoded size)",
         parquet_dictionary, expect="when decoded"),
    Bomb("Parquet RLE rows (20,000,000 rows of one value)", "MAX_ROWS (footer)", parquet_rle_rows,
         expect="rows (limit"),
    Bomb("zip ratio (1 GiB of JSONL, ~1000:1), dashboard upload", "ZIP_MAX_BYTES / ZIP_MAX_RATIO (before extracting)",
         zip_ratio, upload=True, expect="the archive"),
    Bomb("zip members (20,000 entries), dashboard upload", "ZIP_MAX_MEMBERS (end record, before zipfile)",
         zip_members, upload=True, expect="entries (limit"),
    Bomb("deep JSON (100,000 levels), small path", "MAX_JSON_DEPTH (token scan before parsing)", deep_json,
         expect="nested more than"),
    Bomb("deep JSON (100,000 levels) after 2 MiB of valid rows, large path", "MAX_JSON_DEPTH (no deep line reaches Arrow)",
         lambda folder: deep_json(folder, pad_bytes=2 * MiB), expect="nested more than"),
    Bomb("long line (50 MB single-line CSV)", "MAX_LINE_BYTES (byte scan before parsing)", long_line,
         expect="bytes long (limit"),
    Bomb("long line (50 MB single-line JSONL)", "MAX_LINE_BYTES", lambda folder: long_line(folder, suffix=".jsonl"),
         expect="longer than"),
]
HONEST = [
    Bomb("honest: 100 MB JSONL of battles (fast path)", "-", honest_jsonl, refused=False),
    Bomb("honest: 100 MB JSONL, bad last line (careful path names it)", "-",
         lambda folder: honest_jsonl(folder, bad_last_line=True), expect="winner 'modelA'"),
    Bomb("honest: 100 MB CSV of 5.3 million tiny rows, bad last line", "-", tiny_rows_csv,
         expect="winner 'modelA'"),
    Bomb("honest: zip at the budget (~240 MiB of JSONL), dashboard upload", "-", zip_at_budget, upload=True,
         refused=False),
]


# ------------------------------------------------------------------------ measuring


def command(path: Path, *, upload: bool, db: Path) -> list[str]:
    if upload:
        return [sys.executable, str(Path(__file__).resolve()), "--upload", str(path)]
    return [sys.executable, "-m", "peercore", "import", str(path), "--db", str(db)]


def measure(bomb: Bomb, folder: Path) -> Measured:
    """Build the input in ``folder`` and import it in a fresh process; its peak RSS and first error line."""
    path, expands_to = bomb.build(folder)
    db = folder / "bombs.sqlite"
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _WRAPPER, *command(path, upload=bomb.upload, db=db)],
                          capture_output=True, text=True, cwd=folder,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p)})
    seconds = time.perf_counter() - start
    status, peak = (int(x) for x in done.stdout.split()[-2:])
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    message = lines[-1] if lines else ""
    file_bytes = path.stat().st_size
    path.unlink()
    return Measured(bomb, file_bytes, expands_to, status, peak, seconds, message)


def _upload(path: Path) -> int:
    """The dashboard upload path without the page: materialise (extract a zip), then parse."""
    import shutil

    from peercore.errors import PeercoreError
    from peercore.io.importer import read_path
    from peercore.ui.imports import _materialise

    folder = Path(tempfile.mkdtemp(prefix="bomb-upload-"))
    try:
        target = _materialise(path.name, path.read_bytes(), folder)
        bundle = read_path(target)
        print(f"parsed: {len(bundle.judgments):,} judgments", file=sys.stderr)
        return 0
    except (PeercoreError, ValueError, OSError) as exc:
        print(f"peercore: error: {exc}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _size(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} GiB"
    if n >= MiB:
        return f"{n / MiB:.1f} MiB"
    return f"{n / 1024:.0f} KiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 100 MB honest inputs")
    parser.add_argument("--upload", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.upload:
        return _upload(Path(args.upload))
    rows = []
    ok = True
    with tempfile.TemporaryDirectory(prefix="io-bombs-") as tmp:
        for bomb in BOMBS + ([] if args.quick else HONEST):
            folder = Path(tmp) / str(len(rows))
            folder.mkdir()
            m = measure(bomb, folder)
            verdict = "accepted" if m.accepted else "refused"
            good = m.peak < BOUND and (m.accepted != bomb.refused) and (not bomb.refused or bomb.expect in m.message)
            ok &= good
            rows.append([bomb.name, _size(m.file_bytes), _size(m.expands_to), f"{m.peak / 1e6:,.0f} MB",
                         verdict, f"{m.seconds:.1f}", bomb.bounds,
                         (m.message.removeprefix("peercore: error: ")[:150] or "-").replace("|", "\\|")])
            print(f"{bomb.name}: {verdict}, peak {m.peak / 1e6:,.0f} MB", file=sys.stderr)
    print("# Hostile inputs: peak memory of the importer\n")
    print(f"Machine: {machine()}. Bound: peak RSS under 2 GB (2,000 MB) for any upload of at most 100 MB, "
          "accepted or refused. Peak = `ru_maxrss` of a fresh `peercore import` process (or of the dashboard's "
          "upload path for a zip), read with `getrusage(RUSAGE_CHILDREN)` by a wrapper with that one child.\n")
    print(markdown_table(["input", "file", "expands to", "peak RSS", "verdict", "wall s", "bounded by",
                          "the one error line"], rows))
    print(f"\nAll under the bound and with the expected verdict: {'yes' if ok else 'NO'}.")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
