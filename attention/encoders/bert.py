"""BERT: a stack of post-LN encoder blocks that attend in both directions.

Reference: Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers for
Language Understanding" (2019), section 3 and figure 2 (the input is the sum of token,
segment and position embeddings) and section 3.1 (the masked language model).

Nothing here is new machinery: each layer is chapter 3's ``encoder_block`` with
``norm_first=False`` (the original post-LN block), exact GELU and LayerNorm's eps of
1e-12. What makes it an encoder is what it leaves out: no causal mask, so every token
sees every other token, and the only mask is the padding mask that keeps the <pad>
tokens of a batch's shorter sentences from being read.
"""

# --8<-- [start:imports]
from dataclasses import dataclass

import numpy as np

from attention.blocks import encoder_block
from attention.encoders.hf import (StateReader, check_ids, check_real,
                                   refuse)
from attention.feed_forward import gelu
from attention.model import block_params
from attention.norms import layer_norm
# --8<-- [end:imports]


# --8<-- [start:config]
@dataclass(frozen=True)
class BertConfig:
    vocab_size: int = 30522   # word pieces
    d_model: int = 768
    n_layers: int = 12
    n_heads: int = 12
    d_ff: int = 3072          # the MLP's width, 4 x d_model
    max_positions: int = 512  # rows of the learned position table
    n_types: int = 2          # token types: sentence A and sentence B
    norm_eps: float = 1e-12   # LayerNorm's eps


def bert_shapes(c, *, head=True, pooler=False):
    """{name: shape} of BERT's parameters: embeddings, blocks, and the MLM
    head (head=True) and the [CLS] pooler (pooler=True)."""
    d = c.d_model
    shapes = {"embed.tokens": (c.vocab_size, d),
              "embed.positions": (c.max_positions, d),
              "embed.types": (c.n_types, d),
              "embed.norm.weight": (d,), "embed.norm.bias": (d,)}
    for i in range(c.n_layers):
        b = f"blocks.{i}."
        for name in "qkvo":
            shapes |= {b + f"attn.W_{name}": (d, d), b + f"attn.b_{name}": (d,)}
        shapes |= {b + "mlp.W_in": (d, c.d_ff), b + "mlp.b_in": (c.d_ff,),
                   b + "mlp.W_out": (c.d_ff, d), b + "mlp.b_out": (d,)}
        for n in (1, 2):
            shapes |= {b + f"norm{n}.weight": (d,), b + f"norm{n}.bias": (d,)}
    if head:
        shapes |= {"mlm.W": (d, d), "mlm.b": (d,), "mlm.norm.weight": (d,),
                   "mlm.norm.bias": (d,), "mlm.bias": (c.vocab_size,)}
    if pooler:
        shapes |= {"pooler.W": (d, d), "pooler.b": (d,)}
    return shapes
# --8<-- [end:config]


# --8<-- [start:encode]
def bert_embed(params, config, token_ids, token_types=None):
    """Token + position + token-type embeddings, then LayerNorm.

    token_ids, token_types: (batch, n) integers. Returns (batch, n, d_model).
    """
    ids = check_ids("bert_embed", token_ids, config.vocab_size,
                    config.max_positions)
    types = np.zeros_like(ids) if token_types is None else np.asarray(
        token_types)
    if (types.shape != ids.shape or types.dtype.kind not in "iu"
            or types.min(initial=0) < 0
            or types.max(initial=0) >= config.n_types):
        raise ValueError(f"bert_embed: token_types must be integers in "
                         f"0..{config.n_types - 1} shaped like token_ids "
                         f"{ids.shape}, got {types.shape}")
    x = (params["embed.tokens"][ids]                     # (batch, n, d)
         + params["embed.positions"][:ids.shape[1]]      # (n, d)
         + params["embed.types"][types])                 # (batch, n, d)
    return layer_norm(x, params["embed.norm.weight"],
                      params["embed.norm.bias"], eps=config.norm_eps)


def bert_encode(params, config, token_ids, real=None, token_types=None):
    """BERT's last hidden states (batch, n, d_model).

    real: (batch, n) boolean, True on real tokens and False on <pad>
    (Hugging Face's attention_mask); None: no padding. Every query may
    attend to every real key, before or after it.
    """
    x = bert_embed(params, config, token_ids, token_types)
    real = check_real("bert_encode", real, x.shape[:2])
    mask = real[:, None, None, :]  # (batch, 1, 1, n): every head, query
    for i in range(config.n_layers):
        x = encoder_block(x, block_params(params, i), n_heads=config.n_heads,
                          norm_first=False, activation="gelu",
                          eps=config.norm_eps, mask=mask)
    return x


def mlm_logits(params, config, hidden):
    """The masked-language-model head: a dense layer, GELU, LayerNorm,
    then the token embeddings transposed (tied) plus a bias per word.

    hidden: (..., d_model). Returns (..., vocab_size).
    """
    h = gelu(hidden @ params["mlm.W"] + params["mlm.b"])
    h = layer_norm(h, params["mlm.norm.weight"], params["mlm.norm.bias"],
                   eps=config.norm_eps)
    return h @ params["embed.tokens"].T + params["mlm.bias"]
# --8<-- [end:encode]


# --8<-- [start:from_hf]
def bert_config_from_hf(hf):
    """Our BertConfig from a transformers BertConfig; refuses, by name,
    the settings this module does not implement."""
    refuse("bert_config_from_hf", hf, {
        "hidden_act": "gelu", "is_decoder": False,
        "add_cross_attention": False, "tie_word_embeddings": True})
    return BertConfig(
        vocab_size=hf.vocab_size, d_model=hf.hidden_size,
        n_layers=hf.num_hidden_layers, n_heads=hf.num_attention_heads,
        d_ff=hf.intermediate_size, max_positions=hf.max_position_embeddings,
        n_types=hf.type_vocab_size, norm_eps=hf.layer_norm_eps)


_BLOCK = {"attn.W_q": "attention.self.query",
          "attn.W_k": "attention.self.key",
          "attn.W_v": "attention.self.value",
          "attn.W_o": "attention.output.dense",
          "mlp.W_in": "intermediate.dense", "mlp.W_out": "output.dense"}
_NORMS = {"norm1": "attention.output.LayerNorm", "norm2": "output.LayerNorm"}


def bert_from_hf(state, config):
    """Our parameters from a BertForMaskedLM (or BertModel) state dict of
    NumPy arrays. A BertModel's pooler is kept; every other unknown key
    is refused."""
    r = StateReader(state, "bert_from_hf")
    pre = "bert." if "bert.embeddings.word_embeddings.weight" in r else ""
    e = pre + "embeddings."
    p = {"embed.tokens": r[e + "word_embeddings.weight"],
         "embed.positions": r[e + "position_embeddings.weight"],
         "embed.types": r[e + "token_type_embeddings.weight"],
         "embed.norm.weight": r[e + "LayerNorm.weight"],
         "embed.norm.bias": r[e + "LayerNorm.bias"]}
    for i in range(config.n_layers):
        hf, b = f"{pre}encoder.layer.{i}.", f"blocks.{i}."
        for ours, theirs in _BLOCK.items():
            p[b + ours] = r.linear(hf + theirs)
            p[b + ours.replace("W_", "b_")] = r[hf + theirs + ".bias"]
        for ours, theirs in _NORMS.items():
            p[b + ours + ".weight"] = r[hf + theirs + ".weight"]
            p[b + ours + ".bias"] = r[hf + theirs + ".bias"]
    head = "cls.predictions.bias" in r  # BertForMaskedLM's head
    if head:
        h = "cls.predictions."
        p |= {"mlm.W": r.linear(h + "transform.dense"),
              "mlm.b": r[h + "transform.dense.bias"],
              "mlm.norm.weight": r[h + "transform.LayerNorm.weight"],
              "mlm.norm.bias": r[h + "transform.LayerNorm.bias"],
              "mlm.bias": r[h + "bias"]}
        # The decoder is the token table and the bias above, tied:
        # read to check, not kept twice.
        if not (np.array_equal(r[h + "decoder.weight"], p["embed.tokens"])
                and np.array_equal(r[h + "decoder.bias"], p["mlm.bias"])):
            raise ValueError("bert_from_hf: an MLM decoder not tied to the "
                             "token embeddings is not implemented")
    pooler = pre + "pooler.dense.weight" in r
    if pooler:
        p |= {"pooler.W": r.linear(pre + "pooler.dense"),
              "pooler.b": r[pre + "pooler.dense.bias"]}
    return r.done(p, bert_shapes(config, head=head, pooler=pooler))
# --8<-- [end:from_hf]
