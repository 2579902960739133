#!/usr/bin/env python3
"""Write the git blob ids and sizes of dsr/collections/manifests/NAME.json: what
`dsr data fetch` verifies each download against.

The rest of a manifest (the repository, the pinned commit and the ``fetch`` section:
which files to download, how, and other revisions) is written by hand and kept as it is.

A git blob id is sha1(b"blob <size>\\0" + data): the id git itself gives a
file, so a download can be checked against it without trusting the server.
Each file's size in bytes is recorded too: `dsr data fetch` stops a download
(or an archive member) that grows past it plus a margin.

The ids are computed here from the unchanged upstream copies in
../shared/data (see its SOURCES.md for repositories and commits); the SIGIR
2022 dialogue files are not available there, so their ids are the ones
SOURCES.md publishes (kept in dsr/collections/sigir2022.py).

Files we have no copy of (CMU_DoG's Conversations/test, ReDial's train split
and the zip that holds it, CCPE-M's data.json) cannot be listed here; fetch
records their sha256 on the first verified download instead (trust on first
use, DSR_HOME/data/NAME/CHECKSUMS.json) and checks every later download
against that record.

    python tools/make_manifests.py [--shared ../shared/data]

Run it again only when a manifest's pinned commit changes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsr.collections import sigir2022  # noqa: E402
from dsr.collections.fetch import sources  # noqa: E402
from dsr.collections.transfer import git_blob_file  # noqa: E402

OUT = ROOT / "dsr" / "collections" / "manifests"

# folder under ../shared/data -> (plan name, {path in the repository: path in the copy})
COPIES = {
    "sigir2022": {
        "README.md": "README.md",
        "LICENSE.md": "LICENSE.md",
        "evaluation/val_test_splits.json": "val_test_splits.json",
    },
    "redial": {
        "movies_with_mentions.csv": "movies_with_mentions.csv",
        # the member of redial_dataset.zip, copied out unchanged
        "test_data.jsonl": "test_data.jsonl",
    },
    "ccpe": {"README.md": "README.md"},
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for name in sources():
        folder = args.shared / name
        if name == "cmu_dog":
            copies = {
                f"{sub}/{path.name}": path
                for sub in ("Conversations/train", "Conversations/valid", "WikiData")
                for path in sorted((folder / sub).glob("*.json"))
            }
            copies["README.md"] = folder / "README.md"
        else:
            copies = {repo_path: folder / copy for repo_path, copy in COPIES[name].items()}
        files = {repo_path: git_blob_file(path) for repo_path, path in copies.items()}
        # sizes cap each download (fetch.size_cap); files without one get fetch's default cap
        sizes = {repo_path: path.stat().st_size for repo_path, path in copies.items()}
        if name == "sigir2022":
            if files["evaluation/val_test_splits.json"] != sigir2022.SPLIT_BLOB:
                raise SystemExit("the split file copy does not match SOURCES.md's blob id")
            for revision, blobs in sigir2022.BLOBS.items():
                for file_name, blob in blobs.items():
                    key = f"datasets/{file_name}" if revision == "current" else f"{sigir2022.OLD_COMMIT}:datasets/{file_name}"
                    files[key] = blob
        path = OUT / f"{name}.json"
        manifest = {
            **json.loads(path.read_text(encoding="utf-8")),  # name, repository, commit, fetch
            "about": "fetch: what `dsr data fetch` downloads (by hand); git_blobs (sha1 of "
            "b'blob <size>\\0' + data) and sizes of the files at the commit: written "
            "by tools/make_manifests.py",
            "git_blobs": dict(sorted(files.items())),
            "sizes": dict(sorted(sizes.items())),
        }
        path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
