"""The driver JVM's options: Spark's log quiet, the serial garbage collector on a small
local master, and a class archive that starts the JVM faster.

The class archive (the JVM's class data sharing, CDS): a JVM given one maps the classes
of Spark's jars from it rather than reading, parsing and checking each class again. On a
2-core machine a local session started in 3.6-4.3 s rather than 6.2-7.4 s, at 7.3-7.6
CPU-s rather than 12.2-12.5 (docs/benchmarks-journal.md). The JVM that writes the
archive, as it exits, runs slower (a session started in 12 s rather than 7), so the
first session on a machine (for one Java and one pyspark) only notes that one ran: one
session alone, say a first try, costs nothing more. The second writes the archive, with
the classes it loaded (about 150-180 MB in kleene's cache folder, `kleene.spark.cache`),
and the sessions after it map it. A JVM writes the archive's header last, so one cut
short (the JVM killed while writing) never has the archive's magic number and is never
used: a JVM given a cut archive would crash as it starts, one given an archive of
another Java or other jars starts without it, silently.

Options that choose class data sharing themselves (`-Xshare`, `-XX:SharedArchiveFile`,
`-XX:ArchiveClassesAtExit`) leave kleene's archive out: `-Xshare:auto` keeps the JVM's
own default.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from importlib.resources import files
from pathlib import Path

from kleene.spark import cache

__all__ = ["SERIAL_GC_CORES", "class_archive", "java", "java_options"]

#: On a local master of at most this many cores, the JVM (driver and executors in one) runs
#: the serial garbage collector rather than the JVM's default (G1 on a 2-core machine):
#: about a tenth less CPU on the benchmark's keyed query, cold and warm, and no slower.
SERIAL_GC_CORES = 2
#: A JVM option that chooses a garbage collector (the caller's choice stands).
_COLLECTOR = re.compile(r"-XX:[+-]Use\w*GC\b")


def java_options(given: str, cores: int | None) -> str:
    """The driver JVM's options: the `given` ones, with kleene's log4j profile (Spark's
    start-up lines: errors only) unless they name one, and on a local master of at most
    `SERIAL_GC_CORES` cores (`cores`; None: not local) the serial garbage collector unless
    they choose a collector.

    >>> java_options("", 2).split()[1:]
    ['-XX:+UseSerialGC']
    >>> java_options("-XX:+UseG1GC -Dlog4j.configurationFile=mine", 1)
    '-XX:+UseG1GC -Dlog4j.configurationFile=mine'
    >>> "SerialGC" in java_options("", 8) or "SerialGC" in java_options("", None)
    False
    """
    options = given
    if "log4j.configurationFile" not in options:
        quiet = f"-Dlog4j.configurationFile={files('kleene.spark').joinpath('log4j2.properties')}"
        options = f"{options} {quiet}".strip()
    if cores is not None and cores <= SERIAL_GC_CORES and not _COLLECTOR.search(options):
        options = f"{options} -XX:+UseSerialGC"
    return options


#: Options that choose class data sharing (kleene's archive is then left out).
_SHARING = re.compile(r"-Xshare:|-XX:SharedArchiveFile=|-XX:ArchiveClassesAtExit=")
#: What the JVM's class data sharing would print (as a class it cannot archive is met).
_QUIET = "-Xlog:cds*=off"
#: The first bytes of a finished archive (a dynamic archive's magic number, little-endian):
#: the JVM writes them last.
_MAGIC = bytes.fromhex("a8ab0bf0")
#: How long a session writing the archive keeps the others from writing one too.
WRITING_SECONDS = 1800


def class_archive(given: str, where: Path | None = None) -> str:
    """The options that give the JVM kleene's class archive (in `where`, by default the
    cache folder): map it when there is one; else, unless this is the first session or
    another session is writing one, write it as the JVM exits. Empty when `given` chooses
    class data sharing, when no Java is found, or when no folder can be written.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as work:
    ...     sessions = [class_archive("", Path(work)) for _ in range(3)]
    >>> sessions[0], "ArchiveClassesAtExit" in sessions[1], sessions[2]
    ('', True, '')
    >>> class_archive("-Xshare:off")
    ''
    """
    if _SHARING.search(given):
        return ""
    key = _key()
    if key is None:
        return ""
    try:
        where = cache.folder() if where is None else where
    except OSError:
        return ""
    name = f"spark-classes-{key}"
    final = where / f"{name}.jsa"
    writing = where / f"{name}.writing"
    try:
        _finish(where, name, final, writing)
        if final.exists():
            os.utime(final)  # in use: kept by `cache.prune`
            return f"-XX:SharedArchiveFile={final} {_QUIET}"
        if _first(where / f"{name}.seen") or not _claim(writing):
            return ""
    except OSError:  # a folder another process changes, or that cannot be read
        return ""
    for kind in ("jsa", "seen", "part"):  # those of another Java or pyspark
        cache.prune(where, f"spark-classes-*.{kind}", where / f"{name}.{kind}")
    return f"-XX:ArchiveClassesAtExit={where / f'{name}.{os.getpid()}.part'} {_QUIET}"


def _finish(where: Path, name: str, final: Path, writing: Path) -> None:
    """Move an archive a JVM has finished writing to its name (atomically: a JVM maps only
    whole archives); remove those a JVM left cut short."""
    for part in where.glob(f"{name}.*.part"):
        try:
            with part.open("rb") as made:
                done = made.read(len(_MAGIC)) == _MAGIC
            if done:
                os.replace(part, final)
                writing.unlink(missing_ok=True)
            elif time.time() - part.stat().st_mtime > WRITING_SECONDS:
                part.unlink()
        except OSError:  # another session moved or removed it first
            continue


def _first(seen: Path) -> bool:
    """Is this the first session (for this Java and pyspark) here? Noted if so."""
    try:
        os.close(os.open(seen, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        return True
    except FileExistsError:
        return False


def _claim(writing: Path) -> bool:
    """Become the session that writes the archive, unless another did less than
    `WRITING_SECONDS` ago."""
    try:
        os.close(os.open(writing, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        return True
    except FileExistsError:
        if time.time() - writing.stat().st_mtime < WRITING_SECONDS:
            return False
        os.utime(writing)  # its JVM never wrote one: take over
        return True


def java() -> str | None:
    """The Java that Spark's launcher runs: `JAVA_HOME`'s, else `java` on the path (None:
    none found)."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return found if found is not None and os.path.exists(found) else None


def _key() -> str | None:
    """What an archive is made for: the Java that Spark's launcher runs and this pyspark's
    jars (None: no Java found)."""
    import pyspark

    binary = java()
    if binary is None:
        return None
    binary = os.path.realpath(binary)
    jars = Path(pyspark.__file__).parent / "jars"
    made = f"{binary}\0{os.stat(binary).st_mtime_ns}\0{jars}\0{pyspark.__version__}"
    return hashlib.sha256(made.encode()).hexdigest()[:16]
