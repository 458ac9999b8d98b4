"""Chapter 14, what attention learns: induction heads in a model trained here.

``data``: sequences of a random segment and its repeat. ``model``: a two-layer
attention-only transformer (or, with ``d_mlp``, one with an MLP per layer), its forward
and its backward by hand (chapter 6's pieces).
``train``: AdamW on fresh batches, the losses on the two halves, the step of the drop.
``scores``: previous-token, prefix-matching and copying scores, composition scores.
``run``: ``make induction``, three seeds of each model, shipped in ``shipped/``.
"""
