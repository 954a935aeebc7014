"""The compiled renderer (batch/script.py) writes exactly what pystache's own renderer
writes, for every golden case of every batch backend and for an array's dispatcher,
with and without a change note: the speed-up changes no byte of any script."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hpcjobs.executors.batch import JobDir
from hpcjobs.executors.batch.arrays import ArrayDir
from hpcjobs.executors.batch.script import _compiled, _source, shell_quote

from test_golden_batch import BACKENDS, JOB_DIR, NOT_FOR, SPECS, executor


def pystache_render(template: Path, context: dict[str, Any]) -> str:
    import pystache
    renderer = pystache.Renderer(escape=shell_quote, missing_tags="strict")
    return str(renderer.render(pystache.parse(_source(template)), context))


@pytest.mark.parametrize("backend, case", [(b, c) for b in BACKENDS for c in sorted(SPECS)
                                            if b not in NOT_FOR.get(c, ())])
def test_the_compiled_renderer_writes_what_pystache_writes(backend: str, case: str) -> None:
    ex: Any = executor(backend)
    spec, job_dir = SPECS[case], JobDir(JOB_DIR)
    directives = ex._directives(spec, job_dir)
    contexts = [{**directives, **ex._body(spec, job_dir, note)}
                for note in (None, JOB_DIR.parent / ".notes" / "job-1")]
    if ex.array_variables:  # an array's dispatcher script
        array = ArrayDir(JobDir(JOB_DIR.parent / "array-1"))
        contexts.append({**directives, "dispatch": array.dispatch_context(ex.array_variables)})
    for context in contexts:
        expected = pystache_render(ex.template, context)
        assert _compiled(ex.template)(context) == expected
        assert "{{" not in expected


def test_every_kind_of_tag_renders_as_pystache_renders_it(tmp_path: Path) -> None:
    # nested sections (names looked up outwards), a list of strings ({{.}}), an item
    # that is no dict, inverted sections in and out of sections, a literal, a comment,
    # quotes and newlines in the text itself
    template = tmp_path / "t.mustache"
    template.write_text("{{! a comment }}it's \"{{name}}\"\n{{#items}}{{name}}: "
                        "{{#words}}{{.}},{{/words}}{{^words}}none{{/words}} {{{raw}}}\n"
                        "{{/items}}{{#flag}}{{flag}} {{name}}{{/flag}}{{^missing}}-{{/missing}}"
                        "{{#count}}{{count}}{{/count}}\n")
    context = {"name": "a b", "raw": "$x 'y'", "flag": True, "missing": [], "count": 2,
               "items": [{"name": "one", "words": ["it's", "w"]},
                         {"words": [], "raw": "r"}]}
    assert _compiled(template)(context) == pystache_render(template, context)


def test_a_callable_value_is_an_error(tmp_path: Path) -> None:
    template = tmp_path / "t.mustache"
    template.write_text("{{#items}}{{name}}{{/items}}{{top}}\n")
    render = _compiled(template)
    with pytest.raises(TypeError, match="top"):
        render({"items": [], "top": lambda: "x"})
    with pytest.raises(TypeError, match="name"):
        render({"items": [{"name": print}], "top": "x"})


def test_a_missing_key_is_an_error(tmp_path: Path) -> None:
    template = tmp_path / "t.mustache"
    template.write_text("{{#list}}{{name}} {{/list}}{{^other}}none{{/other}}\n")
    render = _compiled(template)
    assert render({"list": [{"name": "a b"}, {"name": "c"}], "other": []}) == "'a b' c none\n"
    with pytest.raises(KeyError, match="other"):
        render({"list": []})


def test_a_parse_tree_of_another_shape_falls_back_to_pystache(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # the parse tree is pystache's internals: a release that reshapes its nodes (an
    # attribute renamed) must cost the speed-up, not the submit
    from hpcjobs.executors.batch import script

    def reshaped(*args: Any) -> Any:
        raise AttributeError("'_SectionNode' object has no attribute 'parsed'")
    monkeypatch.setattr(script, "_compile_nodes", reshaped)
    template = tmp_path / "t.mustache"
    template.write_text("{{#list}}{{name}} {{/list}}\n")
    assert _compiled(template)({"list": [{"name": "a b"}]}) == "'a b' \n"
