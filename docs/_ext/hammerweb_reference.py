"""Reference sections generated from the code, so that they cannot drift from it:

- ``{management-commands}``: every management command of the apps it names (default
  ``queues workers``), each option read from the command's own argparse parser
  (``Command().create_parser("manage.py", name)``), subcommands included;
- ``{hammerweb-settings}``: every key of the ``HAMMERWEB`` setting (``queues.conf.OPTIONS``);
- ``{prometheus-metrics} worker`` or ``queues``: every metric that ``runworker
  --metrics-port`` or the ``/metrics/`` view serves, read from the metrics themselves and
  from their collectors' output (over no queues: the build needs no database).
"""

from __future__ import annotations

import argparse

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

#: Django's options of every command, listed once on the page rather than under each command.
DJANGO_OPTIONS = {
    "help",
    "version",
    "verbosity",
    "settings",
    "pythonpath",
    "traceback",
    "no_color",
    "force_color",
    "skip_checks",
}


def _paragraph(text: str) -> nodes.paragraph:
    return nodes.paragraph(text, text)


def _definitions(items) -> nodes.definition_list:
    """A definition list of (term, [body nodes]) pairs; terms are shown as code."""
    listing = nodes.definition_list()
    for term, body in items:
        item = nodes.definition_list_item()
        item += nodes.term("", "", nodes.literal(term, term))
        definition = nodes.definition()
        definition.extend(body)
        item += definition
        listing += item
    return listing


def _section(directive: SphinxDirective, title: str, slug: str) -> nodes.section:
    section = nodes.section(ids=[nodes.make_id(slug)])
    section += nodes.title(title, "", nodes.literal(title, title))
    directive.state.document.note_implicit_target(section)
    return section


def _option_term(action: argparse.Action) -> str:
    if not action.option_strings:
        return action.metavar or action.dest.upper()
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    metavar = action.metavar or action.dest.upper()
    return ", ".join(f"{option} {metavar}" for option in action.option_strings)


def _option_body(action: argparse.Action) -> list[nodes.Node]:
    text = (action.help or "").replace("%%", "%")
    if "%(default)" in text:
        text = text.replace("%(default)s", str(action.default))
    elif (
        action.option_strings
        and action.nargs != 0
        and action.default not in (None, [], "", argparse.SUPPRESS)
    ):
        text = f"{text} (default: {action.default})".strip()
    return [_paragraph(text)] if text else []


def _parser_nodes(directive, parser: argparse.ArgumentParser, title: str) -> nodes.section:
    section = _section(directive, title, f"command-{title}")
    if parser.description:
        section += _paragraph(parser.description)
    usage = parser.format_usage().strip()
    section += nodes.literal_block(usage, usage, language="text")
    options, subcommands = [], []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            subcommands.extend((name, sub, helps.get(name)) for name, sub in action.choices.items())
        elif action.dest not in DJANGO_OPTIONS and action.help != argparse.SUPPRESS:
            options.append((_option_term(action), _option_body(action)))
    if options:
        section += _definitions(options)
    for name, sub, help_text in subcommands:
        child = _parser_nodes(directive, sub, f"{title} {name}")
        if help_text and not sub.description:
            child.insert(1, _paragraph(help_text[0].upper() + help_text[1:] + "."))
        section += child
    return section


class ManagementCommands(SphinxDirective):
    optional_arguments = 10

    def run(self):
        from django.core.management import get_commands, load_command_class

        apps = self.arguments or ["queues", "workers"]
        found = sorted(
            (name, app) for name, app in get_commands().items() if app.split(".")[-1] in apps
        )
        result = []
        for name, app in found:
            command = load_command_class(app, name)
            parser = command.create_parser("manage.py", name)
            section = _parser_nodes(self, parser, name)
            if command.help and not parser.description:
                section.insert(1, _paragraph(command.help))
            result.append(section)
        return result


class HammerwebSettings(SphinxDirective):
    def run(self):
        from queues import conf

        items = []
        for name, option in sorted(conf.OPTIONS.items()):
            kind = f"type {option.kind.__name__}, default {option.default!r}"
            items.append(
                (
                    name,
                    [_paragraph(kind), _paragraph(option.help[0].upper() + option.help[1:] + ".")],
                )
            )
        return [_definitions(items)]


def _worker_families():
    from prometheus_client.metrics import MetricWrapperBase

    from workers import metrics

    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            (family,) = value.describe()
            yield family.name, family.type, list(value._labelnames), family.documentation
    for family in metrics.RuntimeCollector([]).collect():
        yield family.name, family.type, list(family._labelnames), family.documentation


def _queue_families():
    """The collector's own families, over no queues and no worker processes: its reads
    are stood in for, so that the build needs no database."""
    from unittest import mock

    from queues.ops import metrics

    with (
        mock.patch.object(metrics, "counts_by_queue", lambda using: {}),
        mock.patch.object(metrics, "WorkerProcess"),  # a MagicMock: its rows iterate as none
    ):
        families = list(metrics.QueueCollector().collect())
    for family in families:
        labels = list(getattr(family, "_labelnames", []))
        yield family.name, family.type, labels, family.documentation


#: The series a metric of each type is exposed as.
EXPOSED = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_sum", "_count"),
    "gauge": ("",),
}


class PrometheusMetrics(SphinxDirective):
    required_arguments = 1

    def run(self):
        source = {"worker": _worker_families, "queues": _queue_families}[self.arguments[0]]
        items = []
        for name, kind, labels, documentation in source():
            exposed = ", ".join(name + suffix for suffix in EXPOSED[kind])
            what = f"{kind}; labels: {', '.join(labels) or 'none'}; exposed as {exposed}"
            items.append((name, [_paragraph(documentation + "."), _paragraph(what)]))
        return [_definitions(items)]


def setup(app):
    app.add_directive("management-commands", ManagementCommands)
    app.add_directive("hammerweb-settings", HammerwebSettings)
    app.add_directive("prometheus-metrics", PrometheusMetrics)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
