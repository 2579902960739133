"""Documents in: a Wikipedia XML dump, wikiextractor output, or JSON Lines.

Each reader yields :class:`Document` records (``id``, ``title``, ``text``) in
source order, streaming, so a 20 GB dump never sits in memory:

* ``xml`` — a MediaWiki XML export (``pages-articles.xml``, or ``.xml.bz2``
  read through :mod:`bz2`), parsed with ``xml.etree.ElementTree.iterparse``;
  only articles (namespace 0) that are not redirects are kept, and the wiki
  markup is cleaned by :func:`clean_wikitext` (mwparserfromhell);
* ``wikiextractor`` — the ``--json`` output of wikiextractor: a folder of
  ``AA/wiki_00`` files (optionally ``.bz2``), one JSON object per line with
  ``id``, ``title``, ``text`` (``url`` ignored), or a single such file;
* ``jsonl`` — one ``{"id", "title", "text"}`` object per line (``.jsonl`` or
  ``.jsonl.bz2``).

Text keeps its paragraph breaks (newlines) and section headings as lines
``== Heading ==`` (dump pages once cleaned, see :meth:`Document.plain`), which :mod:`dsr.indexes.corpus.sentences` turns into the
section and passage numbers of sentence ids. Bad records are an InputError
naming the file, line and field.
"""

from __future__ import annotations

import bz2
import hashlib
import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING

from dsr.core.errors import InputError

if TYPE_CHECKING:  # imported on first use (_mwparserfromhell)
    from mwparserfromhell.nodes import Node
    from mwparserfromhell.wikicode import Wikicode

FORMATS = ("xml", "wikiextractor", "jsonl")


def _mwparserfromhell() -> ModuleType:
    """mwparserfromhell, imported on first use, in this one place (importing this module does not load it)."""
    import mwparserfromhell
    import mwparserfromhell.nodes

    return mwparserfromhell


@dataclass
class Document:
    """One source document.

    ``markup`` is ``"text"`` (paragraphs on lines, ``== H ==`` heading lines)
    or ``"wiki"`` (raw wikitext from a dump: :func:`clean_wikitext` turns it
    into the former; the build does it in its parallel units).
    """

    id: str
    title: str
    text: str
    markup: str = "text"

    def plain(self) -> Document:
        if self.markup == "wiki":
            return Document(self.id, self.title, clean_wikitext(self.text))
        return self


def detect_format(source: Path) -> str:
    """``xml`` for ``*.xml[.bz2]``, ``wikiextractor`` for a folder, ``jsonl`` otherwise."""
    if source.is_dir():
        return "wikiextractor"
    name = source.name.lower().removesuffix(".bz2")
    if name.endswith(".xml"):
        return "xml"
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    # wikiextractor's files have no extension: wiki_00
    if re.fullmatch(r"wiki_\d+", name):
        return "wikiextractor"
    raise InputError("cannot tell the source format from the name; give `fmt` (xml, wikiextractor or jsonl)", path=source)


def source_files(source: Path, fmt: str) -> list[Path]:
    """The files a source is read from, in reading order (sorted for a wikiextractor folder)."""
    if not source.exists():
        raise InputError("no such file or folder", path=source)
    if source.is_dir():
        if fmt != "wikiextractor":
            raise InputError(f"a folder is only read as wikiextractor output, not {fmt}", path=source)
        files = sorted(p for p in source.rglob("*") if p.is_file() and not p.name.startswith("."))
        if not files:
            raise InputError("the folder holds no files", path=source)
        return files
    return [source]


def source_hash(files: list[Path]) -> str:
    """sha256 over the files' names (relative order) and bytes: what the corpus was built from."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode("utf-8") + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".bz2":
        return io.TextIOWrapper(bz2.open(path, "rb"), encoding="utf-8-sig")
    return open(path, encoding="utf-8-sig")


def _open_binary(path: Path) -> IO[bytes]:
    return bz2.open(path, "rb") if path.suffix == ".bz2" else open(path, "rb")


def read_documents(source: Path, fmt: str) -> Iterator[Document]:
    """Stream the source's documents in order."""
    if fmt not in FORMATS:
        raise InputError(f"unknown source format {fmt!r}; choose from {', '.join(FORMATS)}", field="fmt")
    for path in source_files(source, fmt):
        if fmt == "xml":
            yield from read_xml(path)
        else:
            yield from read_json_lines(path, fmt)


# --- JSON Lines and wikiextractor -----------------------------------------------


def read_json_lines(path: Path, fmt: str = "jsonl") -> Iterator[Document]:
    """``{"id", "title", "text"}`` per line (wikiextractor adds ``url``, ignored)."""
    with _open_text(path) as handle:
        try:
            for lineno, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as err:
                    raise InputError(f"not valid JSON ({err.msg})", path=path, line=lineno) from None
                if not isinstance(obj, dict):
                    raise InputError("expected a JSON object", path=path, line=lineno)
                fields = {}
                for key in ("id", "title", "text"):
                    value = obj.get(key)
                    if isinstance(value, int) and not isinstance(value, bool) and key == "id":
                        value = str(value)
                    if not isinstance(value, str) or (key != "text" and not value.strip()):
                        raise InputError("missing or not text", path=path, line=lineno, field=key)
                    fields[key] = value
                yield Document(fields["id"].strip(), fields["title"].strip(), fields["text"])
        except UnicodeDecodeError as err:
            raise InputError(f"not UTF-8 text ({err.reason})", path=path) from None


# --- MediaWiki XML ----------------------------------------------------------------


def read_xml(path: Path) -> Iterator[Document]:
    """Articles of a MediaWiki XML export (namespace 0, redirects skipped), raw wikitext."""

    def local(tag: str) -> str:
        return tag.rsplit("}", 1)[-1]

    with _open_binary(path) as handle:
        try:
            context = ET.iterparse(handle, events=("start", "end"))
            root = None
            for event, elem in context:
                if root is None and event == "start":
                    root = elem
                if event != "end" or local(elem.tag) != "page":
                    continue
                fields = {local(child.tag): child for child in elem}
                title = (fields["title"].text or "") if "title" in fields else ""
                ns = fields["ns"].text if "ns" in fields else "0"
                page_id = fields["id"].text if "id" in fields else None
                text = None
                revision = fields.get("revision")
                if revision is not None:
                    for child in revision:
                        if local(child.tag) == "text":
                            text = child.text or ""
                redirect = "redirect" in fields
                elem.clear()
                if root is not None:
                    root.clear()  # drop the finished pages: memory stays flat over the dump
                if ns != "0" or redirect:
                    continue
                if not title.strip() or not page_id:
                    raise InputError(
                        "page without a title or id",
                        path=path,
                        record=title or page_id,
                        field="title" if not title.strip() else "id",
                    )
                if text is None:
                    raise InputError("page without revision text", path=path, record=title, field="text")
                if text.lstrip().lower().startswith("#redirect"):
                    continue
                yield Document(page_id.strip(), title.strip(), text, "wiki")
        except ET.ParseError as err:
            line = err.position[0] if getattr(err, "position", None) else None
            raise InputError(f"not well-formed XML ({err})", path=path, line=line) from None
        except (OSError, EOFError) as err:  # a truncated or corrupt .bz2
            raise InputError(f"cannot read ({err})", path=path) from None


_SKIP_TAGS = {"ref", "gallery", "math", "timeline", "references", "syntaxhighlight", "score", "table"}
_SKIP_LINKS = ("file:", "image:", "category:", "media:")
_SECTION_SKIP = {
    "references",
    "external links",
    "see also",
    "further reading",
    "notes",
    "bibliography",
    "sources",
    "citations",
    "footnotes",
}


def clean_wikitext(text: str) -> str:
    """Wiki markup -> plain text with paragraphs on lines and ``== H ==`` heading lines.

    mwparserfromhell parses the markup; templates (infoboxes, citations),
    ``<ref>`` and other non-prose tags, tables, files, images and category
    links are dropped, links keep their shown text, bold and italics their
    words. Reference-like sections (References, External links, See also...)
    are dropped whole: they hold lists, not prose.
    """
    mwparserfromhell = _mwparserfromhell()

    code = mwparserfromhell.parse(text)
    for node in list(code.nodes):
        _drop_noise(code, node)
    lines: list[str] = []
    for section in code.get_sections(include_lead=True, flat=True):
        headings = section.filter_headings(recursive=False)
        if headings:
            title = headings[0].title.strip_code().strip()
            if title.lower() in _SECTION_SKIP:
                continue
            section.remove(headings[0])
            lines.append(f"== {title} ==")
        body = section.strip_code(normalize=True, collapse=True)
        for line in body.splitlines():
            line = line.strip().lstrip("*#:;").strip()
            if line:
                lines.append(line)
    return "\n".join(lines)


def _drop_noise(code: Wikicode, node: Node) -> None:
    nodes = _mwparserfromhell().nodes
    Comment, Tag, Template, Wikilink = nodes.Comment, nodes.Tag, nodes.Template, nodes.Wikilink

    if isinstance(node, (Template, Comment)):
        _remove(code, node)
    elif isinstance(node, Tag):
        if str(node.tag).lower() in _SKIP_TAGS or node.wiki_markup == "{|":
            _remove(code, node)
        elif node.contents is not None:
            for child in list(node.contents.nodes):
                _drop_noise(node.contents, child)
    elif isinstance(node, Wikilink) and str(node.title).strip().lower().startswith(_SKIP_LINKS):
        _remove(code, node)


def _remove(code: Wikicode, node: Node) -> None:
    try:
        code.remove(node)
    except ValueError:  # already gone with its parent
        pass
