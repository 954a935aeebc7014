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
