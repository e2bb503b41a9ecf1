"""The housekeeping recipes of docs/operations.md, run as they are written: the daily
prune's cron line with its settings file, and the backups of PostgreSQL and SQLite.
Only the paths become this test's own."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import psycopg

from tests.servers import ROOT, SECRET_KEY, base_env, manage

OPERATIONS = (ROOT / "docs" / "operations.md").read_text()

# An archived session, long past any retention: what a prune deletes.
MAKE_OLD_ARCHIVED_SESSION = (
    "from datetime import timedelta; from django.utils import timezone;"
    " from todoweb.models import Project, Session;"
    " project = Project.objects.create(slug='ops', name='ops');"
    " Session.objects.create(project=project, key='old', archived_at=timezone.now() - timedelta(days=400))"
)


def documented(prefix: str) -> str:
    """The one line of docs/operations.md that starts with `prefix`."""
    [line] = [line for line in OPERATIONS.splitlines() if line.startswith(prefix)]
    return line


def sessions(env: dict[str, str]) -> str:
    code = "from todoweb.models import Session; print(sorted(Session.objects.values_list('key', flat=True)))"
    return manage(env, "shell", "-c", code).strip().splitlines()[-1]  # after the shell's own notice


def test_the_cron_line_prunes_the_database_its_settings_file_names(tmp_path):
    database = tmp_path / "todoweb.sqlite3"
    settings_file = tmp_path / "todoweb.env"
    settings_file.write_text(f"DATABASE_URL=sqlite:///{database}\nSECRET_KEY={SECRET_KEY}\n")
    env = base_env(DATABASE_URL=f"sqlite:///{database}")
    manage(env, "migrate")
    manage(env, "shell", "-c", MAKE_OLD_ARCHIVED_SESSION)
    assert sessions(env) == "['old']"

    command = documented("0 4 * * * ").split(" ", 5)[5]  # after the five fields of the schedule
    command = command.replace("/srv/todoweb", str(ROOT)).replace("/etc/todoweb.env", str(settings_file))
    # cron's environment: a PATH and a HOME, none of todoweb's settings.
    bare = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    result = subprocess.run(["sh", "-c", command], env=bare, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Deleted 1 archived sessions" in result.stdout
    assert sessions(env) == "[]"


def test_the_postgresql_backup_restores_into_an_empty_database(postgres_url, tmp_path):
    env = base_env(DATABASE_URL=postgres_url)
    manage(env, "migrate")
    manage(env, "shell", "-c", MAKE_OLD_ARCHIVED_SESSION)
    dump, restore = documented("pg_dump "), documented("pg_restore ")
    run = {"cwd": tmp_path, "env": env | {"DATABASE_URL": postgres_url}, "timeout": 120}
    assert subprocess.run(["sh", "-c", dump], **run).returncode == 0
    assert (tmp_path / "todoweb.dump").stat().st_size > 0

    base, name = postgres_url.rsplit("/", 1)
    empty, admin = f"{base}/{name}_restored", f"{base}/postgres"
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}_restored"')
    try:
        restored = subprocess.run(["sh", "-c", restore], **(run | {"env": env | {"DATABASE_URL": empty}}))
        assert restored.returncode == 0
        assert sessions(env | {"DATABASE_URL": empty}) == "['old']"
    finally:
        with psycopg.connect(admin, autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{name}_restored" WITH (FORCE)')


def test_the_sqlite_backup_is_a_whole_copy_while_the_database_is_open(tmp_path):
    database = tmp_path / "db.sqlite3"
    env = base_env(DATABASE_URL=f"sqlite:///{database}")
    manage(env, "migrate")
    manage(env, "shell", "-c", MAKE_OLD_ARCHIVED_SESSION)
    # A connection holding the database open in WAL mode, as a serving process does.
    with sqlite3.connect(database) as holder:
        assert holder.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        backup = subprocess.run(["sh", "-c", documented("sqlite3 db.sqlite3 ")], cwd=tmp_path, timeout=60)
        assert backup.returncode == 0
    copy = Path(tmp_path / "todoweb-backup.sqlite3")
    assert sessions(env | {"DATABASE_URL": f"sqlite:///{copy}"}) == "['old']"
