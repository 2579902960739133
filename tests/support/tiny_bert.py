"""A tiny random BERT built from a config, for tests of model code paths.

No weights can be downloaded here, so tests that need a cross-encoder (or a
base encoder to fine-tune) build one: 2 layers, 32 wide, with a WordPiece
vocabulary of the words the test will feed it, saved exactly as transformers
saves any model, so it loads through the same code path as a real one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path


def make_tiny_bert(
    folder: Path,
    texts: Iterable[str],
    *,
    num_labels: int | None = 1,
    seed: int = 0,
    initializer_range: float = 0.02,
    max_position_embeddings: int = 512,
) -> Path:
    """Save a random BERT into ``folder``: a sequence classifier with ``num_labels``
    outputs (a cross-encoder), or a bare encoder when ``num_labels`` is None."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    words = sorted({w for text in texts for w in re.findall(r"\w+|[^\w\s]", text.lower())})
    chars = sorted({ch for w in words for ch in w})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *(f"##{ch}" for ch in chars if f"##{ch}" not in words)]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=max_position_embeddings,
        num_labels=num_labels or 1,
        initializer_range=initializer_range,
    )
    model = BertModel(config) if num_labels is None else BertForSequenceClassification(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def collection_texts(collection) -> list[str]:
    """Every text of a collection a model may be fed (titles, turns, candidates)."""
    texts = [d.title for d in collection] + [t.body for d in collection for t in d.context]
    texts += [d.target.body for d in collection if d.target is not None]
    texts += [f"{c.title}: {c.body}" for d in collection for c in d.candidates]
    return texts
