"""Attention from Scratch: the implementations that the course's pages teach.

NumPy only at run time. Each module holds one idea and is shown on a page of the course
by snippet, so the page and the package cannot drift apart. Which module teaches what:

Chapter 1, foundations
    softmax           softmax, log_softmax, logsumexp: stable along any axis
Chapter 2, self-attention
    scaled_dot_product  attention(q, k, v): masks, scale, no-key and masked rows
    self_attention    queries, keys, values as projections of the same tokens
    masks             causal_mask (bottom-right), padding_mask
    multi_head        multi-head and grouped-query attention, split/merge heads
Chapter 3, the transformer block and the model
    positions         sinusoidal encodings, RoPE (two layouts) and its permutation
    norms             layer_norm, rms_norm
    feed_forward      relu, gelu (exact and tanh), silu, the MLP, SwiGLU
    blocks            attend, attention_layer, the encoder, GPT-2's and Llama's blocks
                      (Llama's with swappable parts: token mixer, feed-forward)
    family            Family: what a model family declares (its layer's named parts,
                      their shapes, its Hugging Face names); the registry
    model             ModelConfig, init_params, forward, parameter_shapes: they read
                      the family's declaration and never ask which family it is
    checkpoints       Hugging Face configs and state dicts -> ours (FAMILIES)
    parameters        count_parameters from a configuration
Chapter 4, generation
    generation        the decoding loop (generate), left_pad
    kv_cache          KVCache, cached_attention, windows and sinks, cache sizes
    sampling          temperature, top-k, top-p, min-p, sample_next
    beam_search       beam search and exhaustive search
Chapter 5, attention at scale
    tiled             the plain blocked kernel: query and key tiles, online softmax
    blocked           the same algorithm tuned for speed (FlashAttention's idea)
    _blas_threads     running tiles on threads with BLAS single-threaded
Chapter 6, backpropagation
    backward          the backward passes by hand (see attention.backward)
    loss              cross_entropy and its gradient
    optim             sgd_step, Adam and AdamW
    training          the reverse task, train, accuracy
Chapter 7, train a GPT on this course (see attention.gpt)
    gpt               byte-level BPE, the corpus, AdamW with decay groups, warm-up
                      and cosine, clipping, dropout, the training run, checkpoints
Chapter 8, long contexts (see attention.long_context)
    long_context      RoPE scaling rules, ALiBi, learned sinks, windowed cache sizes
Model families, one module each (see attention.families)
    families          gpt2, llama (chapter 3, with chapters 8 and 9's options), gemma
                      (Gemma 2), mla (DeepSeek-V3): each declares a Family and
                      registers it; importing the package imports them all
Chapter 9, smaller caches, steadier logits (see attention.families)
    families          multi-head latent attention and its absorbed form (DeepSeek-V3),
                      soft-capping and Gemma 2's block, the model-card table; the
                      mixture of experts: routers, dense and sparse experts, load
                      balance, gpt-oss's clamped SwiGLU, active and total parameters
Chapter 10, attention without the n² (see attention.linear)
    linear            feature maps; causal linear attention parallel, recurrent and
                      chunked; the (gated) delta rule and its chunked UT form
                      (gated_delta_rule); the short causal convolution; Qwen3-Next's
                      Gated DeltaNet layer and its state; hybrid costs; recall
Chapter 11, serving (see attention.serving)
    serving           speculative decoding (exact, proved by enumeration), a paged KV
                      cache with prefix sharing, continuous batching, split-KV decoding
    speculative       speculative_generate, the chapter's entry point
Chapter 12, sparse and compressed attention (see attention.sparse)
    sparse            DeepSeek Sparse Attention: the lightning indexer, top-k keys,
                      masked and gathered attention, the indexer's KL loss;
                      DeepSeek-V4's compressed entries; bytes read and cached per
                      token; the output gate; differential attention (the families
                      deepseek_v32, deepseek_v4, qwen3_next, kimi_linear, minimax,
                      diffllama and olmo2 are in attention.families; KDA and
                      lightning attention in attention.linear)
Chapter 13, attention in both directions (see attention.encoders)
    encoders          BERT (post-LN, padding mask, MLM head) and its block's backward,
                      [CLS] and mean pooling, ViT (patches, interpolated positions),
                      ModernBERT (RoPE, local and global layers, GeGLU, unpadded),
                      cross-attention and its cache, T5 (relative position buckets),
                      Whisper (convolutional stem over log-mel frames)
Chapter 14, what attention learns (see attention.circuits)
    circuits          a two-layer attention-only model trained on repeated segments,
                      the phase change, head scores, ablation and composition
Live figures, across chapters 1 to 14 (see attention.interactive)
    interactive       controls and figures the reader moves in the browser: softmax
                      under a temperature, masks and d_k, heads, the sampling filters,
                      the online softmax's tiles, the trained model's attention, an
                      induction head's attention on a repeated sequence

Bad input raises ValueError (TypeError for a wrong kind of object) naming the argument,
its shape or value, and what was expected.
"""

from attention.softmax import log_softmax, logsumexp, softmax
from attention.masks import causal_mask, padding_mask
from attention.scaled_dot_product import attention
from attention.self_attention import self_attention
from attention.multi_head import grouped_query_attention, multi_head_attention
from attention.blocked import blocked_attention
from attention.positions import rope, sinusoidal_positions
from attention.norms import layer_norm, rms_norm
from attention.feed_forward import gelu, mlp, relu, swiglu
from attention import families  # noqa: F401 (they register, before model)
from attention.model import ModelConfig, forward, init_params
from attention.parameters import count_parameters

__all__ = [
    "softmax",
    "log_softmax",
    "logsumexp",
    "causal_mask",
    "padding_mask",
    "attention",
    "self_attention",
    "multi_head_attention",
    "grouped_query_attention",
    "blocked_attention",
    "rope",
    "sinusoidal_positions",
    "layer_norm",
    "rms_norm",
    "gelu",
    "relu",
    "mlp",
    "swiglu",
    "ModelConfig",
    "forward",
    "init_params",
    "count_parameters",
]
