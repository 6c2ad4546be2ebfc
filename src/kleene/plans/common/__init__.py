"""The run-time pieces every plan shares, whatever its algorithm:

- `stream.py`: a partition's events by arrival position (`Stream`);
- `checks.py`: conditions decided on bound events, compiled or interpreted (`Checks`);
- `finalize.py`: from complete bindings to reported matches: negation, output format,
  selections, when a match is final and the state's deadline (`Finalizer`, `Pending`).

`reference` is one plan among others here: it imports these as every plan does.
"""
