"""todoweb's packages are layers: each imports only those below it (imports inside
functions count), with `serve/` on top (below only the application that assembles it,
and the commands) and `store/` at the bottom. A change that imports back up a layer
fails here, naming the import. (The server loads the application by its settings
name, so it imports none of what it serves.)"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "todoweb"

# Top to bottom. A room may import the rooms after it in this list, never one before
# it. Rooms on one line import each other's names through neither direction.
LAYERS = [
    ["management", "admin", "apps", "templatetags"],
    ["asgi"],
    ["serve"],
    ["urls"],
    ["web"],
    ["writes"],
    ["webhooks"],
    ["live"],
    ["store"],
    ["reads"],
    ["dialects"],
    ["calls"],
    ["plan"],
    ["models"],
    ["settings"],
    ["fields", "fences", "logs", "redis_connections"],
]
RANK = {room: rank for rank, rooms in enumerate(LAYERS) for room in rooms}


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "todoweb" else None


def imports_of(path: Path) -> list[tuple[int, str]]:
    package = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name == "todoweb":
                found += [(node.lineno, f"todoweb.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, name))
    return found


def sources() -> list[Path]:
    return [path for path in ROOT.rglob("*.py") if "migrations" not in path.parts]


def test_it_knows_every_room():
    rooms = {path.relative_to(ROOT).parts[0].removesuffix(".py") for path in sources()} - {"__init__"}
    assert rooms - set(RANK) == set(), "a new package or module: give it its layer in LAYERS"


def test_it_imports_only_downwards():
    upward = []
    for path in sources():
        parts = path.relative_to(ROOT).parts
        here = parts[0].removesuffix(".py")
        if here == "__init__":
            continue
        for line, module in imports_of(path):
            there = room_of(module)
            if there is None or there == here:
                continue
            if RANK[there] <= RANK[here]:
                upward.append(f"{path.relative_to(ROOT.parent)}:{line} imports {module}")
    assert upward == []


def test_it_would_catch_an_import_back_up():
    # The check itself: serve/ named from store/ is what it exists to refuse.
    assert RANK["serve"] < RANK["store"]
    assert room_of("todoweb.serve.handlers") == "serve"
