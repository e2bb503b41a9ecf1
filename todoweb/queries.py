"""The tool endpoint's queries, written out in SQL.

Every tool call runs these. The ORM builds and compiles a query anew on each call:
on the 2-core machines todoweb is measured on, compiling the session read (a join
with the parent and the earlier call with the same key) takes 2.4 ms and running it
0.13 ms. `Model.objects.raw()` skips the compiling and still converts each column
as its field would (dates, JSON), so the rows come back as ordinary model instances.
Everything else reads and writes through the ORM.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import connection
from psycopg.types.json import Jsonb

from .models import ApiToken, Project, Revision, Session

# In the model's field order: `Model.from_db` fills a partial row's fields in that order.
PROJECT_FIELDS = [
    field.attname
    for field in Project._meta.concrete_fields
    if field.attname in {"id", "slug", "name", "single_in_progress", "max_items", "max_content_chars", "reply_style"}
]

# What authentication needs of a token (the rest stays deferred) and of its project.
TOKEN_SQL = (
    "SELECT t.id, t.project_id, t.scope, t.last_used_at, t.revoked_at, "
    + ", ".join(f"p.{name} AS project_{name}" for name in PROJECT_FIELDS)
    + " FROM todoweb_apitoken t JOIN todoweb_project p ON p.id = t.project_id WHERE t.digest = %s"
)

# The session; its parent's public id; of its current revision, what a write builds
# on; and the earlier call with this idempotency key, if any.
CURRENT_FIELDS = ["todos", "dropped", "changes", "warnings", "author", "created_at"]
SESSION_SQL = (
    "SELECT s.*, p.public_id AS parent_public_id, "
    + ", ".join(f"r.{name} AS current_{name}" for name in CURRENT_FIELDS)
    + ", k.fingerprint AS replay_fingerprint, k.response AS replay_response"
    " FROM todoweb_session s"
    " LEFT JOIN todoweb_session p ON p.id = s.parent_id"
    " LEFT JOIN todoweb_revision r ON r.session_id = s.id AND r.number = s.revision"
    " LEFT JOIN todoweb_revision k ON k.session_id = s.id AND k.idempotency_key = %s"
    ' WHERE s.project_id = %s AND s."key" = %s'
)


def token_with_project(digest: str) -> ApiToken | None:
    token = next(iter(ApiToken.objects.raw(TOKEN_SQL, [digest])), None)
    if token is not None:
        values = [getattr(token, f"project_{name}") for name in PROJECT_FIELDS]
        token.project = Project.from_db(connection.alias, PROJECT_FIELDS, values)
    return token


def session_for_call(project: Project, key: str, *, idempotency_key: str | None, for_update: bool) -> Session | None:
    """The session a call names, with `replay_fingerprint` and `replay_response` (the
    earlier call with the same key, or None) and `current` (its current revision)."""
    if for_update:
        lock_session(project, key)
    session = next(iter(Session.objects.raw(SESSION_SQL, [idempotency_key, project.pk, key])), None)
    if session is None:
        return None
    session.project = project
    if session.parent_id is not None:
        session.parent = Session(pk=session.parent_id, public_id=session.parent_public_id, project=project)
    session.replay_response = from_db(Revision, "response", session.replay_response)
    session.current = None
    if session.revision:
        values = {name: from_db(Revision, name, getattr(session, f"current_{name}")) for name in CURRENT_FIELDS}
        session.current = Revision(session=session, number=session.revision, **values)
    return session


def lock_session(project: Project, key: str) -> None:
    """Lock the session's row until the transaction ends. A statement of its own: on
    PostgreSQL a locking read that waited re-reads the locked row only, not the rows
    joined to it, so the session read follows the lock rather than taking it."""
    if connection.features.has_select_for_update:
        with connection.cursor() as cursor:
            cursor.execute(
                'SELECT 1 FROM todoweb_session WHERE project_id = %s AND "key" = %s FOR UPDATE', [project.pk, key]
            )


def from_db(model: Any, name: str, value: Any) -> Any:
    """A value read as an extra column, converted as the field would convert it."""
    if value is None:
        return None
    column, converters = column_converters(model, name)
    for converter in converters:
        value = converter(value, column, connection)
    return value


@cache
def column_converters(model: Any, name: str) -> tuple[Any, list[Any]]:
    """The column expression and converters the ORM would apply to a field's values."""
    field = model._meta.get_field(name)
    column = field.get_col(model._meta.db_table)
    return column, connection.ops.get_db_converters(column) + field.get_db_converters(connection)


class Serialised(str):
    """JSON text serialised already (answers.py): a JSON field stores it as it is."""


def db_value(field: Any, value: Any) -> Any:
    if isinstance(value, Serialised):
        # Django's JSON adaptation without its json.dumps: Jsonb on PostgreSQL, text on SQLite.
        return Jsonb(value, dumps=str) if connection.vendor == "postgresql" else str(value)
    return field.get_db_prep_save(value, connection)


def advance_and_insert(session: Session, changed: dict[str, Any], revision: Revision) -> bool:
    """PostgreSQL: move the session from revision N-1 to N and insert revision N in
    one statement, so a write is atomic without a transaction and costs one round
    trip. False (nothing written) when the session is no longer at N-1."""
    session_meta, meta = Session._meta, revision._meta
    quote = connection.ops.quote_name
    sets = [(session_meta.get_field(name), value) for name, value in changed.items()]
    fields = [field for field in meta.concrete_fields if not field.primary_key]
    sql = (
        f"WITH moved AS (UPDATE {session_meta.db_table} SET "
        + ", ".join(f"{quote(field.column)} = %s" for field, _ in sets)
        + " WHERE id = %s AND revision = %s RETURNING id)"
        + f" INSERT INTO {meta.db_table} ({', '.join(quote(field.column) for field in fields)})"
        + " SELECT "
        + ", ".join("moved.id" if field.attname == "session_id" else "%s" for field in fields)
        + " FROM moved"
    )
    values = [db_value(field, value) for field, value in sets] + [session.pk, revision.number - 1]
    values += [db_value(field, getattr(revision, field.attname)) for field in fields if field.attname != "session_id"]
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        return cursor.rowcount == 1


def insert(instance: Any) -> None:
    """INSERT a new row for `instance`, its primary key left to the database (and not
    read back: nothing refers to a revision by its id)."""
    meta = instance._meta
    fields = [field for field in meta.concrete_fields if not field.primary_key]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    values = [db_value(field, getattr(instance, field.attname)) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {meta.db_table} ({columns}) VALUES ({placeholders})", values)
