-- A V in each symbol's prices: a fall of three ticks or more, then a rise of three or more
-- (SQL's row pattern recognition, over the data kleene gen stock makes).
MATCH_RECOGNIZE (
  PARTITION BY symbol
  ORDER BY ts
  MEASURES
    FIRST(price) AS top,
    LAST(DOWN.price) AS bottom,
    LAST(UP.price) AS back,
    count(*) AS ticks
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (START DOWN{3,} UP{3,})
  DEFINE
    DOWN AS price < PREV(price),
    UP AS price > PREV(price)
)
