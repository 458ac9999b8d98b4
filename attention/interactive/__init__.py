"""Live figures: the package's code drawn under the reader's controls, in the browser.

``widgets`` declares the controls (sliders, choices, toggles, a text box), the registry
of figures and what a figure returns (bars, a heatmap, named numbers, a text
alternative); ``figures`` holds the course's figures, one per static figure it brings
to life. The site draws them (``docs/javascripts/live-figures.js``); the browser runs
``compute_json``, the tests run ``compute`` and compare.
"""

from attention.interactive import figures  # noqa: F401  (registers the figures)
from attention.interactive.widgets import FIGURES, compute, compute_json

__all__ = ["FIGURES", "compute", "compute_json"]
