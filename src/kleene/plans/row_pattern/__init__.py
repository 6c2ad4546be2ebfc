"""SQL's row pattern recognition (MATCH_RECOGNIZE): the preferred match of a row pattern,
partition by partition."""
