"""The core of dsr: the task's vocabulary (records, runs, parameters, queries, fusion kernels,
errors, atomic files).

Layer 1 of 15 (dsr/layers.toml), the lowest: every other unit may import it. Each file here is
a unit of its own and imports only core files.
"""

__version__ = "0.1.0"

#: the documentation site (mkdocs.yml's site_url): what a hint points a user to, never a file of
#: the repository, which a pip user does not have
DOCS_URL = "https://dialogue-sentence-retrieval.readthedocs.io/en/latest/"


def docs_url(page: str = "", anchor: str = "") -> str:
    """The site's address of a page (``board``: docs/board.md) and, given, a section's anchor."""
    address = DOCS_URL + (f"{page}/" if page else "")
    return f"{address}#{anchor}" if anchor else address
