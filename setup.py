"""What the wheel carries, beside pyproject.toml's metadata: the `queues` and `workers` apps
with their SQL catalogue and migrations, and the dashboard's templates and static files.

Those two live at the repository's top level (`templates/`, `static/`: the project's layout)
and are shipped as the `queues` app's `templates/` and `static/` folders, where Django's app
template loader (APP_DIRS) and the app static files finder look, with no copy kept by hand:
`package_dir` maps the packages `queues.templates` and `queues.static` (and their
subfolders) onto those folders. The project itself (`hammerweb`: settings, the measurement
commands), the demo and the tests stay out of the wheel.
"""

from __future__ import annotations

from setuptools import find_namespace_packages, find_packages, setup

APPS = ["queues", "workers"]
#: Package -> the repository folder that holds its files.
DATA = {"queues.templates": "templates", "queues.static": "static"}


def data_packages():
    for package, folder in DATA.items():
        yield package
        yield from (f"{package}.{sub}" for sub in find_namespace_packages(where=folder))


setup(
    packages=[*find_packages(include=[name for app in APPS for name in (app, f"{app}.*")]),
              *data_packages()],
    package_dir=DATA,
    package_data={
        "queues.store.catalogue": ["*.sql"],
        **{package: ["**/*"] for package in DATA},
    },
    exclude_package_data={"": ["__pycache__/*", "*.pyc"]},
)
