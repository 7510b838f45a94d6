"""Storage of the golden corpus: compressed ``.npz`` shards plus a JSON manifest of SHA-256 digests.

Layout of a corpus directory (``tests/golden/`` by default)::

    manifest.json        format version, generator, and per shard file: sha256, bytes, case names
    <shard>.npz          one zip (deflate) per case group; members:
                           meta                       uint8 JSON: the cases' scalars and expectations
                           graphs/<gid>/row_ptr|col_ind|weights
                           cases/<case>/<array>       input tree, batch, expected outputs

Shards are written deterministically (sorted members, fixed zip timestamps), so regenerating an
unchanged corpus reproduces the same digests. ``load_corpus`` verifies every digest before any
case is read: a missing, extra-modified or unlisted file makes the whole corpus corrupt.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engines.io.cache import file_sha256

FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


class CorpusMissingError(FileNotFoundError):
    """No corpus at the given place (no manifest)."""


class CorpusCorruptError(RuntimeError):
    """The manifest and the files disagree (digest, size, missing file, case list) or do not parse."""


def write_shard(path: Path, members: dict[str, np.ndarray]) -> None:
    """A deterministic compressed npz: np.load reads it like any ``savez_compressed`` file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name in sorted(members):
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.ascontiguousarray(members[name]), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=_ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, buffer.getvalue(), compresslevel=9)
    tmp.replace(path)


def encode_json(obj) -> np.ndarray:
    return np.frombuffer(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode(), dtype=np.uint8)


def decode_json(arr: np.ndarray):
    return json.loads(np.asarray(arr, dtype=np.uint8).tobytes().decode())


def write_manifest(directory: Path, shards: dict[str, list[str]], *, generator: str) -> dict:
    """Digest every shard file and write the manifest; returns it."""
    directory = Path(directory)
    files = {}
    for name in sorted(shards):
        path = directory / name
        files[name] = {"sha256": file_sha256(path), "bytes": path.stat().st_size, "cases": list(shards[name])}
    manifest = {
        "format_version": FORMAT_VERSION,
        "generator": generator,
        "total_cases": sum(len(v["cases"]) for v in files.values()),
        "total_bytes": sum(v["bytes"] for v in files.values()),
        "files": files,
    }
    (directory / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


@dataclass
class Corpus:
    """A verified corpus: case metadata in manifest order; arrays are read on demand."""

    directory: Path
    manifest: dict
    cases: list[dict]
    _open: dict = field(default_factory=dict, repr=False)

    def _shard(self, name: str):
        if name not in self._open:
            self._open[name] = np.load(self.directory / name, allow_pickle=False)
        return self._open[name]

    def arrays(self, case: dict) -> dict[str, np.ndarray]:
        """The graph and case arrays of ``case``, keyed without their member prefix."""
        shard = self._shard(case["file"])
        out = {}
        for key in ("row_ptr", "col_ind", "weights"):
            out[key] = shard[f"graphs/{case['graph']}/{key}"]
        prefix = f"cases/{case['name']}/"
        for member in case["arrays"]:
            out[member] = shard[prefix + member]
        return out

    def close(self) -> None:
        for handle in self._open.values():
            handle.close()
        self._open.clear()


def load_corpus(directory) -> Corpus:
    """Read the manifest, verify every file's size and SHA-256, then every shard's case list."""
    directory = Path(directory)
    manifest_path = directory / MANIFEST_NAME
    if not manifest_path.is_file():
        raise CorpusMissingError(
            f"no golden corpus at {directory} ({MANIFEST_NAME} not found); generate it with "
            f"`python -m conformance generate --out {directory}`"
        )
    try:
        manifest = json.loads(manifest_path.read_text())
        files = manifest["files"]
        if manifest.get("format_version") != FORMAT_VERSION:
            raise CorpusCorruptError(
                f"{manifest_path}: format_version {manifest.get('format_version')!r}, expected {FORMAT_VERSION}"
            )
    except (ValueError, KeyError, TypeError) as exc:
        raise CorpusCorruptError(f"{manifest_path} does not parse as a corpus manifest: {exc}") from exc
    problems = []
    for name, entry in sorted(files.items()):
        path = directory / name
        if not path.is_file():
            problems.append(f"{name}: missing")
            continue
        if path.stat().st_size != entry.get("bytes"):
            problems.append(f"{name}: {path.stat().st_size} bytes, manifest says {entry.get('bytes')}")
            continue
        actual = file_sha256(path)
        if actual != entry.get("sha256"):
            problems.append(f"{name}: sha256 {actual}, manifest says {entry.get('sha256')}")
    if problems:
        raise CorpusCorruptError("corrupt golden corpus in " + str(directory) + ":\n  " + "\n  ".join(problems))
    cases = []
    for name, entry in sorted(files.items()):
        try:
            with np.load(directory / name, allow_pickle=False) as shard:
                meta = decode_json(shard["meta"])
        except Exception as exc:  # noqa: BLE001 - any unreadable shard is corruption
            raise CorpusCorruptError(f"{directory / name} cannot be read: {exc}") from exc
        names = [c["name"] for c in meta["cases"]]
        if names != entry["cases"]:
            raise CorpusCorruptError(f"{name}: the manifest's case list differs from the shard's")
        for c in meta["cases"]:
            c["file"] = name
            cases.append(c)
    return Corpus(directory, manifest, cases)
