"""MkDocs hook: an Output block (```` ```text title="Output" ````) is marked
``class="output"`` so the stylesheet wraps its long lines instead of scrolling sideways: a
check's one-line verdict or a long printed line stays readable in the content column.
Code blocks are not wrapped; their lines are kept to about 80 characters."""

import re

OUTPUT_BLOCK = re.compile(r'<div class="language-text highlight">(<span class="filename">Output</span>)')


def on_page_content(content, page, config, files):
    return OUTPUT_BLOCK.sub(r'<div class="language-text highlight output">\1', content)
