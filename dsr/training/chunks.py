"""The bi-encoder's forward pass without most of its padding (``dsr train --padding chunks``).

sentence-transformers pads each column of a batch (the queries; the positive and negative
sentences, merged) to its longest text. With CMU_DoG's texts most of that is padding: at the
default 256 word pieces, a random batch of 32 triplets computes ~330 word pieces per triplet
for ~137 real ones (a query's median is 46, the longest of a batch near 140; a sentence's
median 37, the longest of a batch near 110). :func:`embed_in_chunks` puts every text of the
batch together, sorts them by length, encodes them in chunks of :data:`CHUNK` texts, each
padded only to its own longest, and puts the embeddings back in the batch's order.

Padding is masked out of attention and of the mean pooling, and BERT's padding is on the
right (positions unchanged), so each text's embedding is the one the padded pass computes
(up to float rounding; tests/training/test_biencoder_train.py checks it): the loss, the batches
and their in-batch negatives are those of the padded pass. Only dropout's random draws differ
(their tensors have other shapes), as they would with another seed.

This module imports torch and sentence-transformers: import it only where training runs.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

#: texts per chunk: 96 texts a step (32 triplets) in 6 chunks; smaller chunks pad less but
#: multiply smaller matrices (measured on 2 CPU cores, docs/training.md)
CHUNK = 16


def embed_in_chunks(model, features_list: Iterable[dict], chunk: int | None = None) -> list[torch.Tensor]:
    """Each column's ``sentence_embedding`` (as sentence-transformers' ``embed_columns`` returns
    them), the columns' texts encoded together in chunks of ``chunk`` (default :data:`CHUNK`)
    texts of similar length."""
    chunk = chunk or CHUNK
    features_list = list(features_list)
    sizes = [f["input_ids"].shape[0] for f in features_list]
    width = max(f["input_ids"].shape[1] for f in features_list)
    keys = [k for k, v in features_list[0].items() if torch.is_tensor(v) and v.dim() == 2]
    merged = {k: torch.cat([torch.nn.functional.pad(f[k], (0, width - f[k].shape[1])) for f in features_list])
              for k in keys}
    lengths = merged["attention_mask"].sum(dim=1)
    order = torch.argsort(lengths, stable=True)
    parts = []
    for start in range(0, len(order), chunk):
        rows = order[start:start + chunk]
        longest = int(lengths[rows].max())
        parts.append(model({k: v[rows, :longest] for k, v in merged.items()})["sentence_embedding"])
    embeddings = torch.empty((len(order), parts[0].shape[1]), dtype=parts[0].dtype, device=parts[0].device)
    embeddings = embeddings.index_copy(0, order, torch.cat(parts))
    return list(embeddings.split(sizes))


class ChunkedMNRLoss(MultipleNegativesRankingLoss):
    """MultipleNegativesRankingLoss whose embeddings come from :func:`embed_in_chunks`."""

    def forward(self, sentence_features, labels):
        return self.compute_loss_from_embeddings(embed_in_chunks(self.model, sentence_features), labels)
