"""MkDocs hooks for the documentation site (mkdocs.yml, ``hooks:``).

The docstrings cross-reference names the Sphinx way (``:meth:`start```, ``:class:`Job```),
which mkdocstrings prints as is; the API reference shows the name alone, as code."""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:meth|class|attr|func|mod|exc|data|obj):(?=<code>)")


def on_page_content(html: str, **kwargs: Any) -> str:
    """Drop the Sphinx role before a name mkdocstrings rendered as code."""
    return _ROLE.sub("", html)


#: the fence of an example the docs tests do not run (tests/docs/test_examples.py);
#: Python-Markdown knows no second word there and would not see a fence at all
_NO_TEST_FENCE = re.compile(r"^```python no-test[ ]*$", re.M)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Show a ```python no-test block as the Python block it is."""
    return _NO_TEST_FENCE.sub("```python", markdown)
