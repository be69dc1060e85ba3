"""The docs' lists are the registry's (tests/doc_lists.py): a generated list is the text
its renderer gives, a checked one mentions every option with the registry's defaults and
no option the registry lacks; every file a doc or config names under conf/ is shipped."""

from __future__ import annotations

import re

import pytest
import yaml

from dprect.app.groups import read_groups_file, split_groups
from tests.doc_lists import FILES, NAMES, RENDER, ROOT, Block, blocks, names_problems, rendered

BLOCKS = [b for path in FILES for b in blocks(path)]


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: f"{b.path}:{b.kind}:{b.name}")
def test_a_docs_list_is_the_registrys(block: Block) -> None:
    if block.kind == "list":
        expected = rendered(block)
        assert block.body == expected, (
            f"{block.path}'s list {block.name} is not the registry's; run python "
            f"tests/doc_lists.py, or write:\n{expected}")
    else:
        assert names_problems(block.name, block.body) == [], block.path


def test_every_list_is_in_a_doc_once() -> None:
    """Each renderer and each checked list has exactly one block (none left unused, none
    written twice by hand)."""
    names = [b.name for b in BLOCKS]
    assert sorted(names) == sorted({*RENDER, *NAMES})
    assert {b.name for b in BLOCKS if b.kind == "list"} == set(RENDER)


def test_the_checker_fails_on_a_stale_list() -> None:
    """The checks can fail: a key dropped from a generated list, an option left out of a
    checked one, a bullet for an option that does not exist, a wrong default."""
    keys = next(b for b in BLOCKS if b.name == "keys-bounds")
    assert keys.body.replace("`coverage` (default 0.999), ", "") != rendered(keys)
    known = {"beta": 1e-4, "method": "auto", "seed": None}
    prose = ("* **beta**: the failure target (default 1e-4).\n"
             "* **method**: `auto` (default) or `composition`.\n* **seed**: tests only.\n")
    assert names_problems("x", prose, known) == []
    assert names_problems("x", prose.replace("1e-4", "1e-3"), known) == [
        "beta: default 1e-3, the registry's 0.0001"]
    assert names_problems("x", prose.replace("* **seed**: tests only.\n", ""), known) == [
        "seed is not mentioned"]
    assert names_problems("x", prose + "* **sead**: a typo, `--plan-onyl`.\n", known) == [
        "sead names no option", "plan_onyl names no option"]


CONF_NAMED = re.compile(r"\bconf/[\w./-]*\w\.(?:txt|ya?ml|csv|json)\b")


def test_every_conf_file_the_docs_name_is_shipped() -> None:
    """A path under conf/ that README, docs, the Makefile, a config or a job names (in a
    command to copy, or a commented key to uncomment) exists."""
    sources = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").glob("*.md")),
               *sorted((ROOT / "conf").glob("*.yaml")), *sorted((ROOT / "jobs").glob("*.py"))]
    named = {m for p in sources for m in CONF_NAMED.findall(p.read_text(encoding="utf-8"))}
    assert {"conf/groups.txt", "conf/regions.txt"} <= named
    assert sorted(n for n in named if not (ROOT / n).is_file()) == []


@pytest.mark.parametrize("config", ["aggregate", "describe", "private_bounds"])
def test_the_demos_groups_file_holds_its_groups_list(config: str) -> None:
    """Uncommenting ``groups_file: conf/groups.txt`` in a demo config (in place of
    ``groups``) runs the same public groups."""
    text = (ROOT / "conf" / f"{config}.yaml").read_text(encoding="utf-8")
    named = re.search(r"#\s*groups_file:\s*(\S+)", text)
    assert named is not None
    section = next(v for k, v in yaml.safe_load(text).items() if k != "spark")
    assert read_groups_file(str(ROOT / named[1])) == split_groups(section["groups"])
