"""Speculative decoding (chapter 11): ``speculative_generate`` and its accept/reject rule.

The implementation lives in ``attention.serving.speculative``; this module keeps the
short import path ``attention.speculative.speculative_generate``.
"""

from attention.serving.speculative import (accept_or_reject, acceptance,
                                           next_token_distribution, residuals,
                                           speculative_generate)

__all__ = ["speculative_generate", "accept_or_reject", "acceptance", "residuals",
           "next_token_distribution"]
