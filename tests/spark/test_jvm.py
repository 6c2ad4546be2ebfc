"""The driver JVM's class archive (`kleene.spark.jvm`): written by the second JVM as it
exits (the first runs as it would without), used whole by the JVMs after it, never used
cut short."""

import os
import subprocess
import time

import pytest

from kleene.spark import jvm
from kleene.spark.cache import KEEP_UNUSED_DAYS

pytestmark = pytest.mark.skipif(jvm.java() is None, reason="the archive is made for a Java")


def _option(options: str, name: str) -> str:
    """The value of `-XX:name=` among the options."""
    return next(o.split("=", 1)[1] for o in options.split() if o.startswith(f"-XX:{name}="))


def _writer(where) -> str:
    """The options of the session that writes the archive: the second."""
    assert jvm.class_archive("", where) == ""  # the first session runs as without
    return jvm.class_archive("", where)


def _java(*options: str) -> subprocess.CompletedProcess[str]:
    binary = jvm.java()
    assert binary is not None
    return subprocess.run(
        [binary, *options, "-version"], capture_output=True, text=True, check=False
    )


def test_the_first_jvm_writes_the_archive_and_the_next_maps_it_whole(tmp_path):
    writer = _writer(tmp_path)
    part = _option(writer, "ArchiveClassesAtExit")
    assert jvm.class_archive("", tmp_path) == ""  # while its JVM runs: no second writer
    assert _java(*writer.split()).returncode == 0
    with open(part, "rb") as made:
        assert made.read(4) == bytes.fromhex("a8ab0bf0")  # the header, written last
    then = jvm.class_archive("", tmp_path)
    archive = _option(then, "SharedArchiveFile")
    assert archive.endswith(".jsa") and not os.path.exists(part)
    assert not list(tmp_path.glob("*.writing"))
    # -Xshare:on fails the JVM unless it maps the archive
    done = _java(*then.split(), "-Xshare:on")
    assert done.returncode == 0, done.stderr
    assert jvm.class_archive("", tmp_path) == then


def test_an_archive_cut_short_is_never_used_and_goes_once_old(tmp_path):
    part = _option(_writer(tmp_path), "ArchiveClassesAtExit")
    with open(part, "wb") as cut:  # a JVM killed as it wrote: no header yet
        cut.write(bytes(4096))
    assert jvm.class_archive("", tmp_path) == ""  # not used, and still being written
    old = time.time() - jvm.WRITING_SECONDS - 1
    os.utime(part, (old, old))
    for marker in tmp_path.glob("*.writing"):
        os.utime(marker, (old, old))
    again = jvm.class_archive("", tmp_path)
    assert not os.path.exists(part)
    assert "ArchiveClassesAtExit" in again  # the stale writer's turn taken over
    assert not list(tmp_path.glob("*.jsa"))


def test_options_that_choose_class_sharing_leave_the_archive_out(tmp_path):
    for given in ("-Xshare:off", "-Xshare:auto", "-XX:SharedArchiveFile=/mine.jsa"):
        assert jvm.class_archive(given, tmp_path) == ""
    assert not list(tmp_path.iterdir())


def test_archives_of_another_java_or_spark_unused_for_a_week_go(tmp_path):
    stale, recent = tmp_path / "spark-classes-0.jsa", tmp_path / "spark-classes-1.jsa"
    seen, cut = tmp_path / "spark-classes-0.seen", tmp_path / "spark-classes-0.123.part"
    for path, age in (
        (stale, KEEP_UNUSED_DAYS + 1),
        (recent, KEEP_UNUSED_DAYS - 1),
        (seen, KEEP_UNUSED_DAYS + 1),
        (cut, KEEP_UNUSED_DAYS + 1),
    ):
        path.write_bytes(b"an archive of another Java")
        then = time.time() - age * 86_400
        os.utime(path, (then, then))
    _writer(tmp_path)
    assert recent.exists()
    assert not stale.exists() and not seen.exists() and not cut.exists()


def test_a_relative_cache_home_is_not_the_current_folder(monkeypatch, tmp_path):
    from kleene.spark import cache

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    assert cache.folder().is_absolute()
    assert not (tmp_path / "relative").exists()
