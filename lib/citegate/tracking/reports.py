"""Reviewer-facing HTML: a report per run (the executed notebook without code) and an index page.

`browser_check` opens a report in headless Chromium and reads back whether every figure loaded and
whether anything overflows the page width.
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citegate.core.errors import ConfigError

REPORT_CSS = """
<style>
  body { max-width: 1100px; margin: 0 auto; }
  .jp-RenderedHTMLCommon table, .dataframe { display: block; overflow-x: auto; max-width: 100%; }
  .jp-RenderedImage img, img { max-width: 100%; height: auto; }
  .citegate-banner { font-family: sans-serif; padding: 10px 14px; margin: 12px 0;
                     border-radius: 6px; background: #eef3f8; font-size: 14px; line-height: 1.5; }
  .citegate-banner.failed { background: #fdecea; }
  pre { white-space: pre-wrap; word-break: break-word; }
</style>
"""


def render_report(notebook: Path, out: Path, banner: dict[str, Any]) -> Path:
    """Render an executed notebook to HTML without code cells, with a run banner on top."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:  # progress bars and warnings are for the terminal, not the reviewer
        if cell.cell_type == "code":
            cell.outputs = [
                o
                for o in cell.get("outputs", [])
                if not (o.get("output_type") == "stream" and o.get("name") == "stderr")
            ]
    exporter = HTMLExporter(
        template_name="lab",
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    body, _ = exporter.from_notebook_node(nb)
    body = body.replace("</head>", REPORT_CSS + "</head>", 1)
    body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + banner_html(banner), body, count=1)
    out.write_text(body, encoding="utf-8")
    return out


def banner_html(info: dict[str, Any]) -> str:
    """The run's identity for a reviewer: experiment, status, run id, commit, models, check."""
    failed = info.get("status") != "FINISHED"
    rows = "".join(
        f"<b>{html.escape(str(k))}</b>: {html.escape(str(v))}<br>" for k, v in info.items()
    )
    return f'<div class="citegate-banner{" failed" if failed else ""}">{rows}</div>'


def write_index(runs_root: Path) -> Path:
    """`index.html`: every run (newest first) with status, check result, headline metrics, link."""
    rows = []
    for summary in sorted(runs_root.glob("*/*/summary.json"), reverse=True):
        s = json.loads(summary.read_text(encoding="utf-8"))
        link = summary.parent.relative_to(runs_root) / "report.html"
        metrics = ", ".join(f"{k}={v:.3f}" for k, v in list(s.get("headline", {}).items())[:6])
        rows.append(
            f"<tr><td>{html.escape(s['started'])}</td><td>{html.escape(s['experiment'])}</td>"
            f"<td>{html.escape(s.get('profile', ''))}</td><td>{html.escape(s['status'])}</td>"
            f"<td>{html.escape(s.get('check', ''))}</td><td>{html.escape(metrics)}</td>"
            f"<td><a href='{link.as_posix()}'>report</a></td>"
            f"<td><code>{html.escape(s.get('run_id', '')[:12])}</code></td></tr>"
        )
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>citegate runs</title>"
        "<style>body{font-family:sans-serif;max-width:1200px;margin:20px auto}"
        "table{border-collapse:collapse;width:100%;font-size:13px;display:block;overflow-x:auto}"
        "td,th{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left}</style></head><body>"
        "<h1>citegate experiment runs</h1><table><tr><th>started</th><th>experiment</th>"
        "<th>profile</th><th>status</th><th>expected metrics</th><th>headline metrics</th>"
        "<th></th><th>MLflow run</th></tr>" + "".join(rows) + "</table></body></html>"
    )
    out = runs_root / "index.html"
    out.write_text(page, encoding="utf-8")
    return out


CHECK_JS = """
<script>
window.addEventListener('load', () => {
  const imgs = Array.from(document.images);
  const broken = imgs.filter(i => !(i.complete && i.naturalWidth > 0)).length;
  const over = document.documentElement.scrollWidth > window.innerWidth + 1;
  const pre = document.createElement('pre');
  pre.id = 'citegate-check';
  pre.textContent = JSON.stringify({images: imgs.length, broken: broken, overflow: over,
                                    width: document.documentElement.scrollWidth});
  document.body.appendChild(pre);
});
</script>
"""


def chromium() -> str | None:
    """Path of a Chromium binary, if one is installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _chrome(args: list[str]) -> subprocess.CompletedProcess[str]:
    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium is not installed (apt-get install chromium)")
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--window-size=1280,2000",
    ]
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [exe, *flags, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def browser_check(report: Path, screenshot: Path | None = None) -> dict[str, Any]:
    """Open the report in headless Chromium: figures loaded? page wider than the window?"""
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(
            report.read_text(encoding="utf-8").replace("</body>", CHECK_JS + "</body>"),
            encoding="utf-8",
        )
        dom = _chrome(["--virtual-time-budget=5000", "--dump-dom", probe.as_uri()]).stdout
    m = re.search(r'<pre id="citegate-check">(.*?)</pre>', dom, re.S)
    if not m:
        raise RuntimeError("chromium did not run the check script")
    result = json.loads(html.unescape(m.group(1)))
    if screenshot is not None:
        _chrome([f"--screenshot={screenshot}", report.resolve().as_uri()])
        result["screenshot"] = str(screenshot)
    return result


@dataclass(frozen=True)
class ReportCheck:
    """What headless Chromium saw in the newest report of one experiment."""

    experiment: str
    screenshot: Path
    seen: dict[str, Any]

    @property
    def ok(self) -> bool:
        """Every figure loaded, at least one figure, nothing wider than the page."""
        return self.seen["broken"] == 0 and not self.seen["overflow"] and self.seen["images"] > 0


def check_latest_reports(runs_dir: Path) -> Iterator[ReportCheck]:
    """Open the newest report of every experiment under `runs_dir` in headless Chromium and save
    a screenshot beside it (what `citegate screenshot` prints, one experiment at a time). With
    no report to open, or no Chromium to open one with, it refuses at once in one line
    (`ConfigError`) saying what it needs: a check of nothing must not pass as a check."""
    reports = latest_reports(runs_dir)
    if not reports:
        raise ConfigError(
            f"no experiment report under {runs_dir} to check: run an experiment first "
            f"(citegate run experiments/NAME.yaml){_research_hint()}"
        )
    if chromium() is None:
        raise ConfigError(
            "checking the reports needs Chromium, which is not installed: apt-get install chromium"
        )
    return (_check(experiment, report) for experiment, report in reports)


def latest_reports(runs_dir: Path) -> list[tuple[str, Path]]:
    """(experiment, its newest report.html) for every experiment folder under `runs_dir`."""
    found = []
    for exp in sorted(p for p in runs_dir.glob("*") if p.is_dir() and p.name[:2].isdigit()):
        runs = sorted(exp.glob("*/report.html"))
        if runs:
            found.append((exp.name, runs[-1]))
    return found


def _check(experiment: str, report: Path) -> ReportCheck:
    shot = report.parent / "screenshot.png"
    return ReportCheck(experiment, shot, browser_check(report, shot))


def _research_hint() -> str:
    """How to get `citegate run`, when the research extra it needs is not installed."""
    if importlib.util.find_spec("papermill") is not None:
        return ""
    return ", which needs the research extra: pip install 'citegate[research]'"
