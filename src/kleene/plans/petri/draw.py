"""Draw a rule's net as a PNG with matplotlib (`kleene explain RULE --png`, when Graphviz's
dot is not installed): the constructions as a tree from the EMIT root on the right to the
sources on the left, each a transition (box) after its input place (circle: red when it
stores tokens, blue when they pass at once), the streams feeding the sources."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kleene.errors import KleeneError
from kleene.plans.petri.constructions import STATEFUL, Source
from kleene.plans.petri.net import Node

__all__ = ["draw_png"]


def draw_png(root: Node, nodes: list[Node], label: Callable[[Node], str], path: str | Path) -> None:
    """Write the net under `root` (its constructions `nodes`, each named by `label`) to
    `path` as a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Circle
    except ImportError:
        raise KleeneError(
            "--png needs Graphviz's dot command (Debian: apt-get install graphviz) or "
            'matplotlib (pip install "kleene[plots]")'
        ) from None
    rows: dict[int, float] = {}
    depth = {root.id: 0}
    for node in nodes:  # pre-order: a parent before its children
        for child in node.children:
            depth[child.id] = depth[node.id] + 1
    leaves = [0]
    _place_rows(root, rows, leaves)
    deepest = max(depth.values())
    x = {n.id: 2.4 * (deepest - depth[n.id]) + 2.4 for n in nodes}
    width, height = max(x.values()) + 1.5, leaves[0] + 1
    figure, axes = plt.subplots(figsize=(0.8 * width, 0.8 * height))
    axes.set_aspect("equal")
    for node in nodes:
        nx, ny = x[node.id], rows[node.id]
        colour = "tomato" if isinstance(node, STATEFUL) else "lightblue"
        axes.add_patch(Circle((nx - 0.75, ny), 0.12, color=colour))
        axes.annotate("", (nx - 0.5, ny), (nx - 0.63, ny), arrowprops={"arrowstyle": "->"})
        axes.text(nx, ny, label(node), ha="center", va="center", fontsize=8,
                  bbox={"boxstyle": "square", "facecolor": "white"})  # fmt: skip
        if node.parent is not None:
            px, py = x[node.parent.id], rows[node.parent.id]
            axes.annotate("", (px - 0.9, py), (nx + 0.5, ny), arrowprops={"arrowstyle": "->"})
        if isinstance(node, Source):
            axes.text(0.3, ny, node.stream, ha="center", va="center", fontsize=8,
                      bbox={"boxstyle": "rarrow", "facecolor": "lightyellow"})  # fmt: skip
            axes.annotate("", (nx - 0.9, ny), (0.9, ny), arrowprops={"arrowstyle": "->"})
    axes.set_xlim(-0.5, width - 0.5)
    axes.set_ylim(-1, height - 1)
    axes.invert_yaxis()
    axes.axis("off")
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)


def _place_rows(node: Node, rows: dict[int, float], next_row: list[int]) -> None:
    """A tree layout: leaves on successive rows, a parent level with its children's middle."""
    if not node.children:
        rows[node.id] = next_row[0]
        next_row[0] += 1
        return
    for child in node.children:
        _place_rows(child, rows, next_row)
    rows[node.id] = sum(rows[c.id] for c in node.children) / len(node.children)
