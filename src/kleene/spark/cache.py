"""kleene's cache folder on the driver's machine: `$XDG_CACHE_HOME/kleene`, else
`~/.cache/kleene`, else a temporary folder. It keeps what kleene makes once and reuses:
the zip of kleene shipped to the workers (`kleene.spark.shipping`) and the JVM's class
archive (`kleene.spark.jvm`); a new file of a kind removes those of its kind no session
used for `KEEP_UNUSED_DAYS`.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as work:
...     old, new = Path(work, "a-1.zip"), Path(work, "a-2.zip")
...     _ = old.write_bytes(b""), new.write_bytes(b"")
...     os.utime(old, (0, 0))
...     prune(Path(work), "a-*.zip", new)
...     sorted(p.name for p in Path(work).iterdir())
['a-2.zip']
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

__all__ = ["KEEP_UNUSED_DAYS", "folder", "prune"]

#: How long a file of an earlier kleene, Spark or Java stays in the cache unused (a session
#: still running may read it late).
KEEP_UNUSED_DAYS = 7


def folder() -> Path:
    """The cache folder, made if need be (OSError: none can be written)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    for found in (base / "kleene", Path(tempfile.gettempdir()) / "kleene"):
        if not found.is_absolute():  # no home found: the path would name the current folder
            continue
        try:
            found.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(found, os.W_OK):
            return found
    raise OSError("no folder to keep kleene's cache in")


def prune(where: Path, pattern: str, made: Path) -> None:
    """Remove the files matching `pattern` other than `made` that no session used (touched)
    for `KEEP_UNUSED_DAYS`."""
    oldest = time.time() - KEEP_UNUSED_DAYS * 86_400
    for other in where.glob(pattern):
        try:
            if other != made and other.stat().st_mtime < oldest:
                other.unlink()
        except OSError:  # another process removed it, or may not
            continue
