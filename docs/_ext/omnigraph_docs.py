"""Pages generated at build time from the repository itself.

A markdown page asks for generated content with a MyST comment line::

    % omnigraph:generate cli
    % omnigraph:generate datasets
    % omnigraph:generate pretrained
    % omnigraph:generate validation

On ``source-read`` the line is replaced by markdown built from the ``omnigraph`` argparse
parsers, ``datasets/catalogue.json`` or the model cards ``pretrained/*.md``, so these pages can
never drift from the code, the catalogue or the shipped checkpoints. Nothing is written to disk.
"""
from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^% omnigraph:generate (\w+)[ \t]*$", re.MULTILINE)


# ----------------------------------------------------------------------------- CLI
def _subcommands(parser: argparse.ArgumentParser):
    """Yield ``(prog, parser)`` depth first, the parser itself first."""
    yield parser.prog, parser
    for action in parser._actions:  # argparse keeps sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _subcommands(sub)


def cli_markdown() -> str:
    from omnigraph.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal width; fix it for stable pages
    try:
        parser = build_parser()
        parts = []
        for prog, sub in _subcommands(parser):
            level = "##" if prog.count(" ") <= 1 else "###"
            parts.append(f"{level} `{prog}`\n\n```text\n{sub.format_help().rstrip()}\n```\n")
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts)


# ----------------------------------------------------------------------------- datasets
def _cell(value) -> str:
    if value is None or value == "":
        return "?"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def datasets_markdown() -> str:
    cat = json.loads((ROOT / "datasets" / "catalogue.json").read_text())
    entries = cat["datasets"]
    parts = [f"Catalogue version `{cat.get('version', '?')}`, {len(entries)} datasets. {cat.get('description', '')}\n"]
    if cat.get("naming"):
        parts.append("Naming rules:\n\n" + "\n".join(f"- {_cell(rule)}" for rule in cat["naming"]) + "\n")
    by_task: dict[str, list[str]] = {}
    for name, e in entries.items():
        stats = e.get("stats") or {}
        loader = e.get("loader") or {}
        splits = e.get("splits") or {}
        last = stats.get("num_anomalies") if e.get("task") == "gad" else stats.get("num_classes")
        row = [f"`{name}`", _cell(e.get("title")), _cell(stats.get("num_nodes")), _cell(stats.get("num_edges")),
               _cell(stats.get("num_features")), _cell(last), _cell(e.get("fidelity")),
               _cell(splits.get("default")) if splits.get("default") else "-", _cell(loader.get("type")),
               _cell(e.get("notes"))]
        by_task.setdefault(e.get("task", "?"), []).append("| " + " | ".join(row) + " |")
    titles = {"nc": ("Node classification", "classes"), "gad": ("Graph anomaly detection", "anomalies")}
    for task, lines in by_task.items():
        title, last = titles.get(task, (task, "classes"))
        header = (f"| name | title | nodes | edges | features | {last} | fidelity | default split | loader | notes |\n"
                  "|---|---|---|---|---|---|---|---|---|---|")
        parts.append(f"## {title} (`{task}`, {len(lines)} datasets)\n\n{header}\n" + "\n".join(lines) + "\n")
    return "\n".join(parts)


# ----------------------------------------------------------------------------- model cards
def pretrained_markdown() -> str:
    registry = json.loads((ROOT / "pretrained" / "registry.json").read_text())
    parts = []
    for card in sorted((ROOT / "pretrained").glob("*.md")):
        text = card.read_text().strip()
        name = card.stem
        entry = registry.get(name, {})
        # the card's own title becomes a section; everything else is kept verbatim
        body = re.sub(r"\A# .*\n", "", text).strip()
        meta = (f"- file: `pretrained/{entry['file']}` (sha256 `{entry['sha256'][:16]}...`)\n"
                if entry else "")
        parts.append(f"## `{name}`\n\n{meta}{body}\n")
    return "\n".join(parts)


def validation_markdown() -> str:
    """A toctree for ``docs/validation.md`` when it exists (it is written by another work stream)."""
    if not (ROOT / "docs" / "validation.md").exists():
        return ""
    return "```{toctree}\n:maxdepth: 2\n:caption: Validation\n\nvalidation\n```\n"


GENERATORS = {"cli": cli_markdown, "datasets": datasets_markdown, "pretrained": pretrained_markdown,
              "validation": validation_markdown}
DEPENDENCIES = {"datasets": ["datasets/catalogue.json"], "pretrained": ["pretrained/registry.json"]}


def _source_read(app, docname: str, source: list[str]) -> None:
    def replace(match: re.Match) -> str:
        kind = match.group(1)
        if kind not in GENERATORS:
            raise ValueError(f"{docname}: unknown generated section {kind!r}; choose from {sorted(GENERATORS)}")
        for dep in DEPENDENCIES.get(kind, []):
            app.env.note_dependency(str(ROOT / dep))
        if kind == "pretrained":
            for card in (ROOT / "pretrained").glob("*.md"):
                app.env.note_dependency(str(card))
        return GENERATORS[kind]()

    source[0] = MARKER.sub(replace, source[0])


def setup(app):
    app.connect("source-read", _source_read)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
