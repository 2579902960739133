"""Inference on the CPU with oneDNN's linear layers (:func:`onednn_linears`): the exact
(fp32) backend's bi-encoders and cross-encoders, faster where MKL takes a slower path (CPUs
not Intel's)."""

from __future__ import annotations

import platform
from typing import Any

__all__ = ["onednn_linears"]


def onednn_linears(module: Any) -> Any:
    """``module`` (a torch module, for inference on the CPU) with every ``torch.nn.Linear``
    replaced by the same product computed by oneDNN (torch's own copy), weights packed once;
    returns ``module``, changed in place.

    Why: torch's fp32 ``Linear`` on the CPU calls MKL's sgemm, which takes a slower path on
    CPUs that are not Intel's; oneDNN picks its kernels by instruction set, not by vendor. The
    linear layers are three quarters of a bi-encoder's time: on the AMD EPYC development
    machine the README's headline spent 75 CPU-seconds in its dense stage against 87 before
    (bench/bench_reproduce.py, docs/models.md). Both are fp32 sums of the same products in
    another order: the vectors differ by about 1e-7 (as two CPUs' MKL paths do); the rankings
    do not, as near ties are settled in float64 (:func:`dsr.indexes.embeddings.settle_near_ties`),
    and every published table is the same with either. Not applied for training (no
    gradients), for an export's trace, under a bf16 autocast (the op is outside autocast's
    lists: it would run fp32), off the CPU, or where torch has no oneDNN or the CPU is not x86-64.
    """
    import torch

    onednn = bool(torch.backends.mkldnn.is_available())  # type: ignore[no-untyped-call]
    if not onednn or platform.machine().lower() not in ("x86_64", "amd64"):
        return module
    if any(p.device.type != "cpu" for p in module.parameters()):
        return module

    class OneDnnLinear(torch.nn.Module):
        """``torch.nn.Linear``'s forward (fp32, no gradient) on oneDNN, its weights packed once."""

        def __init__(self, linear: torch.nn.Linear) -> None:
            super().__init__()
            self.in_features, self.out_features = linear.in_features, linear.out_features
            bias = linear.bias if linear.bias is not None else torch.zeros(linear.out_features)
            self.packed: tuple[torch.Tensor, torch.Tensor] = (linear.weight.detach().to_mkldnn(), bias.detach().to_mkldnn())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch._C._nn.mkldnn_linear(x.contiguous().to_mkldnn(), *self.packed).to_dense()

    def swap(parent: torch.nn.Module) -> None:
        for name, child in parent.named_children():
            if type(child) is torch.nn.Linear and child.weight.dtype == torch.float32:
                setattr(parent, name, OneDnnLinear(child))
            else:
                swap(child)

    module.eval()
    swap(module)
    return module
