"""The page checker, a pytest plugin: ``-p tools.pagecheck.plugin`` (see plugin.py)."""
