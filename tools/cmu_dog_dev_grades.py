"""Write a finished judging campaign's grades into the judged development set ``cmu_dog_dev``.

    python tools/cmu_dog_dev_grades.py --db sqlite:///judge.sqlite --campaign cmu-dog-dev --method ds

The campaign is the one docs/devset.md describes (``dsr judge create`` over
``dsr data build cmu_dog_dev --param points=pool``). From its outcome (``dsr judge report``'s:
the counted assessors' grades, aggregated by ``--method``):

1. every point whose pooled sentences all have a label gets ``grades`` (sentence id -> label)
   in ``dsr/collections/data/cmu_dog_dev.points.jsonl``; grades already there are never changed;
2. ``cmu_dog_dev.assessments.jsonl`` beside it keeps every grade of a pooled sentence (point,
   sentence, assessor, grade or ``"u"``, seconds, counted), so anyone can aggregate again;
   planted checks are not pooled sentences and are left out;
3. ``cmu_dog_dev.judging.json`` keeps the campaign's settings, honeypot results, agreement
   (with Cohen's kappa on the sentences graded twice) and counts, without paths or tokens.

Ids and grades only: no text of a conversation or a document. Prints the counts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsr.collections import cmu_dog_dev  # noqa: E402
from dsr.core.atomic import atomic_write, write_json  # noqa: E402
from dsr.judging.assessor_agreement import cohen, twice_graded_kappa  # noqa: E402
from dsr.judging.campaign_report import outcome  # noqa: E402
from dsr.judging.campaigns import Judging  # noqa: E402

DATA = cmu_dog_dev.POINTS_FILE.parent
ASSESSMENTS = DATA / "cmu_dog_dev.assessments.jsonl"
SUMMARY = DATA / "cmu_dog_dev.judging.json"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="the judging database (as dsr judge --db)")
    parser.add_argument("--campaign", default="cmu-dog-dev")
    parser.add_argument("--method", default="ds", help="aggregation (dsr judge report --method)")
    parser.add_argument(
        "--points", type=Path, default=cmu_dog_dev.POINTS_FILE, help="the points file to fill (default: the package's)"
    )
    parser.add_argument(
        "--recheck",
        metavar="CAMPAIGN",
        help="a campaign over already graded points (the 115-point set's): its assessors' "
        "agreement with those grades goes into the summary",
    )
    args = parser.parse_args(argv)
    assessments = args.points.with_name(ASSESSMENTS.name)
    summary_file = args.points.with_name(SUMMARY.name)
    judging = Judging.open(args.db)
    result = outcome(judging, args.campaign, args.method)
    pooled = result.grades[~result.grades["planted"]]
    labels = result.labels.to_dict()
    items = result.items[result.items["candidate"].notna()]
    per_point: dict[str, dict[str, int | None]] = {}
    for item, point, candidate in zip(items["item"], items["dialogue"], items["candidate"]):
        label = labels.get(item)
        per_point.setdefault(point, {})[candidate] = None if label is None else int(label)
    records = [json.loads(line) for line in args.points.read_text(encoding="utf-8").splitlines() if line.strip()]
    added = _fill(records, per_point)
    counted = set(zip(result.counted["item"], result.counted["assessor"]))
    key_of = dict(zip(items["item"], zip(items["dialogue"], items["candidate"])))
    lines = [
        {
            "point": key_of[i][0],
            "sentence": key_of[i][1],
            "assessor": a,
            "grade": "u" if u else int(g),
            "seconds": None if s != s else round(float(s), 2),
            "counted": (i, a) in counted,
        }
        for i, a, g, u, s in zip(pooled["item"], pooled["assessor"], pooled["grade"], pooled["unsure"], pooled["seconds"])
    ]
    lines.sort(key=lambda r: (r["point"], r["sentence"], r["assessor"]))
    summary = {
        **result.to_json(),
        "seed": int(result.campaign.seed),
        "twice_graded": twice_graded_kappa(result.counted),
        "points_graded_now": sum(1 for r in records if r["grades"]),
        "points_graded_by_this_campaign": sum(1 for r in records if r["grades"] and r["grades"] == per_point.get(r["id"])),
    }
    if args.recheck:
        summary["recheck"] = recheck(outcome(judging, args.recheck, args.method), records)
    _write_lines(args.points, records)
    _write_lines(assessments, lines)
    write_json(summary_file, summary)
    twice = summary["twice_graded"]
    if args.recheck:
        agreed = summary["recheck"]["aggregated"]
        print(
            f"recheck {args.recheck}: its labels against the points' grades on {agreed['sentences']} sentences: "
            f"kappa {_fmt(agreed['kappa_binary'])} (relevant or not), {_fmt(agreed['kappa_weighted'])} (linear)"
        )
    print(
        f"{added} points graded by {args.campaign} ({summary['points_graded_now']} of {len(records)} graded now); "
        f"{len(lines)} grades of pooled sentences kept; twice graded: {twice['items']} sentences, "
        f"Cohen's kappa {_fmt(twice['kappa_binary'])} (relevant or not), {_fmt(twice['kappa_weighted'])} (0/1/2 linear)"
    )
    return 0


def _fill(records: list[dict], per_point: dict[str, dict[str, int | None]]) -> int:
    """Grades for the points without any whose pooled sentences all have a label."""
    added = 0
    for record in records:
        got = per_point.get(record["id"])
        if record["grades"] or not got or any(v is None for v in got.values()):
            continue
        if set(got) != set(record["pool"]):
            raise SystemExit(f"{record['id']}: the campaign's sentences are not the point's pool")
        record["grades"] = dict(sorted(got.items()))
        added += 1
    return added


def recheck(result, records: list[dict]) -> dict:
    """A campaign over graded points: every grade of its assessors (counted or not: the
    checks there are the known grades themselves), and its aggregated labels, against the
    grades those points have (Cohen's kappa on relevant or not and linearly weighted)."""
    grades = {(r["id"], c): g for r in records for c, g in r["grades"].items()}
    items = result.items[result.items["candidate"].notna()]
    key_of = {i: (d, c) for i, d, c in zip(items["item"], items["dialogue"], items["candidate"]) if (d, c) in grades}
    given = result.grades[~result.grades["planted"] & result.grades["grade"].notna()]
    given = given[given["item"].isin(key_of)]

    def versus(pairs) -> dict:
        theirs = np.array([float(g) for _, g in pairs])
        known = np.array([float(grades[key_of[i]]) for i, _ in pairs])
        return {
            "sentences": len(pairs),
            "exact_agreement": float(np.mean(theirs == known)),
            "kappa_binary": cohen((theirs >= 1).astype(float), (known >= 1).astype(float), [0, 1]),
            "kappa_weighted": cohen(theirs, known, [0, 1, 2], weighted=True),
            "relevant_share": float(np.mean(theirs >= 1)),
            "relevant_share_known": float(np.mean(known >= 1)),
        }

    per_assessor = {str(a): versus(list(zip(rows["item"], rows["grade"]))) for a, rows in given.groupby("assessor", sort=True)}
    confusion = [
        [int(((given["grade"] == mine) & (given["item"].map(lambda i: grades[key_of[i]]) == known)).sum()) for mine in (0, 1, 2)]
        for known in (0, 1, 2)
    ]
    return {
        "campaign": result.campaign.name,
        "points": len({d for d, _ in key_of.values()}),
        "counted_assessors": sorted(a["assessor"] for a in result.assessors if a["counted"]),
        "grades": versus(list(zip(given["item"], given["grade"]))),
        "confusion_known_by_given": confusion,
        "aggregated": versus([(i, g) for i, g in result.labels.items() if i in key_of]),
        "per_assessor": per_assessor,
        "twice_graded": twice_graded_kappa(result.counted),
    }


def _fmt(value) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def _write_lines(path: Path, rows) -> None:
    with atomic_write(path) as handle:
        handle.writelines(json.dumps(r, sort_keys=True) + "\n" for r in rows)


if __name__ == "__main__":
    raise SystemExit(main())
