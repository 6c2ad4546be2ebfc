"""Benchmarks and the workloads they run: generators from the papers."""
