#!/bin/bash
# Train the levers of experiments/training_recipes.py, one at a time, each under the shared
# heavy-run lock (flock /tmp/dsr-heavy.lock) with `uptime` and the UTC time printed inside it, the
# trainer's output, /usr/bin/time -v (peak RSS) and the load in HOME/logs/NAME.log (the lever
# table reads the load from there).
#
#   experiments/train_levers.sh HOME 'quick-tb --text "title: body"' 'full --recipe full' ...
#
# Each argument is NAME followed by its `dsr train` arguments (as in LEVERS); a model already in
# HOME/models/NAME is kept. Rankings use the exact backend (DSR_BACKEND=torch: the miner of
# --hard-negatives and the teacher of --loss distill too). PY (default: python) runs dsr.
# When the machine is loaded by others' work (1-minute load above LOADED, default 4, on 2
# cores) torch runs one thread, so that its two threads do not wait for each other at every
# operation while the other is descheduled (on 2026-11-26 at load 10-13 the quick recipe ran
# 40 s a step with two threads, against 1.4 s idle; one thread was not timed there); the card
# records the threads used (training.hardware.threads).
HOME_DIR=${1:?usage: experiments/train_levers.sh HOME 'NAME ARGS...' ...}; shift
export DSR_HOME=$HOME_DIR DSR_BACKEND=torch HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
PY=${PY:-python}
# HELD=1: the caller already holds the heavy-run lock (several runs back to back in one hold)
LOCK="flock /tmp/dsr-heavy.lock"; [ "${HELD:-}" = 1 ] && LOCK=""
S=${SOURCE:-$(dirname "$0")/../../shared/data/cmu_dog}
mkdir -p "$DSR_HOME/logs"
train() {
  name=$1; shift
  [ -f "$DSR_HOME/models/$name/dsr_model.json" ] && { echo "$name: trained already"; return; }
  $LOCK bash -c 'load=$(cut -d" " -f1 /proc/loadavg)
    if awk "BEGIN{exit !($load > ${LOADED:-4})}"; then export OMP_NUM_THREADS=1; fi
    echo "start $(date -u +%FT%TZ) $(uptime) threads ${OMP_NUM_THREADS:-all}"
    /usr/bin/time -v "$@"; echo "end $(date -u +%FT%TZ) $(uptime)"' _ \
    "$PY" -m dsr.cli train cmu_dog --source "$S" --split train --name "$name" "$@" > "$DSR_HOME/logs/$name.log" 2>&1
  echo "$name: exit $? $(date -u +%T)"
}
for spec in "$@"; do eval "train $spec"; done
