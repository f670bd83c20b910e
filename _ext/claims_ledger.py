"""The claims ledger in the built book (loaded from _config.yml, sphinx.local_extensions).

A chapter states a claim in a code cell with ``attnclust.book.claims.claim`` (which glues the
sentence under ``claim:<id>`` and its record under ``claim-data:<id>``) and shows it in the
prose with the role ``{claim}`<id>```. This extension

- renders the role: the claim's sentence (MyST Markdown, math included) in a
  ``<span class="claim" id="claim-<id>">``, followed by a link to its row on the Claims page;
- collects every claim of every page in the build environment (cached with the pages, so
  an incremental build still lists them all);
- fills the directive ``{claims-ledger}`` on the Claims page with tables: ``:paper:`` gives
  the table of the paper's claims (each with the paper's setting, the book's claims that bear
  on it at the book's settings, and the verdict on the paper's claim they give together), ``:summary:`` the count of
  verdicts per chapter, ``:replications:`` the committed replication reports
  (``replications/seed-N.json``, written by ``make replicate SEED=N``: every claim's verdict
  under another master seed), and no option every claim by chapter, with its setting,
  evidence, verdict, its verdict under each replication seed and a link back to where the
  prose makes it;
- writes every claim to ``claims.json`` in the HTML output folder;
- fails the build (a warning, and the book builds with -W) when a page records a claim its
  prose never shows, when a role names a claim no cell recorded, or when two pages use the
  same claim id.

Why an extension: the ledger is the book's own bookkeeping over the records that
attnclust.claims glues; MyST-NB's glue roles show a glued value, not a claim with its
evidence, verdict and place in a book-wide table.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from myst_nb.core.render import MimeData
from myst_nb.core.variables import RetrievalError
from myst_nb.ext.glue.utils import retrieve_glue_data
from myst_nb.ext.utils import RoleBase
from sphinx.addnodes import pending_xref
from sphinx.util import logging

logger = logging.getLogger(__name__)

ENV_KEY = "attnclust_claims"  # docname -> {id: {"record": dict, "nodes": [node], "title": str}}
PAGES_KEY = "attnclust_ledger_pages"  # docnames holding a claims-ledger directive
VERDICT_WORDS = {"holds": "holds", "approx": "holds approximately", "fails": "does not hold",
                 "open": "open"}
SYMBOLS = {"lam": "λ", "sigma": "σ", "mu": "μ", "theta": "θ", "pi": "π"}


class claim_backlink(nodes.Inline, nodes.Element):
    """A link from a claim in the prose to its row on the Claims page (resolved on write)."""


class claims_ledger(nodes.General, nodes.Element):
    """Where a table of the ledger goes (filled when the page is resolved)."""


def _store(env) -> dict:
    if not hasattr(env, ENV_KEY):
        setattr(env, ENV_KEY, {})
    return getattr(env, ENV_KEY)


def _pages(env) -> set:
    if not hasattr(env, PAGES_KEY):
        setattr(env, PAGES_KEY, set())
    return getattr(env, PAGES_KEY)


class ClaimRole(RoleBase):
    """``{claim}`<id>```: the claim's sentence, where the prose makes it."""

    def run(self):
        key = self.text.strip()
        try:
            sentence = retrieve_glue_data(self.document, f"claim:{key}")
            data = retrieve_glue_data(self.document, f"claim-data:{key}")
        except RetrievalError:
            msg = self.document.reporter.warning(
                f"claim {key!r}: no cell of this page recorded it (attnclust.book.claims.claim)",
                line=self.line)
            return [], [msg]
        from attnclust.book.claims import MIME

        record = data.data.get(MIME)
        if isinstance(record, str):
            record = json.loads(record)
        cell_key = sentence.nb_renderer.renderer.nb_config.cell_metadata_key
        mime = MimeData("text/markdown", sentence.data["text/markdown"],
                        cell_metadata={cell_key: {"markdown_format": "myst"}},
                        output_metadata=sentence.metadata, line=self.line)
        rendered = sentence.nb_renderer.render_markdown_inline(mime)
        span = nodes.inline(classes=["claim", f"claim-{record['verdict']}"], ids=[f"claim-{key}"])
        span.extend(rendered)
        span += claim_backlink(claim_id=key)
        self.set_source_info(span)

        env = self.document.settings.env
        found = _store(env).setdefault(env.docname, {})
        if key in found:
            return [span], [self.document.reporter.warning(
                f"claim {key!r} is shown twice on this page; show it once and refer to it in words",
                line=self.line)]
        found[key] = {"record": record, "nodes": [copy.deepcopy(n) for n in rendered]}
        return [span], []


class ClaimsLedgerDirective(Directive):
    """``{claims-ledger}``: a table of the ledger (``:paper:``, ``:summary:`` or every claim)."""

    has_content = False
    option_spec = {"paper": directives.flag, "summary": directives.flag, "replications": directives.flag}

    def run(self):
        env = self.state.document.settings.env
        _pages(env).add(env.docname)
        kind = next((k for k in ("paper", "summary", "replications") if k in self.options), "all")
        return [claims_ledger(kind=kind)]


def purge(app, env, docname):
    _store(env).pop(docname, None)
    _pages(env).discard(docname)


def merge(app, env, docnames, other):
    _store(env).update({d: c for d, c in _store(other).items() if d in docnames})
    _pages(env).update(p for p in _pages(other) if p in docnames)


def check_page(app, doctree):
    """Every claim a page records must appear in its prose."""
    from myst_nb.sphinx_ import NbMetadataCollector

    env = app.env
    glued = NbMetadataCollector.get_doc_data(env).get(env.docname, {}).get("glue", [])
    recorded = {k.split(":", 1)[1] for k in glued if k.startswith("claim-data:")}
    shown = set(_store(env).get(env.docname, {}))
    for key in sorted(recorded - shown):
        logger.warning(f"claim {key!r} is recorded but its prose never shows it: write "
                       f"{{claim}}`{key}` where the text makes the claim", location=env.docname)


REPLICATIONS_KEY = "attnclust_replications_hash"


def _replications(app) -> list[dict]:
    from attnclust.book.replication import load_reports

    return load_reports(app.srcdir, on_bad=logger.warning)


def _replications_hash(app) -> str:
    import hashlib

    from attnclust.book.replication import REPORT_DIR

    h = hashlib.sha256()
    for path in sorted((Path(app.srcdir) / REPORT_DIR).glob("seed-*.json")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def outdated(app, env, added, changed, removed):
    """The Claims page lists every page's claims and the replication reports: rebuild it
    whenever any page or report changes."""
    digest = _replications_hash(app)
    reports_changed = getattr(env, REPLICATIONS_KEY, None) != digest
    setattr(env, REPLICATIONS_KEY, digest)
    if added or changed or removed or reports_changed:
        return sorted(p for p in _pages(env) if p in env.found_docs)
    return []


def check_unique(app, env):
    seen: dict[str, str] = {}
    for docname in sorted(_store(env)):
        for key in _store(env)[docname]:
            if key in seen:
                logger.warning(f"claim id {key!r} is used by {seen[key]} and {docname}", location=docname)
            seen.setdefault(key, docname)


def _doc_order(env, root) -> list[str]:
    order, stack, seen = [], [root], set()
    while stack:
        doc = stack.pop()
        if doc in seen:
            continue
        seen.add(doc)
        order.append(doc)
        stack.extend(reversed(env.toctree_includes.get(doc, [])))
    return order


def _claims_in_order(app) -> list[tuple[str, str, dict]]:
    env = app.env
    store = _store(env)
    order = _doc_order(env, app.config.root_doc)
    docs = [d for d in order if d in store] + sorted(d for d in store if d not in order)
    return [(doc, key, store[doc][key]) for doc in docs for key in store[doc]]


def _number(x) -> str:
    if x in ("inf", float("inf")):  # the large-L limit, L = "inf" in a setting
        return "∞"
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, int):
        return str(x)
    return f"{x:.4g}"


def _interval(estimate, low, high) -> tuple[str, str]:
    """The estimate and the range as the row prints them: four significant digits, up to three
    more where the two ends would print the same, and one value where they still agree (a
    range whose ends are equal is one number, not "0.9864 to 0.9864")."""
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (estimate, low, high)):
        return _number(estimate), f"{_number(low)} to {_number(high)}"
    for p in range(4, 8):
        a, b = f"{low:.{p}g}", f"{high:.{p}g}"
        if a != b:
            return f"{estimate:.{p}g}", f"{a} to {b}"
    return f"{estimate:.4g}", f"of one value, {low:.4g}"


def _value(x) -> str:
    if isinstance(x, dict) and {"estimate", "low", "high"} <= set(x):
        pct = f"{100 * x.get('level', 0.95):g}%"
        n = f", n = {x['n']}" if x.get("n") else ""
        method = f" {x['method']}" if x.get("method") else ""
        est, rng = _interval(x["estimate"], x["low"], x["high"])
        return f"{est} ({pct}{method} CI {rng}{n})"
    if isinstance(x, dict) and "difference" in x:
        return (f"mean difference {_value(x['difference'])}; ahead on {x['wins']}, behind on "
                f"{x['losses']}, tied on {x['ties']}")
    if isinstance(x, dict):
        return "; ".join(f"{k}: {_value(v)}" for k, v in x.items())
    if isinstance(x, list):
        return "[" + ", ".join(_value(v) for v in x) + "]"
    return _number(x)


def _pairs(mapping: dict, sep: str = "; ") -> str:
    return sep.join(f"{SYMBOLS.get(k, k)} = {_value(v)}" for k, v in mapping.items())


def _verdict(record: dict) -> nodes.Node:
    para = nodes.paragraph()
    para += nodes.strong("", VERDICT_WORDS[record["verdict"]])
    if record.get("detail"):
        para += nodes.Text(f": {record['detail']}")
    return para


def _strip_xrefs(node_list):
    out = []
    for n in node_list:
        n = n.deepcopy()
        for x in list(n.findall(pending_xref)):
            x.replace_self(nodes.inline("", x.astext()))
        out.append(n)
    return out


def _table(headers: list[str], widths: list[int], rows: list[tuple[list[nodes.Node], str | None]],
           classes: list[str]) -> nodes.table:
    table = nodes.table(classes=["claims-table", *classes])
    group = nodes.tgroup(cols=len(headers))
    table += group
    for w in widths:
        group += nodes.colspec(colwidth=w)
    head = nodes.thead()
    group += head
    row = nodes.row()
    for h in headers:
        entry = nodes.entry()
        entry += nodes.paragraph("", h)
        row += entry
    head += row
    body = nodes.tbody()
    group += body
    for cells, row_id in rows:
        row = nodes.row(ids=[row_id] if row_id else [])
        for cell in cells:
            entry = nodes.entry()
            entry += cell if isinstance(cell, list) else [cell]
            row += entry
        body += row
    return table


def _sentence_cell(app, fromdoc: str, doc: str, key: str, item: dict) -> list[nodes.Node]:
    para = nodes.paragraph()
    para.extend(_strip_xrefs(item["nodes"]))
    uri = app.builder.get_relative_uri(fromdoc, doc) + f"#claim-{key}"
    para += nodes.Text(" (")
    para += nodes.reference("", app.env.titles[doc].astext() if doc in app.env.titles else doc, refuri=uri)
    para += nodes.Text(")")
    return [para]


def _text(s: str) -> nodes.paragraph:
    return nodes.paragraph("", s)


def _other_seeds(key: str, reports: list[dict]) -> nodes.paragraph:
    """A claim's verdict under each replication seed; a flip (a verdict its prose is not
    written for) in bold, with "flips"."""
    para = nodes.paragraph()
    if not reports:
        para += nodes.Text("not re-run")
    for i, rep in enumerate(reports):
        if i:
            para += nodes.Text("; ")
        row = next((r for r in rep["claims"] if r["id"] == key), None)
        label = f"seed {rep['seed']}: "
        if row is None:
            para += nodes.Text(label + ("not recorded (a cell before it failed)"
                                        if key in rep.get("not_recorded", ()) else "not re-run"))
        elif row["flipped"]:
            para += nodes.strong("", f"{label}{VERDICT_WORDS[row['verdict']]} (flips)")
        else:
            para += nodes.Text(label + VERDICT_WORDS[row["verdict"]])
    return para


def _replications_table(reports: list[dict]) -> nodes.Node:
    if not reports:
        return _text("No replication report is committed yet.")
    rows = []
    for rep in reports:
        c = rep["counts"]
        same = c["claims"] - c["flipped"]
        rows.append(([_text(str(rep["seed"])), _text(f"{(rep.get('commit') or 'unknown')[:7]}, {rep['date'][:10]}"),
                      _text(str(c["claims"])), _text(str(same)), _text(str(c["flipped"])),
                      _text(str(c["not_recorded"])), _text(str(c["cell_errors"]))], None))
    return _table(["Master seed", "Commit, date", "Claims re-checked", "Verdict as written",
                   "Flipped", "Not recorded", "Failing cells"], [12, 18, 14, 14, 14, 14, 14], rows,
                  ["claims-replications"])


PAPER_SETTING_KEYS = ("K", "d", "L", "lam", "sigma", "r", "weights", "mixture", "init", "steps", "seeds",
                      "prompts")
"""The parameters that name a setting in the paper table's verdicts (the full setting is in the
evidence column)."""

OUTCOME_WORDS = {"supported": "holds", "qualified": "holds with a qualification",
                 "contradicted": "does not hold", "open": "not decided"}
"""What one claim of the book says of the paper's statement (``claims.bears_on_paper``), as a
verdict on that statement."""


def _outcome_words(outcome: str, record: dict) -> str:
    """The verdict on the paper's statement that one claim of the book gives: "holds", "does not
    hold", ... , with "approximately" and by how much when the book's claim holds only
    approximately."""
    words = OUTCOME_WORDS[outcome]
    if record["verdict"] == "approx" and outcome != "open":
        words = words.replace("holds", "holds approximately", 1).replace("does not hold", "does not hold, approximately", 1)
        if record.get("detail"):
            words += f" ({record['detail']})"
    return words


def _short_setting(setting: dict) -> str:
    return _pairs({k: setting[k] for k in PAPER_SETTING_KEYS if k in setting}, ", ") or _pairs(setting, ", ")


def _paper_table(app, fromdoc: str, claims) -> nodes.table:
    """One row per claim of the paper: its statement and setting, the book's claims that bear on
    it (each with its setting, its verdict and how it bears), and the verdict on the paper's
    claim that they give together (attnclust.book.claims.paper_verdict)."""
    from attnclust.book.claims import PAPER, bears_on_paper, paper_verdict

    rows = []
    for pkey, paper in PAPER.items():
        mine = [(d, k, it) for d, k, it in claims if it["record"].get("paper") == pkey]
        first = nodes.paragraph()
        first += nodes.Text(paper.statement)
        cell = [first, nodes.paragraph("", "", nodes.emphasis("", f"Setting: {paper.setting}"))]
        evidence = []
        for doc, key, item in mine:
            rec = item["record"]
            para = _sentence_cell(app, fromdoc, doc, key, item)[0]
            outcome = bears_on_paper(rec["verdict"], rec["bearing"])
            para += nodes.Text(f" [the book's test: {VERDICT_WORDS[rec['verdict']]}; so the paper's claim "
                               f"{'is not decided' if outcome == 'open' else OUTCOME_WORDS[outcome]} here]")
            evidence.append(para)
            evidence.append(nodes.paragraph("", "", nodes.emphasis(
                "", f"At: {_pairs(rec['setting'], ', ')}")))
        if not evidence:
            evidence = [_text("The book has no claim that tests it.")]
        verdict = paper_verdict([item["record"] for _, _, item in mine])
        judged = nodes.paragraph()
        judged += nodes.strong("", verdict.headline)
        out = [judged]
        records = {k: item["record"] for _, k, item in mine}
        for outcome, key, setting in verdict.outcomes:
            out.append(_text(f"{_outcome_words(outcome, records[key])} at {_short_setting(setting)} ({key})"))
        rows.append(([cell, evidence, out], f"paper-{pkey}"))
    return _table(["The paper claims (and its setting)", "What the book measures, at the book's setting",
                   "Verdict on the paper's claim, as tested here"], [28, 47, 25], rows, ["claims-paper"])


def fill(app, doctree, fromdoc):
    """Resolve the backlinks of a page and fill the ledger tables of the Claims page."""
    pages = sorted(_pages(app.env))
    for link in list(doctree.findall(claim_backlink)):
        if not pages:
            link.replace_self(nodes.Text(""))
            continue
        uri = app.builder.get_relative_uri(fromdoc, pages[0]) + f"#ledger-{link['claim_id']}"
        ref = nodes.reference("", "", refuri=uri, classes=["claim-evidence"],
                              reftitle="setting, evidence and verdict on the Claims page")
        ref += nodes.Text("[evidence]")
        link.replace_self(ref)
    ledgers = list(doctree.findall(claims_ledger))
    if not ledgers:
        return
    claims = _claims_in_order(app)
    for node in ledgers:
        if node["kind"] == "paper":
            node.replace_self(_paper_table(app, fromdoc, claims))
        elif node["kind"] == "replications":
            node.replace_self(_replications_table(_replications(app)))
        elif node["kind"] == "summary":
            counts: dict[str, dict[str, int]] = {}
            for doc, _, item in claims:
                c = counts.setdefault(doc, {k: 0 for k in VERDICT_WORDS})
                c[item["record"]["verdict"]] += 1
            rows = []
            for doc, c in counts.items():
                para = nodes.paragraph()
                para += nodes.reference("", app.env.titles[doc].astext(),
                                        refuri=app.builder.get_relative_uri(fromdoc, doc))
                rows.append(([para, _text(str(sum(c.values())))] + [_text(str(c[k])) for k in VERDICT_WORDS], None))
            total = {k: sum(c[k] for c in counts.values()) for k in VERDICT_WORDS}
            rows.append(([_text("All chapters"), _text(str(sum(total.values())))]
                         + [_text(str(total[k])) for k in VERDICT_WORDS], None))
            node.replace_self(_table(["Chapter", "Claims"] + [VERDICT_WORDS[k].capitalize() for k in VERDICT_WORDS],
                                     [30, 10, 15, 15, 15, 15], rows, ["claims-summary"]))
        else:
            out = []
            reports = _replications(app)
            by_doc: dict[str, list] = {}
            for doc, key, item in claims:
                by_doc.setdefault(doc, []).append((key, item))
            for doc, items in by_doc.items():
                title = nodes.paragraph()
                title += nodes.strong("", "")
                title[0] += nodes.reference("", app.env.titles[doc].astext(),
                                            refuri=app.builder.get_relative_uri(fromdoc, doc))
                out.append(title)
                rows = [([_sentence_cell(app, fromdoc, doc, key, item), _text(_pairs(item["record"]["setting"], ", ")),
                          _text(_pairs(item["record"]["evidence"])), _verdict(item["record"]),
                          _other_seeds(key, reports)], f"ledger-{key}")
                        for key, item in items]
                out.append(_table(["Claim", "Setting", "Evidence", "Verdict", "Under other seeds"],
                                  [32, 18, 28, 12, 10], rows, ["claims-all"]))
            node.replace_self(out or [_text("No chapter states a claim yet.")])


def page_has_math(app, pagename, templatename, context, doctree):
    """The Claims page's sentences carry math that was inserted after the page was read."""
    if pagename in _pages(app.env):
        app.env.get_domain("math").data["has_equations"][pagename] = True


def write_json(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    records = []
    for doc, key, item in _claims_in_order(app):
        rec = dict(item["record"])
        rec["chapter"] = doc
        rec["chapter_title"] = app.env.titles[doc].astext() if doc in app.env.titles else doc
        rec["url"] = app.builder.get_target_uri(doc) + f"#claim-{key}"
        records.append(rec)
    counts = {k: sum(r["verdict"] == k for r in records) for k in VERDICT_WORDS}
    out = Path(app.outdir) / "claims.json"
    out.write_text(json.dumps({"claims": records, "counts": counts}, indent=1, ensure_ascii=False) + "\n",
                   encoding="utf8")


def setup(app):
    app.add_node(claim_backlink)
    app.add_node(claims_ledger)
    app.add_role("claim", ClaimRole())
    app.add_directive("claims-ledger", ClaimsLedgerDirective)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("doctree-read", check_page)
    app.connect("env-get-outdated", outdated)
    app.connect("env-check-consistency", check_unique)
    app.connect("doctree-resolved", fill)
    app.connect("html-page-context", page_has_math, priority=100)
    app.connect("build-finished", write_json)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
