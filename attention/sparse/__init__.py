"""Chapter 12, sparse and compressed attention (see the chapter's page).

- ``gated_output``: the output gate of gated attention (Qwen3-Next, Qwen3.5): each head's
  output times a sigmoid of the layer's input, before W_o.
"""
