"""Attention from Scratch: the implementations that the course's pages teach.

NumPy only at run time. Each module holds one idea and is shown on a page of the course
by snippet, so the page and the package cannot drift apart.
"""

from attention.softmax import softmax

__all__ = ["softmax"]
