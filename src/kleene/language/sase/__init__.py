"""SASE+ (Agrawal, Diao, Gyllstrom & Immerman, SIGMOD 2008) as kleene reads it: `grammar.lark`,
the AST of a pattern's structure and clauses (`ast.py`), the reader (`reader.py`, with the
match-window paper's reading of bare Kleene attributes in `quantified.py`), the printer
(`printer.py`) and the Python builder (`builder.py`)."""
