"""LEAD rules (Al Bassit, Skhiri & Ammar, DEBS 2019) as kleene reads them: `grammar.lark`, the
AST of a rule's clauses and patterns (`ast.py`), the reader (`reader.py`) and the printer
(`printer.py`)."""
