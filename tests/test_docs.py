"""The Sphinx site in docs/ builds with warnings as errors, and its generated pages are complete.

One build (about 10-20 s on one CPU thread) serves every test here; notebooks are not executed.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def html(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("docs_html")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           str(DOCS), str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600,
                          check=False)
    assert proc.returncode == 0, f"sphinx-build failed (warnings are errors):\n{proc.stdout}\n{proc.stderr}"
    return out


def _text(path: Path) -> str:
    """Visible text of an HTML page, roughly (tags removed, entities of interest decoded)."""
    raw = re.sub(r"<[^>]+>", "", path.read_text())
    return raw.replace("&#8212;", "-").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")


def test_every_page_is_built(html):
    for page in ("index", "getting_started", "notebooks", "concepts", "api", "cli", "datasets", "pretrained",
                 "results", "gpu", "results/anomaly_detection"):
        assert (html / f"{page}.html").is_file(), page
    # optional pages are included exactly when their source exists
    assert (html / "validation.html").is_file() == (DOCS / "validation.md").is_file()
    assert (html / "results" / "node_classification.html").is_file() == \
        (DOCS / "results" / "node_classification.md").is_file()


def test_cli_page_lists_every_subcommand(html):
    from omnigraph.cli import build_parser

    text = _text(html / "cli.html")
    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    assert commands, "the CLI has no sub-commands"
    for name, sub in commands.items():
        assert f"omnigraph {name}" in text, name
        for action in sub._actions:  # every option of every top-level command is documented
            for flag in action.option_strings:
                assert flag in text, (name, flag)


def test_datasets_page_lists_the_whole_catalogue(html):
    catalogue = json.loads((ROOT / "datasets" / "catalogue.json").read_text())["datasets"]
    text = _text(html / "datasets.html")
    missing = [name for name in catalogue if name not in text]
    assert not missing, f"catalogue entries absent from datasets.html: {missing}"


def test_pretrained_page_shows_every_model_card(html):
    text = _text(html / "pretrained.html")
    cards = sorted((ROOT / "pretrained").glob("*.md"))
    assert cards, "no model cards in pretrained/"
    registry = json.loads((ROOT / "pretrained" / "registry.json").read_text())
    for card in cards:
        assert card.stem in text
        # the card's first bullet appears verbatim: the page is generated from the file, not copied by hand
        first = next(line[2:] for line in card.read_text().splitlines() if line.startswith("- "))
        assert _text_of_markdown(first) in text, (card.name, first)
        if card.stem in registry:
            assert registry[card.stem]["sha256"][:16] in text


def _text_of_markdown(line: str) -> str:
    return line.replace("`", "").replace("**", "")


def test_results_pages_are_included(html):
    for md in (DOCS / "results").rglob("*.md"):
        page = html / md.relative_to(DOCS).with_suffix(".html")
        assert page.is_file(), f"{md.relative_to(ROOT)} is not part of the site"


def test_api_reference_documents_the_public_api(html):
    import omnigraph

    source = (html / "api.html").read_text()
    # autodoc gives every documented object an anchor with its dotted path
    anchors = set(re.findall(r'id="(omnigraph[\w.]*)"', source))
    public = [n for n in omnigraph.__all__ if n != "__version__"]
    assert public
    missing = [n for n in public if not any(a == f"omnigraph.{n}" or a.endswith(f".{n}") for a in anchors)]
    assert not missing, f"public names without an API entry: {missing}"
    for estimator in ("RGVT", "GraphAny", "REFIGAD", "ARC"):  # and their main methods
        for method in ("from_pretrained", "fit"):
            assert any(a.endswith(f".{estimator}.{method}") for a in anchors), (estimator, method)


def decimals(text: str) -> list[str]:
    """The decimal numbers written in ``text`` (not parts of longer tokens such as versions)."""
    return re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", text)


def test_readme_numbers_come_from_committed_results():
    """Every decimal number in the README's results section appears in a committed results file or model card."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Results")
    end = readme.index("\n## ", start + 1)
    numbers = set(decimals(readme[start:end]))
    assert numbers, "the README's results section shows no numbers"
    committed = "\n".join(p.read_text() for p in [*(DOCS / "results").rglob("*.md"),
                                                   *(ROOT / "pretrained").glob("*.md")])
    found = set(decimals(committed))
    assert numbers <= found, f"README numbers not in docs/results or pretrained cards: {sorted(numbers - found)}"
    assert "<!-- nc-results:start -->" in readme and "<!-- nc-results:end -->" in readme


def test_committed_pages_hold_no_machine_paths():
    """Results, docs, notebooks, cards and the README name no absolute path of the machine that
    wrote them (data roots appear as ``$OMNIGRAPH_DATA``): ``omnigraph._config.portable``."""
    pattern = re.compile(r"(?<![\w$.])/(?:work|home|tmp|Users|root|mnt|scratch)/\w")
    pages = [ROOT / "README.md", *(ROOT / "pretrained").rglob("*.md"), *(ROOT / "notebooks").glob("*.ipynb"),
             *(p for p in DOCS.rglob("*") if p.suffix in (".md", ".json", ".jsonl", ".csv", ".rst", ".txt"))]
    bad = {str(p.relative_to(ROOT)): pattern.search(p.read_text()).group(0) for p in pages
           if p.is_file() and pattern.search(p.read_text())}
    assert not bad, f"absolute machine paths in committed pages: {bad}"


def test_portable_rewrites_data_roots(tmp_path, monkeypatch):
    from omnigraph._config import portable

    monkeypatch.setenv("OMNIGRAPH_DATA", str(tmp_path))
    assert portable(f"put its files at {tmp_path}/pyg/Cora/raw") == "put its files at $OMNIGRAPH_DATA/pyg/Cora/raw"
    assert portable(f"{Path.home()}/x") == "~/x"


def test_auto_model_reasons_quote_the_committed_page():
    """``omnigraph detect --model auto`` prints why it chose a detector: every AUROC it quotes is on the
    committed anomaly-detection page today (not on a history line ``old -> new``)."""
    from omnigraph.cli.gad import AUTO_REASON

    page = (DOCS / "results" / "anomaly_detection.md").read_text().splitlines()
    current = set(decimals("\n".join(l for l in page if "->" not in l)))
    for model, reason in AUTO_REASON.items():
        quoted = set(decimals(reason))
        assert quoted and quoted <= current, (model, sorted(quoted - current))
