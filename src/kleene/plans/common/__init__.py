"""The run-time pieces every plan shares, whatever its algorithm:

- `arrivals.py`: a partition's events by arrival position (`Stream`);
- `checks.py`: conditions decided on bound events, compiled or interpreted (`Checks`);
- `finalize.py`: what every plan keeps per partition (`Partition`: stream and pending
  candidates), and from complete bindings to reported matches: negation, output format,
  selections, when a match is final, the deadline, when a partition is quiet (`Finalizer`).

`reference` is one plan among others here: it imports these as every plan does.
"""
