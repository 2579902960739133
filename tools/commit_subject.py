"""A commit message's subject is one line of at most 72 characters; the detail and the figures go
in the body. The commit-msg hook of .pre-commit-config.yaml runs it on every new message:

    python tools/commit_subject.py .git/COMMIT_EDITMSG    # exit 1 naming what is wrong

tests/test_commit_subjects.py checks the commits made since the rule began.
"""

from __future__ import annotations

import sys
from pathlib import Path

LIMIT = 72


def problems(message: str) -> list[str]:
    """What is wrong with a commit message (git's comment lines left out)."""
    lines = [line for line in message.splitlines() if not line.startswith("#")]
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return ["the message is empty"]
    found = []
    if len(lines[0]) > LIMIT:
        found.append(f"the subject has {len(lines[0])} characters (at most {LIMIT}): {lines[0][:LIMIT]}...")
    if len(lines) > 1 and lines[1].strip():
        found.append("the second line is not empty: the subject is one line, the body follows a blank line")
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python tools/commit_subject.py MESSAGE_FILE", file=sys.stderr)
        return 2
    found = problems(Path(args[0]).read_text(encoding="utf-8"))
    for problem in found:
        print(f"commit message: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
