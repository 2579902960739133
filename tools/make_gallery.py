"""Draw docs/gallery/: the figures of the judged CMU_DoG report, small, with their captions.

    nice python tools/make_gallery.py [--source ../shared/data/judged] [--dpi 110]

Runs ``dsr reproduce cmu_dog_judged`` (the baseline suite, quick with the dense
model cached) into a temporary folder, then writes each figure of its report as a
PNG at ``--dpi`` (the report's own are 300 dpi; these are small, for reading the
docs) into ``docs/gallery/``, and ``docs/gallery/README.md`` with each figure's
caption, the command and the date. Offline; exits 2 when the judged set is not there.
"""

from __future__ import annotations

import argparse
import datetime
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsr.baselines import reproduce  # noqa: E402
from dsr.core.errors import InputError  # noqa: E402
from dsr.evaluation import figure_files, figures  # noqa: E402

GALLERY = ROOT / "docs" / "gallery"
SHOWN = ("main", "subsets_nDCG_5", "recall_at_k", "measures")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=str(ROOT.parent / "shared" / "data" / "judged"))
    parser.add_argument("--dpi", type=int, default=110)
    parser.add_argument("--out", default=str(GALLERY))
    args = parser.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory() as work:
            done = reproduce("cmu_dog_judged", Path(work) / "report", source=args.source)
    except InputError as err:
        print(f"make_gallery: {err}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    drawn = figures.figures(done["results"])
    lines = [
        "# Gallery: the figures of a report",
        "",
        "The figures `dsr reproduce cmu_dog_judged --source ../shared/data/judged` writes "
        "(115 judged CMU_DoG dialogues, 50 generated splits), drawn by `tools/make_gallery.py` "
        f"on {datetime.date.today().isoformat()} at {args.dpi} dpi to keep these files small; "
        "a report's PNGs are 300 dpi and its PDFs are the vector originals. Captions are "
        "written beside each figure (`STEM.caption.tex`, `results.md`), never inside it.",
        "",
    ]
    for stem in SHOWN:
        fig = drawn[stem]
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=args.dpi)
        (out / f"{stem}.png").write_bytes(figure_files.palette_png(buffer.getvalue(), args.dpi))
        lines += [f"## `{stem}`", "", f"![{stem}]({stem}.png)", "", f"*{figures.caption(fig)}*", ""]
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {len(SHOWN)} figures and README.md into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
