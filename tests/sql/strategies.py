"""Hypothesis strategies for row patterns and MATCH_RECOGNIZE clauses over small tables."""

from hypothesis import strategies as st

from kleene.language.sql import ast as Q
from kleene.language.sql.printer import pattern_text

NAMES = ("A", "B", "C")


def row_patterns(names=NAMES, max_leaves=6):
    """Row patterns over `names`: every construct of the regular expression."""
    leaf = st.one_of(
        st.sampled_from(names).map(Q.Label),
        st.sampled_from([Q.Anchor("^"), Q.Anchor("$"), Q.Concat(())]),
    )

    def grow(inner):
        items = st.lists(inner, min_size=2, max_size=3).map(tuple)
        bounds = st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 3))).filter(
            lambda b: b[1] is None or b[0] <= b[1]
        )
        return st.one_of(
            items.map(Q.Concat),
            items.map(Q.Alternation),
            items.map(Q.Permute),
            inner.map(Q.Exclusion),
            st.builds(
                lambda body, b, g: Q.Repeat(body, b[0], b[1], g), inner, bounds, st.booleans()
            ),
        )

    return st.recursive(leaf, grow, max_leaves=max_leaves)


#: DEFINE conditions, some reading only the row and its neighbours, some how the match so
#: far mapped rows, one looking ahead.
CONDITIONS = (
    None,
    "x > PREV(x)",
    "x = 1",
    "x < 2",
    "x >= A.x",
    "count(A.*) < 2",
    "NEXT(x) > x",
    "FIRST(x) = x",
    "CLASSIFIER(U) IS NULL OR x <> 0",
)

SKIPS = (
    "",
    "AFTER MATCH SKIP TO NEXT ROW",
    "AFTER MATCH SKIP TO FIRST B",
    "AFTER MATCH SKIP TO LAST A",
)


@st.composite
def clauses(draw, rows="ALL ROWS PER MATCH", measures="MATCH_NUMBER() AS m, CLASSIFIER() AS c"):
    """The text of a clause over a table of columns i (the row's position) and x; every
    name it reads is one of the pattern's."""
    pattern = draw(row_patterns())
    present = set(Q.labels(pattern))
    members = [name for name in ("A", "B") if name in present]
    usable = [
        c
        for c in CONDITIONS
        if c is None or (("A." not in c or "A" in present) and ("U" not in c or members))
    ]
    defines = []
    for name in NAMES:
        condition = draw(st.sampled_from(usable))
        if condition is not None and name in present:
            defines.append(f"{name} AS {condition}")
    define = f" DEFINE {', '.join(defines)}" if defines else ""
    subset = f" SUBSET U = ({', '.join(members)})" if members else ""
    skip = draw(st.sampled_from([s for s in SKIPS if not s or s[-1] in present]))
    return (
        f"ORDER BY i MEASURES {measures} {rows} {skip} PATTERN ({pattern_text(pattern)})"
        f"{subset}{define}"
    )


def tables(max_rows=7):
    """Rows {i, x} with x small (and sometimes null)."""
    values = st.one_of(st.integers(0, 2), st.none())
    return st.lists(values, max_size=max_rows).map(
        lambda xs: [{"i": i, "x": x} for i, x in enumerate(xs)]
    )
