"""The core of dsr: the task's vocabulary (records, runs, parameters, queries, fusion
kernels, errors, atomic files), imported by every other unit and importing only itself.
Each file here is a unit of its own (docs/architecture.md).
"""

__version__ = "0.1.0"
