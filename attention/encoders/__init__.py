"""Chapter 13: attention in both directions: encoders, cross-attention and images.

- ``bert``: BERT's encoder (post-LN blocks, learned positions and token types, the
  padding mask) and its masked-language-model head; ``backward``: the post-LN block's
  backward pass with a padding mask; ``pooling``: sentence embeddings ([CLS], BERT's
  pooler, mean pooling that skips pads).
- ``modernbert``: RoPE in an encoder, alternating sliding-window (both sides) and global
  layers, GeGLU, no biases, unpadded batches.
- ``cross_attention``: a decoder's queries over an encoder's output (the memory); its
  keys and values projected once and cached for every decoding step (``DecoderCache``,
  with chapter 4's KVCache for the decoder's own attention); its backward by hand; the
  cross-attention cache's size.
- ``t5``: T5's encoder-decoder: relative position buckets and their bias (bidirectional in
  the encoder, causal in the decoder, computed once and shared by the layers), no
  1/√d scaling, RMSNorm, plain or gated feed-forward; greedy generation with both caches.
- ``whisper``: Whisper's audio encoder (two 1-D convolutions over log-mel frames,
  sinusoidal positions) and its text decoder (learned positions, cross-attention).
- ``vit``: patches as tokens (a reshape and one matrix product), the class token,
  position embeddings interpolated to a new image size.
- ``hf``: reading Hugging Face state dicts (every key read, or refused) and refusing
  unimplemented config settings by name.

Each model equals a tiny random Hugging Face model in float64 (tests/package/test_t5.py,
test_whisper.py, test_cross_attention.py, test_encoders_*.py).
"""
