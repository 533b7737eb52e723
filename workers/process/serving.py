"""What `runworker` serves beside its work: the probes of `--metrics-port` and
`--health-port` (workers/process/probes.py), started before the workers and stopped after
them; with `--processes N`, child i serves on PORT+i."""

from __future__ import annotations

from contextlib import ExitStack, contextmanager

from django.core.management.base import CommandError

from workers import metrics
from workers.process.probes import ProbeServer, ProcessHealth, metrics_answer

PORT_OPTIONS = ("metrics_port", "health_port")


def check_port_range(options) -> None:
    """With --processes N, child i serves on PORT+i: the last must be a port too."""
    for name in PORT_OPTIONS:
        if options[name] and options[name][1] + options["processes"] - 1 > 65535:
            raise CommandError(
                f"--{name.replace('_', '-')} {options[name][1]} with --processes "
                f"{options['processes']}: child ports would pass 65535"
            )


@contextmanager
def serving_probes(options, runtime):
    """Serve the asked-for probes of `runtime` while the block runs."""
    with ExitStack() as stack:
        if options["metrics_port"]:
            collector = metrics.watch(runtime.workers)
            stack.callback(metrics.unwatch, collector)
            stack.callback(_serve("metrics", options["metrics_port"], metrics_answer).stop)
        if options["health_port"]:
            health = ProcessHealth(runtime.workers, options["database"])
            stack.callback(_serve("health", options["health_port"], health.answer).stop)
        yield


def _serve(what: str, where: tuple[str, int], answer) -> ProbeServer:
    try:
        return ProbeServer(what, where, answer).start()
    except OSError as exc:
        host, port = where
        raise CommandError(f"cannot serve {what} on {host or '*'}:{port}: {exc}") from exc
