"""What may import what (docs/architecture.md), read from the source: every ``import`` and
``from … import`` of every module of the project's apps, at module level or inside a function
(an import inside a function is a dependency all the same, only a later one)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Each app of the project and the apps it may import. ``comments`` is the core: it reaches the
# others only through its hooks (comments/hooks.py), which they register with; ``config`` is
# the composition root (settings, URLs, the Celery app), which the core's health check asks
# for the Celery app.
ALLOWED = {
    "config": {"comments", "likes", "moderation"},
    "comments": {"config"},
    "likes": {"comments"},
    "moderation": {"comments", "likes"},
    "demo": {"comments", "likes", "moderation"},
    "portability": {"comments", "likes", "moderation"},
    "notifications": {"comments", "likes", "moderation"},
    "webhooks": {"comments", "likes", "moderation"},
    "feeds": {"comments"},
    "accounts": {"comments"},
}
# Modules of one app that another app may import beyond its allowance's app level: moderation
# keeps its queue of second checks, and notifications its stream of events, on the like state's
# Redis, through likes.live.
NARROW = {
    ("moderation", "likes"): {"likes.live"},
    ("notifications", "likes"): {"likes.live"},
    ("webhooks", "likes"): {"likes.live"},
}


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
    """``{app: {imported app: {modules of it named}}}`` over every app's modules but migrations."""
    graph: dict[str, dict[str, set[str]]] = {}
    for app in ALLOWED:
        uses = graph.setdefault(app, {})
        for path in (REPO / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for name in _imports(path):
                top = name.split(".")[0]
                if top in ALLOWED and top != app:
                    uses.setdefault(top, set()).add(name)
    return graph


def test_every_app_is_declared():
    apps = {p.parent.name for p in REPO.glob("*/apps.py")} | {"config"}
    assert apps == set(ALLOWED)


def test_apps_import_only_what_they_may():
    graph = _app_imports()
    for app, uses in graph.items():
        assert set(uses) <= ALLOWED[app], f"{app} imports {sorted(set(uses) - ALLOWED[app])}"
        for used, names in uses.items():
            narrow = NARROW.get((app, used))
            if narrow is not None:
                modules = {n for n in names if n in narrow or n.rpartition(".")[0] in narrow}
                assert names <= modules | {used}, f"{app} imports {sorted(names - modules - {used})} of {used}"


def test_the_core_reaches_no_feature_app():
    assert set(_app_imports()["comments"]) <= {"config"}


def test_the_cores_templates_name_no_feature_apps_template():
    # Feature apps add their parts to the widget's page through comments.hooks.WidgetPart.
    for path in (REPO / "templates" / "comments").glob("*.html"):
        named = re.findall(r"""{%\s*(?:include|extends)\s+["']([^"'/]+)/""", path.read_text(encoding="utf-8"))
        assert set(named) <= {"comments"}, (path.name, named)


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
    assert {app: cycles for app in ALLOWED if (cycles := _module_cycles(app))} == {}


def test_subjects_are_made_by_the_core_service_alone():
    """Every subject has its key's row, the key it is found by (``comment_subject_key``):
    ``comments.services.subjects_create`` makes both, and no other code of the project (apps,
    benchmarks, tests) makes a subject's row by the model's manager."""
    makers = {"create", "bulk_create", "get_or_create", "update_or_create"}
    found = []
    for top in sorted(p for p in REPO.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for path in top.rglob("*.py"):
            if "migrations" in path.parts or path == REPO / "comments" / "services.py":
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
