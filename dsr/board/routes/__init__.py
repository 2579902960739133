"""The board app's routers, one module each (FastAPI ``APIRouter`` objects), included by
:func:`dsr.board.app.create_app` in the order of :data:`ROUTERS`.

Part of ``dsr.board``, layer 8 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files,
``dsr.indexes``, ``dsr.collections``, ``dsr.rankers``, ``dsr.rerankers``,
``dsr.open_retrieval``, ``dsr.evaluation``, ``dsr.interchange``, ``dsr.pyterrier``, ``dsr.web``
and ``dsr.db``. It imports nothing of ``dsr.judging``, though its layer would allow it.

* ``deps`` — what they share: the board, templates, who is asking, CSRF, the upload
* ``pages`` — the browser pages (index, board, run, run file, the submission form)
* ``auth`` — log in and out
* ``exports`` — a board as CSV and LaTeX
* ``api`` — the JSON API under ``/api``

A new part of the site is a module with its own ``router`` (and, if it needs them,
its own tables and migration), added to :data:`ROUTERS` or passed to ``create_app``.
"""

from __future__ import annotations

from dsr.board.routes import api, auth, exports, pages

ROUTERS = [pages.router, auth.router, exports.router, api.router]
#: plain Starlette routes the app matches before the routers (the submission API: the one
#: answer 20 clients wait for at once, where FastAPI's routing showed in the server's CPU)
FIRST = api.FIRST
