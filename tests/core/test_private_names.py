"""No module under src/ reaches into another's private names: a name that starts with
an underscore is its module's (imports: its package's) to change. What another part
needs has a public, documented name (``Job.bind``, ``JobStatus.owning``,
``errors.PSIJError``, ...).

Checked on the source with ``ast``: an import of an underscore name from another
package (ours or a library's), and an attribute access ``x._name`` (``x`` not
``self``, ``cls`` or ``super()``) in a module that does not define ``_name`` when
another of our modules does.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


class _Module:
    def __init__(self, path: Path) -> None:
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        self.is_package = parts[-1] == "__init__"
        self.name = ".".join(parts[:-1] if self.is_package else parts)
        self.package = self.name if self.is_package else self.name.rpartition(".")[0]
        self.tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        self.defines = set()  # the private names this module gives a meaning
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defines.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.defines.add(node.id)
            elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                  and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                self.defines.add(node.attr)
        self.defines = {n for n in self.defines if _private(n)}

    def resolve(self, node: ast.ImportFrom) -> str:
        """The absolute name of the module a ``from ... import`` reads."""
        if node.level == 0:
            return node.module or ""
        base = self.package.split(".")[:len(self.package.split(".")) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))


def _modules() -> dict[str, _Module]:
    modules = [_Module(path) for path in sorted(SRC.rglob("*.py"))]
    return {m.name: m for m in modules}


def _package_of(name: str, modules: dict[str, _Module]) -> str:
    module = modules.get(name)
    return name if module is None or module.is_package else module.package


def violations(modules: dict[str, _Module]) -> list[str]:
    owners: dict[str, set[str]] = {}
    for m in modules.values():
        for name in m.defines:
            owners.setdefault(name, set()).add(m.name)
    found = []
    for m in modules.values():
        for node in ast.walk(m.tree):
            if isinstance(node, ast.ImportFrom):
                source = m.resolve(node)
                for alias in node.names:
                    if not _private(alias.name):
                        continue
                    # a private module of a package is that package's
                    inside = (source if f"{source}.{alias.name}" in modules
                              else _package_of(source, modules))
                    if inside != m.package:
                        found.append(f"{m.name}:{node.lineno}: from {source} import {alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if any(_private(p) for p in parts) and ".".join(parts[:-1]) != m.package:
                        found.append(f"{m.name}:{node.lineno}: import {alias.name}")
            elif isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in m.defines:
                value = node.value
                if isinstance(value, ast.Name) and value.id in ("self", "cls"):
                    continue
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
                    continue
                elsewhere = owners.get(node.attr, set()) - {m.name}
                if elsewhere:
                    found.append(f"{m.name}:{node.lineno}: {ast.unparse(node)} "
                                 f"(private to {', '.join(sorted(elsewhere))})")
    return found


def test_no_module_uses_another_modules_private_names() -> None:
    modules = _modules()
    assert len(modules) > 50 and "hpcjobs.job" in modules
    assert violations(modules) == []


def test_the_check_finds_each_kind_of_reach(tmp_path: Path) -> None:
    """The check run on a small tree that does each thing once."""
    global SRC
    saved = SRC
    SRC = tmp_path
    try:
        for name, text in {
            "pkg/__init__.py": "",
            "pkg/job.py": "class Job:\n    def _bind(self):\n        self._status = 1\n",
            "pkg/_util.py": "def _helper(): pass\n",
            "pkg/fine.py": "from ._util import _helper\nfrom .job import Job\nJob()._undefined_anywhere\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/user.py": ("from ..job import Job\nfrom .._util import _helper\nfrom os import _exit\n"
                                "import pkg._util\njob = Job()\njob._bind()\njob._status = 2\n"),
        }.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text)
        found = violations(_modules())
    finally:
        SRC = saved
    assert sorted(found) == [
        "pkg.sub.user:2: from pkg._util import _helper",
        "pkg.sub.user:3: from os import _exit",
        "pkg.sub.user:4: import pkg._util",
        "pkg.sub.user:6: job._bind (private to pkg.job)",
        "pkg.sub.user:7: job._status (private to pkg.job)",
    ]
