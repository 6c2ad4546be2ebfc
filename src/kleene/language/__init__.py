"""Query languages: text to AST and back. `expr.py` is the one expression tree every
language shares; `text.py` what reading and printing mean in all of them; each language is
a subpackage with its grammar, reader and printer (`sase/`, `lead/`)."""
