"""Chapter 13: attention in both directions: encoders and cross-attention.

- ``cross_attention``: a decoder's queries over an encoder's output (the memory); its
  keys and values projected once and cached for every decoding step (``DecoderCache``,
  with chapter 4's KVCache for the decoder's own attention); its backward by hand; the
  cross-attention cache's size.
- ``t5``: T5's encoder-decoder: relative position buckets and their bias (bidirectional in
  the encoder, causal in the decoder, computed once and shared by the layers), no
  1/√d scaling, RMSNorm, plain or gated feed-forward; greedy generation with both caches.
- ``whisper``: Whisper's audio encoder (two 1-D convolutions over log-mel frames,
  sinusoidal positions) and its text decoder (learned positions, cross-attention).
"""
