"""Chapter 9's practice reference for the masked load-balancing loss, checked against
Hugging Face's Mixtral loss with an attention mask (which sums in float32)."""

import numpy as np
import pytest

from attention.practice.ch09 import masked_reference

torch = pytest.importorskip("torch")
mixtral = pytest.importorskip("transformers.models.mixtral.modeling_mixtral")


@pytest.mark.parametrize("k", [1, 2, 3])
def test_masked_balancing_loss_is_hugging_face_s(k):
    rng = np.random.default_rng(k)
    batch, seq, n_experts = 3, 7, 6
    logits = rng.normal(size=(batch, seq, n_experts)) * 3
    mask = np.arange(seq)[None, :] < np.array([[7], [4], [1]])
    theirs = mixtral.load_balancing_loss_func(
        (torch.tensor(logits.reshape(-1, n_experts)),), n_experts, k,
        torch.tensor(mask.astype(np.int64)))
    ours = masked_reference(logits, k, mask)
    # Hugging Face sums the counts and probabilities in float32, whatever the input
    assert abs(ours - float(theirs)) <= 1e-6 * ours
