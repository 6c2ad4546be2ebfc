"""AFAs written directly (Chandramouli, Goldstein & Maier, VLDB 2010): patterns the query
language does not write (chart patterns, registers, uncertain streams), in the text form
(`read_afa`) or with the Python builder (`Builder`), run by the `afa` plan wherever a query
runs (`kleene.Engine`, `kleene.match`); and the arcs of one running, changed while the
stream runs (`arcs`). docs/plans/afa.md tells the whole story.

>>> import kleene
>>> updown = kleene.afa.read_afa('''
... AFA updown
... REGISTER (n = 0)
... FINAL q2
... ARC down: q0 -> q1 WHEN e.x < 0 SET n = 1
... ARC more: q1 -> q1 WHEN e.x < 0 SET n = r.n + 1
... ARC up: q1 -> q2 WHEN e.x > 0 AND r.n >= 2
... ''')
>>> [m.ids()["events"] for m in kleene.match(updown, [{"type": "T", "ts": t, "x": x}
...                                                   for t, x in enumerate([-1, -2, 3])])]
[(0, 1, 2)]
"""

from kleene.plans.afa import Afa, Arc, Arcs, Builder, arcs, read_afa, read_arc

__all__ = ["Afa", "Arc", "Arcs", "Builder", "arcs", "read_afa", "read_arc"]
