#!/usr/bin/env bash
# The text-forms study (experiments/JOURNAL.md, "the sentence in its document"): the default bi-encoder recipe with
# `title: body`, in-domain and document-disjoint (dsr kfold), fused with the zero-shot model
# (weights tuned on val halves), and a cross-encoder second stage with hard negatives.
# About 75 minutes of 2 CPU cores. Usage: experiments/text_forms.sh OUT [SHARED_DATA]
set -euo pipefail
OUT=${1:?usage: experiments/text_forms.sh OUT [SHARED_DATA]}
DATA=$(cd "${2:-../shared/data}" && pwd)
mkdir -p "$OUT" && cd "$OUT"
D=(--source "$DATA/cmu_dog" --split train)
TB=(--query title+recent --param "text=title: body")
JUDGED="$DATA/judged/cmu_dog-valid-judged.jsonl"
F=()
WEIGHTS="0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9"

dsr train cmu_dog "${D[@]}" --name tb-bi --text "title: body"
dsr train cmu_dog "${D[@]}" --name tb-ce-hard --model-type cross-encoder --text "title: body" --hard-negatives dsr:tb-bi
dsr train cmu_dog "${D[@]}" --name tb-ce-list --model-type cross-encoder --text "title: body"
dsr kfold cmu_dog "${D[@]}" --eval cmu_dog_judged --eval-source "$DATA/judged" --folds 3 --name tb-kf \
    --in-domain dsr:tb-bi --train-param "text=title: body" --out kfold-judged
dsr kfold cmu_dog "${D[@]}" --eval cmu_dog --eval-source "$DATA/cmu_dog" --eval-split valid --folds 3 \
    --name tb-kf --in-domain dsr:tb-bi --train-param "text=title: body" --out kfold-silver

tuned() {  # a --tune group of interpolations of $1 and $2 (the first run's weight), written as $3-W.run
    local runs=() w
    for w in $WEIGHTS; do
        dsr fuse "$1" "$2" --method interp --param "weight=$w" "${F[@]}" --out "$3-$w.run" >/dev/null
        runs+=("$3-$w.run")
    done
    (IFS=,; echo "$3=${runs[*]}")
}

for set in judged silver; do
    if [ "$set" = judged ]; then C=(cmu_dog_judged --source "$DATA/judged"); F=(--collection "$JUDGED")
    else C=(cmu_dog --source "$DATA/cmu_dog" --split valid); F=(); fi
    mkdir -p "$set" && pushd "$set" >/dev/null
    dsr run "${C[@]}" --ranker dense "${TB[@]}" --out zs.run
    dsr run "${C[@]}" --ranker dense "${TB[@]}" --param model=dsr:tb-bi --out tb.run
    dsr fuse tb.run zs.run --method rrf --param k=60 "${F[@]}" --out rrf.run
    for m in hard list; do
        dsr rerank "${C[@]}" --run tb.run --model "dsr:tb-ce-$m" --top-k 20 --out "ce-$m.run"
    done
    interp=$(tuned tb.run zs.run interp)
    hard=$(tuned tb.run ce-hard.run cihard)
    list=$(tuned tb.run ce-list.run cilist)
    dsr evaluate "${C[@]}" zs.run tb.run rrf.run ce-hard.run ce-list.run --tune "$interp" --tune "$hard" \
        --tune "$list" --protocol official --baseline zs.run --measures nDCG@5 RR --subset all --verbose
    popd >/dev/null
done
# document-disjoint fusion: the pooled fold run with the zero-shot run
pushd kfold-judged >/dev/null
F=(--collection "$JUDGED")
kinterp=$(tuned kfold.run zero-shot.run kinterp)
dsr fuse kfold.run zero-shot.run --method rrf --param k=60 "${F[@]}" --out krrf.run
dsr evaluate cmu_dog_judged --source "$DATA/judged" zero-shot.run kfold.run in-domain.run krrf.run \
    --tune "$kinterp" --protocol official --baseline zero-shot.run --measures nDCG@5 RR --subset all --verbose
popd >/dev/null
