"""kleene shipped to Spark's Python workers: a cluster's workers need pyspark, pyarrow,
pandas and numpy installed (Spark's own Arrow functions need them), and nothing of
kleene's. Every job kleene starts adds one zip to its session (`SparkContext.addPyFile`, or
`addArtifacts` on Spark Connect): kleene itself and its pure-Python dependencies (lark,
sortedcontainers), with each module compiled for the driver's Python. The zip comes
before the workers' own packages on their path, so they run the driver's kleene even where
another is installed.

The zip is made once per content (the packages' files, their sizes and times, the Python
version) and kept in kleene's cache folder (`kleene.spark.cache`), so only the first job
after an upgrade makes it; a new one removes those no job used for a week.

>>> import zipfile
>>> with zipfile.ZipFile(shipment()) as made:
...     names = set(made.namelist())
>>> {"kleene/__init__.py", "kleene/__init__.pyc", "lark/__init__.py",
...  "sortedcontainers/__init__.py", "kleene/language/sase/grammar.lark"} <= names
True
"""

from __future__ import annotations

import hashlib
import importlib
import os
import py_compile
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from kleene.spark import cache
from kleene.spark.session import classic_context

__all__ = ["PACKAGES", "ship", "shipment"]

#: What the workers import that a cluster need not have: kleene and its pure-Python
#: dependencies (pyarrow, numpy and pandas come with pyspark[sql]).
PACKAGES = ("kleene", "lark", "sortedcontainers")

#: The SparkContexts (by application id) kleene has already shipped itself to.
_SHIPPED: set[str] = set()


def ship(session: Any) -> None:
    """Add kleene's zip (`shipment`) to the session's workers, once per application."""
    context = classic_context(session)
    application = str(context.applicationId) if context is not None else str(id(session))
    if application in _SHIPPED:
        return
    path = str(shipment())
    if context is not None:
        context.addPyFile(path)
    else:
        session.addArtifacts(path, pyfile=True)
    _SHIPPED.add(application)


def shipment() -> Path:
    """The zip of `PACKAGES`, made if the cache does not hold it for their current files."""
    roots = [(name, _root(name)) for name in PACKAGES]
    files = [
        (name, path, path.relative_to(root.parent))
        for name, root in roots
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    ]
    digest = hashlib.sha256(sys.version.encode())
    for _, path, inside in files:
        stat = path.stat()
        digest.update(f"{inside}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    folder = cache.folder()
    target = folder / f"kleene-workers-{digest.hexdigest()[:16]}.zip"
    if target.exists():
        os.utime(target)  # in use: kept by `cache.prune`
    else:
        _write(target, files)
        cache.prune(folder, "kleene-workers-*.zip", target)
    return target


def _root(package: str) -> Path:
    module = importlib.import_module(package)
    return Path(next(iter(module.__path__))).resolve()


def _write(target: Path, files: list[tuple[str, Path, Path]]) -> None:
    """Write the zip beside `target` and move it there unless another process got there
    first: each module's source and, beside it, its code compiled for this Python (a
    `.pyc` the workers' zip importer loads without compiling; unchecked, since the zip's
    content never changes). A zip in place is never replaced: another build differs in its
    bytes, and Spark refuses a file added to a session that changed since ("exists and does
    not match contents")."""
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        partial = Path(work) / target.name
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as made:
            for _, path, inside in files:
                made.write(path, inside.as_posix())
                if path.suffix == ".py":
                    compiled = Path(work) / "module.pyc"
                    py_compile.compile(
                        str(path),
                        cfile=str(compiled),
                        dfile=inside.as_posix(),
                        doraise=True,
                        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
                    )
                    made.write(compiled, inside.with_suffix(".pyc").as_posix())
        try:
            os.link(partial, target)
        except FileExistsError:
            pass  # another process made it first
        except OSError:  # a file system without hard links: moved there, unless one came
            if not target.exists():
                os.replace(partial, target)
