"""MkDocs hook: the site's search finds the lesson first, for hyphenated terms too.

Material's search (lunr, in the reader's browser) ranks sections by how well they match;
a page's ``search: boost`` front matter multiplies that. The course's chapters (the pages
with a ``level``) are where a term is taught, so they are boosted above the article, the
questions and the blog (tests/site/test_browser.py searches what readers type; the
practice pages are left out of the index by tools/site/practice_pages.py).

Code blocks are left out of the index (Material's ``data-search-exclude``): the sections
that include a source file (``attention/model.py`` in chapter 3 names MLA, KV caches and
every later feature) outranked the sections that teach those terms, and a result's
preview, which is its section's indexed text, was a wall of code thousands of pixels
tall. The prose and its inline code, where terms are taught, stay searchable.

Hyphenated terms ("top-p", "min-p", "multi-head") are indexed whole (mkdocs.yml's search
``separator`` leaves hyphens in words), but Material's search worker still splits a query
at hyphens: its copy of lunr reads query words with lunr's own separator, fixed when the
worker loads. So the pages load the worker through a two-line wrapper, written at build
time, that gives lunr's query reader the site's separator.
"""

import json
import re
from pathlib import Path

from mkdocs.plugins import event_priority

CHAPTER_BOOST = 4.0
# The sections that teach a term the later chapters build on and use more often than they
# do (the KV cache in chapter 4, before chapter 9's smaller caches and chapter 11's paged
# one): each weighs its factor times a chapter's other sections.
TEACH = {"chapters/ch02-self-attention/#24-the-causal-mask": 2.5,
         "chapters/ch02-self-attention/#25-multi-head-attention": 2.5,
         "chapters/ch03-transformer-block/#rotary-position-embeddings-rope": 2.5,
         "chapters/ch04-generation/#42-the-kv-cache": 2.5,
         "chapters/ch05-attention-at-scale/#54-blocked-attention-flashattentions-tiling": 2.5,
         # MLA, which its title spells out; more would put it before multi-head attention
         "chapters/ch09-smaller-caches-steadier-logits/#92-multi-head-latent-attention-step-by-step":
         1.5}
ASIDE = 0.01  # an exercise, the interview questions, sources, "Next": found, but after
NOT_TEACHING = re.compile(r"#(exercise-|interview-questions$|practice$|sources$|next$)")
CHAPTER = re.compile(r"chapters/ch(\d\d)-")
WORKER = re.compile(r"(assets/javascripts/workers/)search\.[0-9a-f]+\.min\.js")
WRAPPER = "search-whole-terms.js"
CODE_BLOCK = re.compile(r'(<div class="[^"]*\bhighlight\b[^"]*"[^>]*)>')


def on_page_markdown(markdown, page, config, files):
    if page.meta.get("level"):
        page.meta.setdefault("search", {}).setdefault("boost", CHAPTER_BOOST)
    return markdown


def leave_code_out_of_search(html: str) -> str:
    """Every code block (``<div class="... highlight">``) marked for the search to skip."""
    return CODE_BLOCK.sub(lambda m: m.group(0) if "data-search-exclude" in m.group(1)
                          else f"{m.group(1)} data-search-exclude>", html)


@event_priority(-100)  # after the other hooks, which find code blocks by their exact tags
def on_page_content(html, page, config, files):
    return leave_code_out_of_search(html)


def rank_sections(index: dict) -> dict:
    """Material's search index with each chapter section's weight (lunr's document boost)
    set by what the section is: a teaching section keeps the chapter's boost, times
    its factor for those in ``TEACH``; a chapter's exercises, interview questions,
    sources and "Next" weigh ``ASIDE``: a term in an exercise's title (which lunr weighs
    1000 times its text) must not put the exercise before the section that teaches it."""
    missing = set(TEACH) - {doc["location"] for doc in index["docs"]}
    if missing:
        raise ValueError(f"search_rank.TEACH names sections the site does not have: {missing}")
    for doc in index["docs"]:
        if not CHAPTER.match(doc["location"]) or "boost" not in doc:
            continue
        if NOT_TEACHING.search(doc["location"]):
            doc["boost"] = ASIDE
        elif doc["location"] in TEACH:
            doc["boost"] *= TEACH[doc["location"]]
    return index


def _use_wrapper(html):
    return WORKER.sub(rf"\g<1>{WRAPPER}", html, count=1)


def on_post_page(output, page, config):
    return _use_wrapper(output)


def on_post_template(output_content, template_name, config):  # the 404 page
    return _use_wrapper(output_content)


def rerank_index(site_dir: Path) -> None:
    """The built site's search index, rewritten with each section's weight (rank_sections)."""
    index = Path(site_dir) / "search" / "search_index.json"
    index.write_text(json.dumps(rank_sections(json.loads(index.read_text("utf8"))),
                                separators=(",", ":")), "utf8")


def write_worker_wrapper(site_dir: Path, separator: str) -> None:
    """The search worker's wrapper (WRAPPER): Material's worker, with lunr's query reader
    splitting words at ``separator``, as the index does."""
    workers = Path(site_dir) / "assets" / "javascripts" / "workers"
    (material,) = (p.name for p in workers.glob("search.*.min.js"))
    (workers / WRAPPER).write_text(
        "// Material's search worker, with a query's words split where the index splits\n"
        "// them (tools/site/search_rank.py).\n"
        f"importScripts({json.dumps(material)});\n"
        f"self.lunr.QueryLexer.termSeparator = new RegExp({json.dumps(separator)});\n",
        "utf8")


def on_post_build(config):
    rerank_index(Path(config["site_dir"]))
    write_worker_wrapper(Path(config["site_dir"]),
                         config["plugins"]["material/search"].config.separator)
