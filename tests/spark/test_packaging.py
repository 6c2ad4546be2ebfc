"""pyspark stays optional: kleene imports without it, kleene.spark says what to install."""

import subprocess
import sys


def python(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


def test_kleene_imports_without_pyspark():
    blocked = "import sys; sys.modules['pyspark'] = None; "
    done = python(
        blocked
        + "import kleene, kleene.cli; "
        + "print(kleene.match('PATTERN SEQ(A a)', [{'type': 'A', 'ts': 1}]))"
    )
    assert done.returncode == 0, done.stderr
    assert "Match(a=[0])" in done.stdout
    done = python(blocked + "import kleene.spark")
    assert "kleene.spark needs pyspark: pip install 'kleene[spark]'" in done.stderr
