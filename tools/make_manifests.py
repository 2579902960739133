#!/usr/bin/env python3
"""Write the git blob ids and sizes of dsr/collections/manifests/NAME.json: what
`dsr data fetch` verifies each download against.

The rest of a manifest (the repository, the pinned commit and the ``fetch`` section:
which files to download, how, and other revisions) is written by hand and kept as it is.

A git blob id is sha1(b"blob <size>\\0" + data): the id git itself gives a
file, so a download can be checked against it without trusting the server.
Each file's size in bytes is recorded too: `dsr data fetch` stops a download
(or an archive member) that grows past it plus a margin.

What a manifest lists is the source's own (its ``manifest_files(copy)``: each repository
path -> the unchanged upstream copy in ../shared/data/NAME, hashed here, or a git blob id
the source publishes for a file no copy of is available; see ../shared/data/SOURCES.md for
repositories and commits). This tool names no source.

Files we have no copy of cannot be listed here; fetch records their sha256 on the first
verified download instead (trust on first use, DSR_HOME/data/NAME/CHECKSUMS.json) and checks
every later download against that record.

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

from dsr.collections import source_module  # noqa: E402
from dsr.collections.fetch import sources  # noqa: E402
from dsr.collections.transfer import git_blob_file  # noqa: E402

OUT = ROOT / "dsr" / "collections" / "manifests"


def main(argv: list[str] | None = None, out: Path = OUT) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args(argv)
    out.mkdir(parents=True, exist_ok=True)
    for name in sources():
        listed = source_module(name).manifest_files(args.shared / name)
        copies = {repo_path: where for repo_path, where in listed.items() if isinstance(where, Path)}
        files = {repo_path: git_blob_file(path) for repo_path, path in copies.items()}
        files.update({repo_path: blob for repo_path, blob in listed.items() if isinstance(blob, str)})
        # sizes cap each download (fetch.size_cap); files without one get fetch's default cap
        sizes = {repo_path: path.stat().st_size for repo_path, path in copies.items()}
        path = out / f"{name}.json"
        manifest = {
            **json.loads(path.read_text(encoding="utf-8")),  # name, repository, commit, fetch
            "about": "fetch: what `dsr data fetch` downloads (by hand); git_blobs (sha1 of "
            "b'blob <size>\\0' + data) and sizes of the files at the commit: written "
            "by tools/make_manifests.py",
            "git_blobs": dict(sorted(files.items())),
            "sizes": dict(sorted(sizes.items())),
        }
        path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{path.name}: {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
