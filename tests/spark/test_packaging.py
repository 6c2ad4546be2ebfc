"""pyspark stays optional: kleene imports without it, kleene.spark says what to install."""

import subprocess
import sys

from kleene.bench.spark import Result, table
from kleene.cli import main


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


def test_benchmark_table():
    results = [
        Result("keyed", "in-process", 1000, 3, 2.0),
        Result("keyed", "spark local[2]", 1000, 3, 0.5, startup=9.0, peak_mib=120.0),
    ]
    lines = table(results).splitlines()
    assert lines[2] == "| keyed | in-process | 1,000 | 3 | 500 |  |  |  |"
    assert lines[3] == "| keyed | spark local[2] | 1,000 | 3 | 2,000 | 4.00 | 9.0 | 120 |"


def test_bench_command_end_to_end(tmp_path, capsys):
    args = [
        "bench",
        "spark",
        "--events",
        "3000",
        "--keys",
        "5",
        "--cores",
        "1",
        "--queries",
        "keyed",
        "--work",
        str(tmp_path),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| setting | runner |")
    in_process, spark = out[2].split(" | "), out[3].split(" | ")
    assert in_process[1] == "in-process" and spark[1].startswith("spark local[1] (by symbol)")
    assert in_process[3] == spark[3]  # the same matches
