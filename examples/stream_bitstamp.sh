#!/usr/bin/env bash
# kleene stream on real data: 30 minutes of the Bitstamp BTC/USD order book (314,057 events)
# are replayed into a folder, 20,000 rows a file at 10,000 rows a second, while kleene stream
# finds flash orders (examples/flash_orders.sase) as the files arrive, printing a line a
# micro-batch. Run from the repository root after `make run` (or `make test`) set up .venv:
#
#   examples/stream_bitstamp.sh PATH/TO/orders.csv.gz [WORK_FOLDER]
#
# orders.csv.gz is the ob-analytics sample of the order book (columns id, timestamp,
# exchange_timestamp in epoch milliseconds, price, volume, action, direction).
set -euo pipefail
log=${1:?give the path to orders.csv.gz}
work=${2:-build/stream-bitstamp}
kleene=.venv/bin/kleene
rm -rf "$work"
mkdir -p "$work/feed"

# the feed: a numbered copy of the log, a file at a time (seq orders equal timestamps)
$kleene replay "$log" --to "$work/feed" --batch 20000 --rate 10000 --number seq &
feeder=$!
trap 'kill $feeder 2>/dev/null || true' EXIT

# the stream: 5 s of lateness allowed; stops by itself 45 s after Spark is up
$kleene stream examples/flash_orders.sase --input "$work/feed" --format csv \
    --schema "id long, timestamp long, exchange_timestamp long, price double, volume double, action string, direction string, seq long" \
    --event-type Order --ts-column exchange_timestamp --ts-unit ms --id-column seq \
    --arrival seq --watermark "5 seconds" --trigger 2s --duration 45 \
    --checkpoint "$work/checkpoint" --output "$work/matches" --master "local[2]"

wait $feeder
.venv/bin/python - "$work/matches" <<'PY'
import sys
import pyarrow.dataset as ds
found = ds.dataset(sys.argv[1], format="parquet").to_table()
print(f"{found.num_rows} flash orders found (kleene match finds 377 in the whole log; the "
      "last seconds wait for the watermark, in the checkpoint)")
PY
