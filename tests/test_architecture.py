"""What may import what (docs/architecture.md), read from the source: every ``import`` and
``from … import`` of every module of the project's apps, at module level or inside a function
(an import inside a function is a dependency all the same, only a later one)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# The infrastructure layer below the apps: the Redis link, the durable stream hand-offs, the read
# cache, replica routing, encoding, outbound HTTP and the Citus plan's checks. Every app may
# import it; it imports no app.
INFRA = "infra"

# Each app of the project and the apps it may import (besides ``infra``). ``comments`` is the
# core: it reaches the others only through its hooks (comments/hooks.py), which they register
# with; ``config`` is the composition root (settings, URLs, the Celery app).
ALLOWED = {
    "config": {"comments"},
    "comments": set(),
    "likes": {"comments"},
    "moderation": {"comments"},
    "demo": {"comments", "moderation"},
    "portability": {"comments", "likes", "moderation"},
    "notifications": {"comments", "moderation"},
    "webhooks": {"comments", "moderation"},
    "feeds": {"comments"},
    "accounts": {"comments"},
}
# Modules of one app that another app may import beyond its allowance's app level.
NARROW: dict[tuple[str, str], set[str]] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module named by the file's imports, made absolute."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module
            found.add(origin)
            found.update(f"{origin}.{alias.name}" for alias in node.names)
    return found


def _app_imports() -> dict[str, dict[str, set[str]]]:
    """``{app or infra: {imported app or infra: {modules of it named}}}`` over every module of
    the apps and the infrastructure layer but migrations."""
    graph: dict[str, dict[str, set[str]]] = {}
    for app in [*ALLOWED, INFRA]:
        uses = graph.setdefault(app, {})
        for path in (REPO / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for name in _imports(path):
                top = name.split(".")[0]
                if top in {*ALLOWED, INFRA} and top != app:
                    uses.setdefault(top, set()).add(name)
    return graph


def test_every_app_is_declared():
    apps = {p.parent.name for p in REPO.glob("*/apps.py")} | {"config"}
    assert apps == set(ALLOWED)


def test_the_infrastructure_layer_imports_no_app():
    assert _app_imports()[INFRA] == {}


def test_apps_import_only_what_they_may():
    graph = _app_imports()
    for app, uses in graph.items():
        if app == INFRA:
            continue
        allowed = ALLOWED[app] | {INFRA}
        assert set(uses) <= allowed, f"{app} imports {sorted(set(uses) - allowed)}"
        for used, names in uses.items():
            narrow = NARROW.get((app, used))
            if narrow is not None:
                modules = {n for n in names if n in narrow or n.rpartition(".")[0] in narrow}
                assert names <= modules | {used}, f"{app} imports {sorted(names - modules - {used})} of {used}"


def test_the_core_reaches_no_feature_app_nor_the_composition_root():
    assert set(_app_imports()["comments"]) <= {INFRA}


def test_no_app_imports_likes_for_infrastructure():
    """Streams, the state Redis and Lua scripts are infra's: the apps that hand work on through
    a stream (moderation, notifications, webhooks) do not depend on the likes app for it. The
    one app that imports likes uses its likes: portability imports, exports and erases them."""
    graph = _app_imports()
    assert {app for app, uses in graph.items() if "likes" in uses} == {"portability"}


def _module_cycles(app: str) -> list[list[str]]:
    """The cycles among ``app``'s own modules (imports inside functions included): a module
    that imports one that imports it back, however far round."""
    modules = {_module_name(path): path for path in (REPO / app).rglob("*.py") if "migrations" not in path.parts}
    edges = {
        name: {
            target
            for imported in _imports(path)
            for target in (imported, imported.rpartition(".")[0])  # ``from . import x`` names x or a name in .
            if target in modules and target != name and not name.startswith(target + ".") and target != app
        }
        for name, path in modules.items()
    }
    cycles, state = [], {}

    def visit(name, trail):
        state[name] = "open"
        for target in sorted(edges[name]):
            if state.get(target) == "open":
                cycles.append(trail[trail.index(target) :] + [target])
            elif target not in state:
                visit(target, trail + [target])
        state[name] = "done"

    for name in sorted(modules):
        if name not in state:
            visit(name, [name])
    return cycles


def test_no_app_has_an_import_cycle_among_its_modules():
    """Moderation had one (services -> tasks -> jobs -> services), hidden by imports inside
    functions: each of its modules depended on the others' import order."""
    assert {app: cycles for app in [*ALLOWED, INFRA] if (cycles := _module_cycles(app))} == {}


def test_subjects_are_made_by_the_core_service_alone():
    """Every subject has its key's row, the key it is found by (``comment_subject_key``):
    ``comments.services.subjects_create`` (``comments/services/sites.py``) makes both, and no
    other code of the project (apps, benchmarks, tests) makes a subject's row by the model's
    manager."""
    makers = {"create", "bulk_create", "get_or_create", "update_or_create"}
    found = []
    for top in sorted(p for p in REPO.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for path in top.rglob("*.py"):
            if "migrations" in path.parts or path == REPO / "comments" / "services" / "sites.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                call = node.func if isinstance(node, ast.Call) else None
                if (
                    isinstance(call, ast.Attribute)
                    and call.attr in makers
                    and isinstance(call.value, ast.Attribute)
                    and call.value.attr == "objects"
                    and isinstance(call.value.value, ast.Name)
                    and call.value.value.id == "Subject"
                ):
                    found.append(f"{path.relative_to(REPO)}:{call.lineno}")
    assert found == []


def test_sites_are_written_by_the_core_service_alone():
    """Every process keeps a cached copy of the sites it serves (``pagecache.site_changed``
    drops it): ``comments.services.site_store`` and ``site_delete`` write sites and drop it, and
    no other code of the apps, their commands and admin writes a site by the model's manager or
    its ``save()``/``delete()`` (tests make theirs through the factories)."""
    makers = {"create", "bulk_create", "get_or_create", "update_or_create", "update", "delete"}
    found = []
    for top in [*ALLOWED, INFRA]:
        for path in (REPO / top).rglob("*.py"):
            if "migrations" in path.parts or path == REPO / "comments" / "services" / "sites.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                call = node.func if isinstance(node, ast.Call) else None
                if not isinstance(call, ast.Attribute):
                    continue
                by_manager = (
                    call.attr in makers
                    and isinstance(call.value, ast.Attribute)
                    and call.value.attr == "objects"
                    and isinstance(call.value.value, ast.Name)
                    and call.value.value.id == "Site"
                )
                by_instance = (
                    call.attr in {"save", "delete"} and isinstance(call.value, ast.Name) and call.value.id == "site"
                )
                if by_manager or by_instance:
                    found.append(f"{path.relative_to(REPO)}:{call.lineno}")
    assert found == []


# A module past this many lines holds more than one concern: split it by concern, as
# comments/queries/ and comments/services/ are.
MODULE_LINES_MAX = 600


def test_no_module_of_an_app_or_infra_outgrows_one_concern():
    long = {
        str(path.relative_to(REPO)): lines
        for top in [*ALLOWED, INFRA]
        for path in (REPO / top).rglob("*.py")
        if "migrations" not in path.parts and (lines := len(path.read_text().splitlines())) > MODULE_LINES_MAX
    }
    assert long == {}
