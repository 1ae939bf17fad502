"""Whole summary lines in the autosummary tables.

Sphinx's autosummary cuts a docstring's summary at its first ". ", so
"Output of solve() (Alg. 1 or Alg. 3)." became "Output of solve() (Alg." and
a role or a formula could be cut in two. Our docstrings follow numpydoc,
whose summary is the first paragraph; the tables show it whole, as reST (so
``:math:`` renders).
"""

from sphinx.ext import autosummary


def first_paragraph(doc, document=None):
    """The first paragraph of the docstring lines ``doc``, on one line."""
    lines = []
    for line in doc:
        if line.strip():
            lines.append(line.strip())
        elif lines:
            break
    return " ".join(lines)


def setup(app):
    autosummary.extract_summary = first_paragraph
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
