"""Speculative decoding (chapter 11): ``speculative_generate`` and its accept/reject rule.

The implementation lives in ``attention.serving.speculative``; this module keeps the
short import path ``attention.speculative.speculative_generate``; ``speculate`` takes
any draft (a ``ModelDraft``, or ``attention.serving.drafts.NgramDraft``: prompt lookup
and an n-gram table, no weights).
"""

from attention.serving.drafts import NgramDraft
from attention.serving.speculative import (ModelDraft, accept_or_reject,
                                           acceptance, next_token_distribution,
                                           residuals, speculate,
                                           speculative_generate)

__all__ = ["speculative_generate", "speculate", "ModelDraft", "NgramDraft",
           "accept_or_reject", "acceptance", "residuals",
           "next_token_distribution"]
