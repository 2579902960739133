"""The core of dsr: the task's vocabulary (records, runs, parameters, queries, fusion kernels,
errors, atomic files).

Layer 1 of 15 (dsr/layers.toml), the lowest: every other unit may import it. Each file here is
a unit of its own and imports only core files.
"""

__version__ = "0.1.0"
