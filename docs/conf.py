"""Sphinx configuration of Hammerweb's manual: MyST Markdown pages, the furo theme, the
reference generated from the code (autodoc, and docs/_ext/ for the commands, settings and
metrics). Built by `make docs` with -W --keep-going and nitpicky references, offline."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "docs" / "_ext")]

# Autodoc imports the apps, so Django is set up first: the project's settings, on a SQLite
# database in memory that nothing reads, whatever the environment it is built in.
os.environ["DJANGO_SETTINGS_MODULE"] = "hammerweb.settings"
os.environ["DATABASE_URL"] = "sqlite://:memory:"
os.environ.setdefault("DJANGO_SECRET_KEY", "docs-build-only")
for name in ("HAMMERWEB_DEMO", "HAMMERWEB_MEASURE", "DJANGO_DEBUG"):
    os.environ.pop(name, None)

import django  # noqa: E402

django.setup()

project = "Hammerweb"
author = "Hammerweb's authors"
copyright = "Hammerweb's authors"  # noqa: A001

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "hammerweb_reference",
]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

html_theme = "furo"
html_title = "Hammerweb"
html_static_path = ["_static"]

# Every reference must resolve: a broken link or an unknown name fails the build.
nitpicky = True
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
suppress_warnings = ["myst.header"]
# Option names and help texts hold "--": keep them as they are typed, not as dashes.
smartquotes = False

# Targets outside this project that no inventory resolves offline (intersphinx would
# download them): Python's and Django's own classes and what type hints spell.
nitpick_ignore_regex = [
    ("py:.*", r"(datetime|uuid|collections|typing|enum|threading|asyncio|decimal|pathlib)\..*"),
    ("py:.*", r"(django|prometheus_client|croniter|channels|asgiref)\..*"),
    ("py:.*", r"(UUID|datetime|timedelta|date|tzinfo|Decimal|Path|Enum|StrEnum|IntEnum)"),
    ("py:.*", r"(Any|Callable|Iterable|Iterator|Sequence|Mapping|Self|Literal|Optional)"),
    ("py:.*", r"(object|int|str|float|bool|bytes|dict|list|set|tuple|type|None|NoneType)"),
    ("py:.*", r"(ValueError|Exception|KeyError|LookupError|RuntimeError|TypeError|BaseException)"),
    ("py:.*", r"(random|_thread)\..*"),
    ("py:.*", r"(dict|list|set|tuple)\[.*"),
    ("py:.*", r"'.*"),  # a string annotation that autodoc leaves as it is written
    # Hammerweb's own classes that are not public (the API names them in signatures and
    # bases, the reference documents only what queues.api and workers.api export).
    ("py:.*", r"(queues|workers)\.(engine|models|store|retry|reads|ops|runtime|process)\..*"),
]
