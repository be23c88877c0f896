"""Performance benchmark of the comment service (DESIGN.md, "Performance targets").

Run ``python -m bench.core --help``; the figures of the last full run are in
``docs/benchmarks.md``.
"""
