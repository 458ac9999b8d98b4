"""Encoders: attention in both directions (chapter 13).

BERT (``bert``: post-LN blocks, learned positions and token types, the padding mask,
the masked-language-model head) and its block's backward pass (``backward``); sentence
embeddings from hidden states (``pooling``: [CLS] and mean pooling); ViT (``vit``:
patches as tokens, the class token, position embeddings interpolated to a new image
size); ModernBERT (``modernbert``: RoPE, alternating sliding-window and global layers,
GeGLU, no biases, unpadded batches). Each is equal to a tiny random Hugging Face model
in float64 (tests/package/test_encoders_*.py). ``hf`` reads Hugging Face state dicts.
"""
