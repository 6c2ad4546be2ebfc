"""kleene's benchmarks: the papers' experiments and kleene's own, run from a source checkout
with `python -m benchmarks NAME ...` (README.md lists them). Not part of the installed
package; the workloads they generate come from `kleene.testing.workloads`."""
