#!/usr/bin/env python3
"""Write dsr/collections/data/cmu_dog_judged.fingerprints.json: how `dsr train`
recognises the judged development set by content (see dsr/collections/cmu_dog_judged.py).

For each judged point: its point fingerprint (a hash of its context turns) and the 12-bit
tag of its judged relevant candidates, or null where the silver labels of the same point
in `dsr data build cmu_dog --split valid` give the same tag (no evidence either way). The
file holds hashes only, never the judged data.

    python tools/judged_fingerprints.py [--shared ../shared/data]

Run it again when the judged file changes (and add its content hash to KNOWN_HASHES).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()

    from dsr.collections import load_collection
    from dsr.collections.cmu_dog_judged import FINGERPRINTS_FILE, label_tag, point_fingerprint

    judged = load_collection("cmu_dog_judged", args.shared / "judged")
    silver = {point_fingerprint(d): label_tag(d) for d in load_collection("cmu_dog", args.shared / "cmu_dog", "valid")}
    points = {}
    for dialogue in judged:
        fingerprint, tag = point_fingerprint(dialogue), label_tag(dialogue)
        if fingerprint in points:
            raise SystemExit(f"two judged points share the context of {dialogue.id}")
        points[fingerprint] = None if silver.get(fingerprint) == tag else tag
    FINGERPRINTS_FILE.write_text(
        json.dumps(
            {
                "about": "cmu_dog_judged points: point fingerprint -> 12-bit tag of the judged relevant "
                "candidates (null: as silver); tools/judged_fingerprints.py",
                "judged_hash": judged.content_hash,
                "points": dict(sorted(points.items())),
            },
            indent=1,
            sort_keys=True,
        )
        + "\n",
        encoding="utf-8",
    )
    kept = sum(tag is not None for tag in points.values())
    print(f"{FINGERPRINTS_FILE}: {len(points)} points, {kept} with a tag silver labels do not give")


if __name__ == "__main__":
    main()
