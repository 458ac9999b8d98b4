"""The machinery behind the course: page checker, site hooks, figures."""
