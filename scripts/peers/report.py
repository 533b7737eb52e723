"""The medians over interleaved rounds, and the table and JSON that `scripts/bench-peers`
prints. Stdlib only."""

from __future__ import annotations

import json
import math

from .registry import HAMMERWEB, PEERS, SHAPE_LABELS


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile: the smallest value with `fraction` of the values at or below
    it (p99 of 100 samples is the 99th smallest, not an interpolation)."""
    ranked = sorted(values)
    return ranked[min(len(ranked), max(1, math.ceil(fraction * len(ranked)))) - 1]


def key_figure(shape: str) -> str:
    return "p50_ms" if shape == "pickup" else "jobs_per_second"


def medians(runs: list[dict]) -> list[dict]:
    """One object per peer and shape, in first-seen order: its median run (by jobs/s, or by
    p50 for the pickup), each run's key figure, and the errors of the runs that failed."""
    grouped: dict[tuple[str, str], list[dict]] = {}
    for run in runs:
        grouped.setdefault((run["peer"], run["shape"]), []).append(run)
    results = []
    for (peer, shape), same in grouped.items():
        key = key_figure(shape)
        good = sorted((r for r in same if "error" not in r), key=lambda r: r["figures"][key])
        first = same[0]
        result = {
            "peer": peer,
            "version": first["version"],
            "shape": shape,
            "label": SHAPE_LABELS[shape],
            "settings": first["settings"],
            "rounds": len(good),
            "errors": [r["error"] for r in same if "error" in r],
            "figures": good[len(good) // 2]["figures"] if good else None,
            "each_round": [round(r["figures"][key], 2) for r in good],
        }
        if shape == "dict":
            result["results_stored"] = PEERS[peer].stores_results
        results.append(result)
    add_ratios(results)
    return results


def add_ratios(results: list[dict]) -> None:
    """Each peer's `hammerweb_ratio`, to Hammerweb's result of the same shape in the same run:
    Hammerweb's jobs/s over the peer's (2.0: Hammerweb does twice the peer's throughput), or
    for the pickup Hammerweb's p50 over the peer's (0.5: Hammerweb picks a job up in half the
    peer's time). None where either side has no figure."""
    ours = {r["shape"]: r["figures"] for r in results if r["peer"] == HAMMERWEB}
    for result in results:
        if result["peer"] == HAMMERWEB or result["shape"] not in ours:
            continue
        key = key_figure(result["shape"])
        mine, theirs = ours[result["shape"]], result["figures"]
        ok = mine and theirs and theirs.get(key)
        result["hammerweb_ratio"] = round(mine[key] / theirs[key], 2) if ok else None


def as_json(meta: dict, results: list[dict]) -> str:
    return json.dumps({"meta": meta, "results": results}, indent=2)


def _number(value: float | None, digits: int = 0) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def as_table(meta: dict, results: list[dict]) -> str:
    repeat = f", median of {meta['repeat']} rounds" if meta["repeat"] > 1 else ""
    lines = [
        f"PostgreSQL {meta.get('server_version', '?')}, {meta['jobs']} jobs per throughput run, "
        f"{meta['samples']} pickup samples{repeat}, planner statistics of the "
        f"{meta.get('planner_stats', 'backlog')}; load average "
        f"{meta['load_before'][0]:.2f} before, {meta['load_after'][0]:.2f} after",
        "",
        f"{'peer':<22}{'shape':<34}{'jobs/s':>9}{'from start':>12}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'hammerweb/peer':>16}{'worker µs':>11}{'server µs':>11}",
    ]
    for result in results:
        name = f"{result['peer']} {result['version']}"
        figures = result["figures"] or {}
        if result["shape"] == "pickup":
            row = ["", "", _number(figures.get("p50_ms"), 1), _number(figures.get("p99_ms"), 1)]
        else:
            row = [
                _number(figures.get("jobs_per_second")),
                _number(figures.get("worker_jobs_per_second")),
                "",
                "",
            ]
        cpu = [_number(figures.get(f"{side}_cpu_us_per_job")) for side in ("worker", "server")]
        errors = result["errors"]
        failed = f"  FAILED {len(errors)}x: {errors[0]}" if errors else ""
        ratio = result.get("hammerweb_ratio")
        ratio = "" if ratio is None else f"{ratio:.2f}x"
        lines.append(
            f"{name:<22}{result['label']:<34}{row[0]:>9}{row[1]:>12}{row[2]:>9}{row[3]:>9}"
            f"{ratio:>16}{cpu[0]:>11}{cpu[1]:>11}{failed}"
        )
    lines += [
        "",
        "jobs/s: first job enqueued to last job finished; from start: worker start to "
        "last job finished; p50/p99: enqueue call to handler start, idle worker; "
        "hammerweb/peer: Hammerweb's jobs/s over the peer's (above 1: Hammerweb is "
        "faster), or Hammerweb's pickup p50 over the peer's (below 1: Hammerweb is "
        "sooner), same shape, same run; worker µs and server µs: CPU a job of the "
        "worker's processes and of the PostgreSQL server (its backends and the driver's "
        "polling), from the worker's start to its exit.",
    ]
    stores = {r["peer"]: r["results_stored"] for r in results if "results_stored" in r}
    for peer, text in stores.items():
        lines.append(f"results of the dict handler, {peer}: {text}")
    seen = set()
    for result in results:
        if result["peer"] in seen:
            continue
        seen.add(result["peer"])
        pairs = ", ".join(f"{key}={value}" for key, value in result["settings"].items())
        lines.append(f"{result['peer']} settings: {pairs}")
    return "\n".join(lines)
