"""From AST to what plans need: validation, analysis, options, functions, evaluation."""
