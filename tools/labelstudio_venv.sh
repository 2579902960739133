#!/bin/sh
# A separate virtual environment for Label Studio (tests/judging/test_labelstudio.py
# starts a real server from it on loopback). Label Studio 1.23 pins an older numpy and
# pulls Django, so it never goes into dsr's own environment.
#
#   tools/labelstudio_venv.sh            # creates $DSR_LABEL_STUDIO_VENV
#                                        # (default ~/.cache/dsr/label-studio-venv)
set -eu
VENV="${DSR_LABEL_STUDIO_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/dsr/label-studio-venv}"
PYTHON="${PYTHON:-python3}"
VERSION="${LABEL_STUDIO_VERSION:-1.23.*}"
if [ -x "$VENV/bin/label-studio" ] && [ -f "$VENV/.installed" ]; then
    echo "Label Studio venv already at $VENV"
    exit 0
fi
mkdir -p "$(dirname "$VENV")"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet "label-studio==$VERSION"
"$VENV/bin/python" -c "import label_studio; print('label-studio', label_studio.__version__)"
touch "$VENV/.installed"
echo "Label Studio installed in $VENV"
