"""Shared helpers of the golden-corpus tests: a writable copy of the corpus and consistent rewrites."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from conformance.golden import DEFAULT_CORPUS
from conformance.store import MANIFEST_NAME, decode_json, encode_json, write_manifest, write_shard


def corpus_copy(tmp_path: Path) -> Path:
    target = tmp_path / "golden"
    shutil.copytree(DEFAULT_CORPUS, target)
    return target


def shard_members(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as shard:
        return {key: shard[key] for key in shard.files}


def rewrite_consistently(corpus: Path, shard_name: str, edit) -> None:
    """Apply ``edit(members)`` to one shard, rewrite it and its manifest digest: a corpus whose
    digests are all valid but whose expectations were changed."""
    path = corpus / shard_name
    members = shard_members(path)
    edit(members)
    write_shard(path, members)
    manifest = json.loads((corpus / MANIFEST_NAME).read_text())
    write_manifest(corpus, {name: entry["cases"] for name, entry in manifest["files"].items()},
                   generator=manifest["generator"])


def edit_meta(members: dict, case_name: str, change) -> None:
    meta = decode_json(members["meta"])
    for case in meta["cases"]:
        if case["name"] == case_name:
            change(case)
    members["meta"] = encode_json(meta)
