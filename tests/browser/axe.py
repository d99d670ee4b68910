"""axe-core (vendored in static/vendor, MPL-2.0) run on a page in the test's browser: WCAG 2.1 A and AA rules.

The script is evaluated through the DevTools protocol, so the page's Content-Security-Policy (which allows only
its own scripts) does not stop it, and nothing is fetched: the file is read from the checkout.
"""

from functools import cache
from pathlib import Path

AXE = Path(__file__).resolve().parents[2] / "static" / "vendor" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


@cache
def source() -> str:
    return AXE.read_text()


def violations(page) -> list[dict]:
    """axe's violations on `page` as it is now, of any impact."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(source())
    return page.evaluate(
        """tags => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})
            .then(result => result.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary})),
            })))""",
        TAGS,
    )


def describe(found: list[dict], where: str) -> str:
    lines = [f"axe found {len(found)} violation(s) on {where}:"]
    for violation in found:
        lines.append(f"- {violation['id']} ({violation['impact']}): {violation['help']}")
        for node in violation["nodes"][:5]:
            summary = " ".join(node["summary"].split())
            lines.append(f"    {node['target']}: {summary}")
    return "\n".join(lines)


def assert_accessible(page, where: str = "") -> None:
    found = violations(page)
    assert not found, describe(found, where or page.url)
