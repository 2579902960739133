"""A figure as the files a paper includes: PNG at 300 dpi, saved with 256 colours, and PDF with TrueType fonts."""

from __future__ import annotations

import io

from dsr.evaluation.figures import PNG_DPI, _mpl


def figure_files(fig, stem: str, formats: tuple[str, ...] = ("png", "pdf")) -> dict[str, bytes]:
    """The figure as PNG (:data:`PNG_DPI`, 300 dpi, 256 colours) and vector PDF (for the paper), or any
    of ``formats`` (``svg`` too), without dates in the vector files (so a rerun writes the
    same bytes)."""
    metadata = {"png": None, "pdf": {"CreationDate": None, "ModDate": None}, "svg": {"Date": None}}
    out = {}
    for fmt, meta in ((f, metadata[f]) for f in formats):
        buffer = io.BytesIO()
        # constrained layout (set on every figure) fits the labels; bbox_inches="tight"
        # would render each figure twice
        fig.savefig(buffer, format=fmt, **({"dpi": PNG_DPI} if fmt == "png" else {"metadata": meta}))
        # the layout found for the first format serves the others (it is the costliest step)
        fig.set_layout_engine("none")
        out[f"{stem}.{fmt}"] = palette_png(buffer.getvalue()) if fmt == "png" else buffer.getvalue()
    return out


def palette_png(data: bytes, dpi: int = PNG_DPI) -> bytes:
    """A 300 dpi PNG as 256 colours (Pillow, matplotlib's own dependency): a figure has few
    colours, so it looks the same at about 40% of the bytes (a report stays under 2 MB)."""
    image = _mpl()["Image"]
    source = image.open(io.BytesIO(data))
    buffer = io.BytesIO()
    source.convert("RGB").quantize(256, method=image.Quantize.MEDIANCUT).save(buffer, "PNG", optimize=True, dpi=(dpi, dpi))
    return buffer.getvalue()
