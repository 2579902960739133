"""The web core the board (:mod:`dsr.board`) and judging (:mod:`dsr.judging`) both stand on:
sessions, sign-in, CSRF, pages, security headers.

Layer 6 of 15 (dsr/layers.toml): it imports only the core files, though its layer would allow
more.

Each part is written once:

* ``security`` — the app itself: security headers and the Content-Security-Policy, the
  request-body cap (413), the shared static files (``/static``), ``/healthz``
* ``csrf`` — CSRF tokens signed with itsdangerous and bound to the browser: to its session
  when signed in, else to a random nonce cookie; a token of another browser or session, a
  tampered or stale one is refused
* ``signin`` — token sign-in and sign-out: a server-side session (the cookie holds a random
  key, the application's table its sha256), ended by signing out or by revoking it
* ``pages`` — the Jinja2 templates over one shared layout (``templates/layout.html``), the
  sign-in form and the ``problem`` error page

Each application brings its own tables, cookie names and templates.
"""
