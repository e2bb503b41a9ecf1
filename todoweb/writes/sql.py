"""The tool endpoint's queries, written out in SQL (and the webhook deliveries its
writes make).

Every tool call runs these. The ORM builds and compiles a query anew on each call:
on the 2-core machines todoweb is measured on, compiling the session read (a join
with the parent and the earlier call with the same key) takes 2.4 ms and running it
0.13 ms. Here the SQL is built once; each column is converted as its field would
convert it (dates, JSON, booleans) and the rows come back as ordinary model
instances. Everything else reads and writes through the ORM.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import orjson
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import JSONField
from psycopg.types.json import Jsonb

from todoweb.fields import Serialised
from todoweb.models import ApiToken, Project, Revision, Session


def columns(model: Any, alias: str, names: list[str]) -> str:
    """`alias.column AS alias_attname, …` for these fields of `model`."""
    fields = [model._meta.get_field(name) for name in names]
    return ", ".join(f"{alias}.{connection.ops.quote_name(f.column)} AS {alias}_{f.attname}" for f in fields)


def in_field_order(model: Any, names: set[str]) -> list[str]:
    # `Model.from_db` fills a partial row's fields in the model's order.
    return [field.attname for field in model._meta.concrete_fields if field.attname in names]


# What authentication needs of a token (the rest stays deferred) and of its project.
TOKEN_FIELDS = in_field_order(ApiToken, {"id", "project_id", "scope", "last_used_at", "revoked_at"})
PROJECT_FIELDS = in_field_order(
    Project,
    {"id", "slug", "name", "single_in_progress", "max_items", "max_content_chars", "reply_style", "webhook_version"},
)
TOKEN_SELECT = columns(ApiToken, "t", TOKEN_FIELDS) + ", " + columns(Project, "pr", PROJECT_FIELDS)
TOKEN_FROM = "todoweb_apitoken t JOIN todoweb_project pr ON pr.id = t.project_id"

# The session; its parent's public id; of its current revision, what a write builds
# on; and the earlier call with this idempotency key (the one parameter), if any.
SESSION_FIELDS = [field.attname for field in Session._meta.concrete_fields]
CURRENT_FIELDS = ["todos", "dropped", "dropped_count", "changes", "warnings", "author", "created_at"]
SESSION_SELECT = (
    columns(Session, "s", SESSION_FIELDS)
    + ", p.public_id AS parent_public_id, "
    + columns(Revision, "r", CURRENT_FIELDS)
    + ", k.fingerprint AS replay_fingerprint, k.response AS replay_response"
)
SESSION_JOINS = (
    " LEFT JOIN todoweb_session p ON p.id = s.parent_id"
    " LEFT JOIN todoweb_revision r ON r.session_id = s.id AND r.number = s.revision"
    " LEFT JOIN todoweb_revision k ON k.session_id = s.id AND k.idempotency_key = %s"
)

TOKEN_SQL = f"SELECT {TOKEN_SELECT} FROM {TOKEN_FROM} WHERE t.digest = %s"
SESSION_SQL = f'SELECT {SESSION_SELECT} FROM todoweb_session s{SESSION_JOINS} WHERE s.project_id = %s AND s."key" = %s'
# The tool endpoint reads both at once: one round trip fewer per call.
TOKEN_AND_SESSION_SQL = (
    f"SELECT {TOKEN_SELECT}, {SESSION_SELECT} FROM {TOKEN_FROM}"
    ' LEFT JOIN todoweb_session s ON s.project_id = t.project_id AND s."key" = %s'
    f"{SESSION_JOINS} WHERE t.digest = %s"
)


@dataclass(frozen=True)
class Replay:
    """An earlier call with the same idempotency key: its body's fingerprint and the answer it got."""

    fingerprint: str
    response: dict[str, Any]


@dataclass
class SessionRow:
    """A session as a write finds it: the row, its current revision (None before the
    first write) and the earlier call with the write's idempotency key, if any."""

    session: Session
    current: Revision | None = None
    replay: Replay | None = None


def token_with_project(digest: str) -> ApiToken | None:
    row = fetch_row(TOKEN_SQL, [digest])
    return None if row is None else token_from(row)


def session_row(
    project: Project, key: str, *, idempotency_key: str | None, for_update: bool = False
) -> SessionRow | None:
    """The session `key` of the project as a write finds it (None: there is none yet);
    `for_update` locks its row until the transaction ends."""
    if for_update:
        lock_session(project, key)
    row = fetch_row(SESSION_SQL, [idempotency_key, project.pk, key])
    return None if row is None else session_from(row, project)


def token_and_session(
    digest: str, key: str, *, idempotency_key: str | None
) -> tuple[ApiToken | None, SessionRow | None]:
    """The token, and the session `key` of its project as `session_row` reads it
    (None if there is none), in one query."""
    row = fetch_row(TOKEN_AND_SESSION_SQL, [key, idempotency_key, digest])
    if row is None:
        return None, None
    token = token_from(row)
    return token, session_from(row, token.project) if row["s_id"] is not None else None


def fetch_row(sql: str, params: list[Any]) -> dict[str, Any] | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
        return None if row is None else dict(zip(column_names(sql), row, strict=True))


@cache
def column_names(sql: str) -> list[str]:
    """The names of the columns `sql` selects (each written `… AS name`): the
    cursor's description would build them anew on every call."""
    select = sql.split(" FROM ", 1)[0].removeprefix("SELECT ")
    return [column.rsplit(" AS ", 1)[-1].strip() for column in select.split(", ")]


def model_from(model: Any, alias: str, names: list[str], row: dict[str, Any]) -> Any:
    db = this_thread_connection()
    values = [from_db(model, name, row[f"{alias}_{name}"], db) for name in names]
    return model.from_db(db.alias, names, values)


def token_from(row: dict[str, Any]) -> ApiToken:
    token = model_from(ApiToken, "t", TOKEN_FIELDS, row)
    token.project = model_from(Project, "pr", PROJECT_FIELDS, row)
    return token


def session_from(row: dict[str, Any], project: Project) -> SessionRow:
    db = this_thread_connection()
    session = model_from(Session, "s", SESSION_FIELDS, row)
    session.project = project
    if session.parent_id is not None:
        session.parent = Session(pk=session.parent_id, public_id=row["parent_public_id"], project=project)
    replay = None
    if row["replay_fingerprint"] is not None:
        replay = Replay(row["replay_fingerprint"], from_db(Revision, "response", row["replay_response"], db))
    current = None
    if session.revision:
        values = {name: from_db(Revision, name, row[f"r_{name}"], db) for name in CURRENT_FIELDS}
        current = Revision(session=session, number=session.revision, **values)
    return SessionRow(session, current, replay)


def lock_session(project: Project, key: str) -> None:
    """Lock the session's row until the transaction ends. A statement of its own: on
    PostgreSQL a locking read that waited re-reads the locked row only, not the rows
    joined to it, so the session read follows the lock rather than taking it."""
    if connection.features.has_select_for_update:
        with connection.cursor() as cursor:
            cursor.execute(
                'SELECT 1 FROM todoweb_session WHERE project_id = %s AND "key" = %s FOR UPDATE', [project.pk, key]
            )


def from_db(model: Any, name: str, value: Any, db: BaseDatabaseWrapper) -> Any:
    """A value read as an extra column, converted as the field would convert it (on
    the connection `db`)."""
    if value is None:
        return None
    column, converters = column_converters(model, name)
    for converter in converters:
        value = converter(value, column, db)
    return value


@cache
def column_converters(model: Any, name: str) -> tuple[Any, list[Any]]:
    """The column expression and converters the ORM would apply to a field's values."""
    field = model._meta.get_field(name)
    column = field.get_col(model._meta.db_table)
    return column, connection.ops.get_db_converters(column) + field.get_db_converters(connection)


def this_thread_connection() -> BaseDatabaseWrapper:
    """The connection itself: `django.db.connection` looks it up again on every
    attribute read (a context-local lookup), which adds up over a row's fields."""
    return connections[DEFAULT_DB_ALIAS]


def db_value(field: Any, value: Any, db: BaseDatabaseWrapper) -> Any:
    """`value` as the database takes it for `field` (on the connection `db`)."""
    if not isinstance(field, JSONField) or value is None:
        return field.get_db_prep_save(value, db)
    if not isinstance(value, Serialised):
        try:
            value = Serialised(orjson.dumps(value).decode())
        except orjson.JSONEncodeError:
            # An integer beyond 64 bits or a lone surrogate: Django's json.dumps.
            return field.get_db_prep_save(value, db)
    # Django's JSON adaptation without its json.dumps: Jsonb on PostgreSQL, text on SQLite.
    return Jsonb(value, dumps=str) if db.vendor == "postgresql" else str(value)


def session_update(session: Session, changed: dict[str, Any], number: int, told: int) -> tuple[str, list[Any]]:
    """The UPDATE that moves the session from revision `number` - 1 to `number`,
    setting the fields `changed`, and its values. `told` is the last of people's
    messages the agent was told of, as the writer read it: a call that told the agent
    meanwhile makes the write start over, so that a message is told once."""
    meta, quote = Session._meta, connection.ops.quote_name
    sets = [(meta.get_field(name), value) for name, value in changed.items()]
    sql = (
        f"UPDATE {meta.db_table} SET "
        + ", ".join(f"{quote(field.column)} = %s" for field, _ in sets)
        + " WHERE id = %s AND revision = %s AND told_message = %s"
    )
    db = this_thread_connection()
    return sql, [db_value(field, value, db) for field, value in sets] + [session.pk, number - 1, told]


def advance(session: Session, changed: dict[str, Any], number: int, told: int) -> bool:
    """Move the session to revision `number`; False (nothing written) when it is no
    longer as the writer read it."""
    sql, values = session_update(session, changed, number, told)
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        return cursor.rowcount == 1


def advance_and_insert(session: Session, changed: dict[str, Any], revision: Revision, told: int) -> bool:
    """PostgreSQL: `advance` and insert revision N in one statement, so a write is
    atomic without a transaction and costs one round trip. False (nothing written)
    when the session is no longer as the writer read it."""
    update, values = session_update(session, changed, revision.number, told)
    meta, quote = revision._meta, connection.ops.quote_name
    fields = [field for field in meta.concrete_fields if not field.primary_key]
    sql = (
        f"WITH moved AS ({update} RETURNING id)"
        + f" INSERT INTO {meta.db_table} ({', '.join(quote(field.column) for field in fields)})"
        + " SELECT "
        + ", ".join("moved.id" if field.attname == "session_id" else "%s" for field in fields)
        + " FROM moved"
    )
    db = this_thread_connection()
    values += [
        db_value(field, getattr(revision, field.attname), db) for field in fields if field.attname != "session_id"
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        return cursor.rowcount == 1


def insert(*instances: Any) -> None:
    """INSERT a new row for each of `instances` (of one model) in one statement, their
    primary keys left to the database (and not read back: nothing refers to a revision
    or a new delivery by its id)."""
    db = this_thread_connection()
    statement, fields = insert_statement(type(instances[0]), len(instances), db.vendor)
    values = [db_value(field, getattr(instance, field.attname), db) for instance in instances for field in fields]
    with db.cursor() as cursor:
        cursor.execute(statement, values)


def insert_rows(model: Any, rows: list[dict[str, Any]]) -> None:
    """`insert` without making the instances: each row a dict of field attribute names
    to values, the fields a row leaves out taking their defaults."""
    db = this_thread_connection()
    statement, fields = insert_statement(model, len(rows), db.vendor)
    fixed = fixed_defaults(model, db.vendor)
    values = [
        db_value(field, row[field.attname], db)
        if field.attname in row
        else fixed[field.attname]
        if field.attname in fixed
        else db_value(field, field.get_default(), db)
        for row in rows
        for field in fields
    ]
    with db.cursor() as cursor:
        cursor.execute(statement, values)


@cache
def fixed_defaults(model: Any, vendor: str) -> dict[str, Any]:
    """The database values of the model's defaults that are not made anew each time."""
    db = this_thread_connection()
    return {
        field.attname: db_value(field, field.get_default(), db)
        for field in model._meta.concrete_fields
        if not field.primary_key and not (field.has_default() and callable(field.default))
    }


@cache
def insert_statement(model: Any, rows: int, vendor: str) -> tuple[str, list[Any]]:
    """The INSERT of `rows` new rows of `model`, and the fields of each row's values in order."""
    meta = model._meta
    fields = [field for field in meta.concrete_fields if not field.primary_key]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    return f"INSERT INTO {meta.db_table} ({columns}) VALUES {', '.join([row] * rows)}", fields
