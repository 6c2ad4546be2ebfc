"""SQL's row pattern recognition (`MATCH_RECOGNIZE`, SQL:2016 part 5): the clause and its
row-pattern regular expression, read over the one expression tree."""
