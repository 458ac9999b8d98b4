"""Chapter 7: training a small GPT on the course's own pages, in NumPy.

One idea per module: ``byte_level`` (bytes as printable symbols, GPT-2's
pre-tokenization), ``bpe`` (the trainer and the tokenizer), ``tokenizer_files``
(``vocab.json`` / ``merges.txt``), ``corpus`` (pages, held-out pages, random
windows), ``dropout``, ``adamw`` (decay groups), ``schedule`` (warm-up and
cosine), ``clipping`` (global norm), ``training`` (a step with gradient
accumulation, the loop, its log), ``checkpoint`` (saving and loading weights),
``baselines`` (unigram and bigram models) and ``run`` (what ``make train``
runs). The model itself is chapter 3's (``attention.model``), trained with
chapter 6's backward pass (``attention.backward.model``).
"""
