"""What a run published by an earlier pfscope cannot show, in words: its readers fill the missing
tables and columns with nulls, and a null must not read as a zero ("0 CNs at risk")."""

from __future__ import annotations

#: the figures each missing table or column takes away, in the order the notice names them
_FIGURES: tuple[tuple[str, str | None, str], ...] = (
    ("replicas", "at_risk_count", "content at risk as it really is"),
    ("replicas", "lacks_count", "what each replica lacks (known missing and not told yet)"),
    ("replicas", "really_unique_count", "the CNs each replica really holds alone"),
    ("store_periods", None, "the periods stores were down"),
    (
        "transits",
        None,
        "the pairs' transit times (whether unprocessed mail is in transit, queued or expired)",
    ),
    ("next_requests", None, "the open entries' next requests"),
    ("messages", None, "the messages' trace"),
)


def older_run_figures(missing: dict[str, list[str]]) -> list[str]:
    """The figures a run lacks, by what it lacks (``RunData.missing``); others, by their names."""
    named: list[str] = []
    covered: set[tuple[str, str]] = set()
    for table, column, figure in _FIGURES:
        gone = missing.get(table, [])
        if gone and (column is None or column in gone):
            named.append(figure)
            covered |= {(table, c) for c in gone} if column is None else {(table, column)}
    rest = sorted(f"{t}.{c}" for t, cols in missing.items() for c in cols if (t, c) not in covered)
    if rest:
        named.append("other columns (" + ", ".join(rest[:6]) + (", ..." if len(rest) > 6 else "") + ")")
    return named


def older_run_notice(missing: dict[str, list[str]]) -> str | None:
    """One sentence for the top of every page, or None when the run has every table and column."""
    figures = older_run_figures(missing)
    if not figures:
        return None
    return (
        "This run was published by an earlier version of pfscope and lacks "
        + "; ".join(figures)
        + ". Those figures show as unknown here, not as zero: run pfscope compute again to see them."
    )
