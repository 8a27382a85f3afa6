"""The promotion report a reviewer reads: the diff, guard metrics side by side with 95% CIs, and
the decision, as one self-contained HTML page (figure embedded); and the decision for the
terminal (`summary`) and for machines (`as_json`)."""

from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import asdict
from typing import Any

from citegate.tracking.promote.decision import PromotionDecision
from citegate.tracking.promote.production_file import format_diff


def _figure(decision: PromotionDecision) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [g.metric for g, _ in decision.guards]
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.7 * len(metrics)))
    for i, (side, vals, color) in enumerate(
        (("production", decision.production, "C0"), ("candidate", decision.candidate, "C1"))
    ):
        y = [j + (0.15 if i else -0.15) for j in range(len(metrics))]
        v = [vals[m]["value"] for m in metrics]
        err = [
            [vals[m]["value"] - vals[m]["low"] for m in metrics],
            [vals[m]["high"] - vals[m]["value"] for m in metrics],
        ]
        ax.errorbar(v, y, xerr=err, fmt="o", color=color, label=side, capsize=3)
    ax.set_yticks(range(len(metrics)), metrics)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel(
        "value (95% CI: Wilson for rates, question-group bootstrap for AUROC), test split"
    )
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _cell(v: dict[str, float] | None) -> str:
    if v is None:
        return "not measured"
    n = f" (n={int(v['n'])})" if "n" in v else ""
    return f"{v['value']:.3f} [{v['low']:.3f}, {v['high']:.3f}]{n}"


def _metric_row(
    name: str, rule: str, prod: dict[str, float] | None, cand: dict[str, float] | None, result: str
) -> str:
    esc = html.escape
    return (
        f"<tr><td>{esc(name)}</td><td>{esc(describe_metric(name))}</td><td>{esc(rule)}</td>"
        f"<td>{_cell(prod)}</td><td>{_cell(cand)}</td><td>{result}</td></tr>"
    )


def render(decision: PromotionDecision, facts: dict[str, Any]) -> str:
    """The full HTML page."""
    esc = html.escape
    verdict = "ACCEPTED" if decision.accepted else "REFUSED"
    if decision.forced:
        verdict += f" — forced: {esc(decision.reason)}"
    diff_rows = (
        "".join(
            f"<tr><td>{esc(k)}</td><td>{esc(str(o))}</td><td>{esc(str(n))}</td></tr>"
            for k, o, n in decision.changes
        )
        or "<tr><td colspan=3>no change</td></tr>"
    )
    guard_rows = ""
    for g, ok in decision.guards:
        guard_rows += _metric_row(
            g.metric,
            f"{g.better} is better, tol {g.tolerance}",
            decision.production[g.metric],
            decision.candidate[g.metric],
            "OK" if ok else "WORSE",
        )
    for m in reported_metrics(decision):
        guard_rows += _metric_row(
            m,
            "reported, not guarded",
            decision.production.get(m),
            decision.candidate.get(m),
            "",
        )
    cert = _certificate_section(decision)
    facts_rows = "".join(
        f"<tr><td>{esc(str(k))}</td><td>{esc(str(v))}</td></tr>" for k, v in facts.items()
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>citegate promotion</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:20px auto}}
table{{border-collapse:collapse;margin:8px 0 18px;display:block;overflow-x:auto}}
td,th{{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left}}
.v{{font-size:20px;padding:10px;border-radius:6px;background:{"#e6f4ea" if decision.accepted else "#fdecea"}}}
img{{max-width:100%}}</style></head><body>
<h1>Promotion of a tuned pipeline config</h1>
<p class="v"><b>Decision: {verdict}</b></p>
<h2>What changes (production → candidate)</h2>
<table><tr><th>key</th><th>production</th><th>candidate</th></tr>{diff_rows}</table>
<h2>Guard metrics on the test split</h2>
<p>Both configs replay the same cached retrieval traces of the test split. Intervals are 95%:
Wilson score intervals for rates, a bootstrap over question groups for AUROC; n is the number of
questions behind each value. Every metric is measured per kind of negative (out_of_corpus: in
scope but held out of the corpus; out_of_scope: off-topic). A candidate is accepted only if no
guard is worse than production beyond its tolerance.</p>
<table><tr><th>metric</th><th>what it measures</th><th>rule</th><th>production</th>
<th>candidate</th><th>result</th></tr>
{guard_rows}</table>
<img src="data:image/png;base64,{_figure(decision)}" alt="guard metrics">
{cert}<h2>Provenance of the candidate</h2><table>{facts_rows}</table>
</body></html>"""


def _certificate_section(decision: PromotionDecision) -> str:
    """The certified false-answer bounds of the recommendation, one row per kind (empty when the
    recommendation certifies nothing)."""
    checks = decision.certificate
    if not checks:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(c.kind)}</td><td>{c.n_neg}</td><td>{c.alpha:g}</td>"
        f"<td>{1 - c.delta:g}</td><td>{c.bound:.4f}</td><td>{'OK' if c.ok else 'FAILS'}</td></tr>"
        for c in checks
    )
    return (
        "<h2>Certified false-answer bounds (tune split)</h2><p>The recommendation's exact "
        "(Clopper–Pearson) upper bound of the false-answer rate per kind of negative, at "
        "confidence 1−δ, must be at most its target α; a failing kind refuses the promotion "
        "(--force does not override it).</p><table><tr><th>kind</th><th>negatives</th>"
        f"<th>α</th><th>confidence</th><th>bound</th><th>result</th></tr>{rows}</table>"
    )


def describe_metric(name: str) -> str:
    """What a metric `compute_metrics` produces measures, in one phrase."""
    base, _, rest = name.partition(".")
    kind, _, lang = rest.partition(".")
    if base == "false_answer_rate":
        what = "all unanswerable kinds pooled" if kind == "pooled" else kind
        text = f"share of {what} questions the gate answers"
    elif base == "gate_auroc":
        what = "all unanswerable kinds pooled" if kind == "pooled" else kind
        text = (
            f"AUROC of the gate signal (max cosine; p(answerable) for a learned gate), "
            f"answerable vs {what} (question groups resampled)"
        )
    elif base == "answer_rate":
        text, lang = "share of answerable questions the gate answers", kind
    elif base == "recall_at_16":
        text = "share of answerable questions with a gold fragment among the final notes"
        lang = kind
    elif base in ("wrong_source_rate", "wrong_source_share"):
        among = "answerable questions" if base == "wrong_source_rate" else "answered questions"
        text = f"share of {among} answered citing no gold source (the composed answer)"
        stratum = {"named": "naming a source", "unnamed": "naming none"}.get(kind, "")
        return f"{text}, questions {stratum}" if stratum else text
    else:
        return name
    return f"{text}, language {lang}" if lang else text


def reported_metrics(decision: PromotionDecision) -> list[str]:
    """Metrics either side measured that no guard covers, sorted."""
    guarded = {g.metric for g, _ in decision.guards}
    return sorted((set(decision.candidate) | set(decision.production)) - guarded)


def summary(decision: PromotionDecision) -> str:
    """The diff, the guard table (then every reported metric) and the decision, for the terminal."""
    names = [g.metric for g, _ in decision.guards] + reported_metrics(decision)
    width = max([len("metric"), *map(len, names)])
    lines = [
        "config changes (production → candidate):",
        format_diff(decision.changes),
        "",
        f"{'metric':<{width}} {'production':>28} {'candidate':>28}  result",
    ]
    for g, ok in decision.guards:
        p, c = decision.production[g.metric], decision.candidate[g.metric]
        lines.append(
            f"{g.metric:<{width}} {_ci(p):>28} {_ci(c):>28}  "
            f"{'OK' if ok else 'WORSE'} ({g.better} is better, tol {g.tolerance})"
        )
    for m in reported_metrics(decision):
        p, c = decision.production.get(m), decision.candidate.get(m)
        lines.append(f"{m:<{width}} {_ci(p):>28} {_ci(c):>28}  (reported, not guarded)")
    verdict = "ACCEPTED" if decision.accepted else "REFUSED"
    if decision.forced:
        verdict += f" (forced: {decision.reason})"
    if decision.certificate:
        lines += ["", *(c.line() for c in decision.certificate)]
    fails = decision.certificate_fails
    if fails:
        kinds = ", ".join(c.kind for c in fails)
        verdict += f": the certified false-answer bound exceeds alpha for {kinds} (not forceable)"
    lines += [
        "",
        "rates: Wilson 95% intervals; gate_auroc: 95% bootstrap over question groups; n in ()",
        f"decision: {verdict}",
    ]
    return "\n".join(lines)


def _ci(v: dict[str, float] | None) -> str:
    if v is None:
        return "(not measured)"
    n = f" ({int(v['n'])})" if "n" in v else ""
    return f"{v['value']:.3f} [{v['low']:.3f}, {v['high']:.3f}]{n}"


def as_json(decision: PromotionDecision) -> str:
    """The decision as JSON (for machines)."""
    return json.dumps(
        {
            "accepted": decision.accepted,
            "forced": decision.forced,
            "reason": decision.reason,
            "changes": decision.changes,
            "candidate": decision.candidate,
            "production": decision.production,
            "guards": [{"metric": g.metric, "ok": ok} for g, ok in decision.guards],
            "certificate": [
                {**asdict(c), "ok": c.ok, "line": c.line()} for c in decision.certificate
            ],
        },
        indent=2,
        default=str,
    )
