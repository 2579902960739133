"""Helpers shared by the tests, imported as ``tests.support.NAME`` (the checkout's root is on
``sys.path``: pyproject's ``pythonpath = ["."]``):

* ``data``: where the tests' data lives: ``FIXTURES`` (tests/fixtures, small files in each
  source's exact schema), ``SHARED_DATA`` (../shared/data, the real files, optional),
  ``data_sources`` (parametrise a test over both) and the ``shared_data`` fixture;
* ``board``: the leaderboard's databases, servers, runs and browser (``tools/board_harness.py``'s
  helpers re-exported);
* ``judging``: campaigns on real pools and simulated assessors (``tools/judging_harness.py``'s);
* ``kill``: real processes to SIGKILL at chosen moments;
* ``tiny_bert``: a tiny random BERT built from a config;
* ``tool_runs``: run files written by PyTerrier, ranx and Anserini's format;
* ``processes``: the check that the suite leaves no process behind.

The fixtures defined in these modules are registered once for the whole suite by
``tests/conftest.py`` (``pytest_plugins``): take them by name, never import them (an imported
fixture is a separate copy per module, so a session-scoped server would start once per module).
"""
