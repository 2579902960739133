"""A figure as the files a paper includes: PNG at 300 dpi, saved with 256 colours, and PDF with TrueType fonts."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, cast

from dsr.evaluation.figures import PNG_DPI, _mpl

if TYPE_CHECKING:  # matplotlib itself is imported on first use (_mpl)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure


def figure_files(fig: Figure, stem: str, formats: tuple[str, ...] = ("png", "pdf")) -> dict[str, bytes]:
    """The figure as PNG (:data:`PNG_DPI`, 300 dpi, 256 colours) and vector PDF (for the paper), or any
    of ``formats`` (``svg`` too), without dates in the vector files (so a rerun writes the
    same bytes)."""
    metadata = {"pdf": {"CreationDate": None, "ModDate": None}, "svg": {"Date": None}}
    out = {}
    for fmt in formats:
        buffer = io.BytesIO()
        # constrained layout (set on every figure) fits the labels; bbox_inches="tight"
        # would render each figure twice
        if fmt == "png":
            # Agg's pixels as they are ("raw" RGBA): matplotlib's own PNG would be compressed
            # only to be decoded again for the palette (the same pixels, ~8% of a report's drawing)
            fig.savefig(buffer, format="raw", dpi=PNG_DPI)
            # the renderer that drew them (new_figure's Agg canvas): its pixels
            height, width = cast("FigureCanvasAgg", fig.canvas).buffer_rgba().shape[:2]
            out[f"{stem}.png"] = palette_png(buffer.getvalue(), (width, height))
        else:
            fig.savefig(buffer, format=fmt, metadata=metadata[fmt])
            out[f"{stem}.{fmt}"] = buffer.getvalue()
        # the layout found for the first format serves the others (it is the costliest step)
        fig.set_layout_engine("none")
    return out


def palette_png(rgba: bytes, size: tuple[int, int], dpi: int = PNG_DPI) -> bytes:
    """Agg's RGBA pixels (``size``: width, height) as a 300 dpi PNG of 256 colours (Pillow,
    matplotlib's own dependency): a figure has few colours, so it looks the same at about 40%
    of the bytes (a report stays under 2 MB)."""
    image = _mpl()["Image"]
    if len(rgba) != size[0] * size[1] * 4:
        raise ValueError(f"{len(rgba)} bytes of RGBA are not a {size[0]}x{size[1]} image")
    source = image.frombuffer("RGBA", size, rgba, "raw", "RGBA", 0, 1)
    buffer = io.BytesIO()
    source.convert("RGB").quantize(256, method=image.Quantize.MEDIANCUT).save(buffer, "PNG", optimize=True, dpi=(dpi, dpi))
    return buffer.getvalue()
