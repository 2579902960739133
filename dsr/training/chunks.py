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
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

#: texts per chunk: 96 texts a step (32 triplets) in 6 chunks; smaller chunks pad less but
#: multiply smaller matrices (measured on 2 CPU cores)
CHUNK = 16


def embed_in_chunks(
    model: SentenceTransformer, features_list: Iterable[dict[str, torch.Tensor]], chunk: int | None = None
) -> list[torch.Tensor]:
    """Each column's ``sentence_embedding`` (as sentence-transformers' ``embed_columns`` returns
    them), the columns' texts encoded together in chunks of ``chunk`` (default :data:`CHUNK`)
    texts of similar length."""
    chunk = chunk or CHUNK
    features_list = list(features_list)
    sizes = [f["input_ids"].shape[0] for f in features_list]
    width = max(f["input_ids"].shape[1] for f in features_list)
    keys = [k for k, v in features_list[0].items() if torch.is_tensor(v) and v.dim() == 2]
    merged = {k: torch.cat([torch.nn.functional.pad(f[k], (0, width - f[k].shape[1])) for f in features_list]) for k in keys}
    lengths = merged["attention_mask"].sum(dim=1)
    order = torch.argsort(lengths, stable=True)
    parts = []
    for start in range(0, len(order), chunk):
        rows = order[start : start + chunk]
        longest = int(lengths[rows].max())
        parts.append(model({k: v[rows, :longest] for k, v in merged.items()})["sentence_embedding"])
    embeddings = torch.empty((len(order), parts[0].shape[1]), dtype=parts[0].dtype, device=parts[0].device)
    embeddings = embeddings.index_copy(0, order, torch.cat(parts))
    return list(embeddings.split(sizes))


class ChunkedMNRLoss(MultipleNegativesRankingLoss):
    """MultipleNegativesRankingLoss whose embeddings come from :func:`embed_in_chunks`."""

    def forward(self, sentence_features: Iterable[dict[str, torch.Tensor]], labels: torch.Tensor) -> torch.Tensor:
        return self.compute_loss_from_embeddings(embed_in_chunks(self.model, sentence_features), labels)


class DistilledMNRLoss(MultipleNegativesRankingLoss):
    """Distillation of a cross-encoder into the bi-encoder (``dsr train --loss distill --teacher
    MODEL``): MultipleNegativesRankingLoss (in-batch and list negatives, as the other recipes)
    plus ``weight`` times the KL divergence of the bi-encoder's distribution over each example's
    own candidates (its positive and its list negatives: the scaled cosines, softmax) from the
    teacher's (its scores of the same pairs over ``teacher_temperature``, softmax).

    The labels are the teacher's scores, one row per example (positive first). The texts are
    encoded in chunks (:func:`embed_in_chunks`) unless ``chunked`` is False.
    """

    def __init__(
        self, model: SentenceTransformer, chunked: bool = True, weight: float = 1.0, teacher_temperature: float = 1.0
    ) -> None:
        super().__init__(model)
        self.chunked, self.weight, self.teacher_temperature = chunked, weight, teacher_temperature

    def forward(self, sentence_features: Iterable[dict[str, torch.Tensor]], labels: torch.Tensor) -> torch.Tensor:
        features = list(sentence_features)
        embeddings = (
            embed_in_chunks(self.model, features) if self.chunked else [self.model(f)["sentence_embedding"] for f in features]
        )
        return self.compute_loss_from_embeddings(embeddings, labels) + self.weight * self.distillation(embeddings, labels)

    def distillation(self, embeddings: list[torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
        """KL(teacher || student) over each example's own candidates, averaged over the batch."""
        functional = torch.nn.functional
        query, candidates = embeddings[0], torch.stack(embeddings[1:], dim=1)
        student = self.scale * functional.cosine_similarity(query.unsqueeze(1), candidates, dim=-1)
        teacher = labels.to(device=student.device, dtype=torch.float32) / self.teacher_temperature
        return functional.kl_div(
            functional.log_softmax(student.float(), dim=-1),
            functional.log_softmax(teacher, dim=-1),
            log_target=True,
            reduction="batchmean",
        )
