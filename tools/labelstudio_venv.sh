#!/bin/sh
# A separate virtual environment for Label Studio (tests/judging/test_labelstudio.py
# starts a real server from it on loopback). Label Studio 1.23 pins an older numpy and
# pulls Django, so it never goes into dsr's own environment.
#
#   tools/labelstudio_venv.sh            # creates $DSR_LABEL_STUDIO_VENV
#                                        # (default ~/.cache/dsr/label-studio-venv)
#
# It also leaves an empty Label Studio database with all of Label Studio's migrations applied
# in $VENV/migrated/label_studio.sqlite3 (about 300 Django migrations: 25-70 s on a 2-core
# machine, what a first start would spend): the test starts its server on a copy of it, in a
# data folder of its own, so each start takes seconds.
set -eu
VENV="${DSR_LABEL_STUDIO_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/dsr/label-studio-venv}"
PYTHON="${PYTHON:-python3}"
VERSION="${LABEL_STUDIO_VERSION:-1.23.*}"
if [ -x "$VENV/bin/label-studio" ] && [ -f "$VENV/.installed" ]; then
    echo "Label Studio venv already at $VENV"
else
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --upgrade pip
    "$VENV/bin/pip" install --quiet "label-studio==$VERSION"
    "$VENV/bin/python" -c "import label_studio; print('label-studio', label_studio.__version__)"
    rm -rf "$VENV/migrated"
    touch "$VENV/.installed"
    echo "Label Studio installed in $VENV"
fi
if [ ! -f "$VENV/migrated/label_studio.sqlite3" ]; then
    # any label-studio command migrates its database first; `version` does nothing else
    work="$VENV/migrated.tmp"
    rm -rf "$work"
    mkdir -p "$work/home"
    HOME="$work/home" LABEL_STUDIO_BASE_DATA_DIR="$work" LATEST_VERSION_CHECK=false COLLECT_ANALYTICS=false \
        "$VENV/bin/label-studio" version --data-dir "$work" --log-level ERROR > "$work/version.log" 2>&1
    mkdir -p "$work/out"
    mv "$work/label_studio.sqlite3" "$work/out/"
    rm -rf "$VENV/migrated"
    mv "$work/out" "$VENV/migrated"
    rm -rf "$work"
    echo "Label Studio's migrated database in $VENV/migrated"
fi
