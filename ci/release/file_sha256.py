"""The sha256 of a file, as every release script compares it: lowercase hex.

One definition for the scripts that seal, check and index the release files
(ci/build/bundle-wheels.py, ci/release/check-upload.py, make_index.py,
published.py): a seal written by one and checked by another must mean the
same digest. Read in blocks, so a multi-gigabyte file is never held whole.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
