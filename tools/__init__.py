"""The project's scripts (``python tools/NAME.py``). A package so that the tests and benchmarks
import the few modules they share with them by a proper path (``from tools.plain_eval import
plain_measure``, ``from tools import board_harness``) from the checkout's root, which pytest
(``pythonpath = ["."]``) and the benchmark scripts put on ``sys.path``."""
