"""From AST to what plans need, pass by pass (`pipeline.py`): validation, analysis (a
`Query`: `query.py`; SASE+ `analysis.py`, LEAD `rules.py`), options, functions, and the one
interpreter (`evaluate.py`) and code generator (`codegen.py`) of expressions."""
