"""The agents' write path in SQL: its reads and writes, built once, run on the
database's own cursor, and its rows turned into model instances directly (and the
webhook deliveries its writes make).

Every tool call and hook runs these. The ORM builds and compiles a query anew on each
call (on the 2-core machines todoweb is measured on, compiling the session read took
2.4 ms and running it 0.13 ms); Django's cursor wrapper rewrites each statement's
placeholders and wraps each call; `Model.from_db` runs every field through
`__init__`; `get_db_prep_save` goes through four layers per value. Here each statement
is written once per database, values are converted by each field's own converters
(looked up once), instances are made as `from_db` makes them without `__init__`, and
values are prepared for the database by a function per field. Everything else reads
and writes through the ORM.

While Django logs queries (tests that count them, DEBUG), statements go through its
cursor, so they are counted as any other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

import orjson
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import DateTimeField, JSONField, Model

from todoweb.fields import CompressedJSONField, Serialised
from todoweb.models import ApiToken, Project, Revision, Session


@dataclass(frozen=True)
class Part:
    """Some fields of a model, as a query selects them under a table alias."""

    model: type[Model]
    alias: str
    names: tuple[str, ...]  # attribute names, in the model's field order (as `from_db` wants them)

    @classmethod
    def of(cls, model: type[Model], alias: str, names: set[str] | None = None) -> Part:
        fields = [f.attname for f in model._meta.concrete_fields if names is None or f.attname in names]
        return cls(model, alias, tuple(fields))

    def select(self) -> str:
        quote = connection.ops.quote_name
        return ", ".join(f"{self.alias}.{quote(self.model._meta.get_field(name).column)}" for name in self.names)

    def instance(self, values: Sequence[Any], db: BaseDatabaseWrapper) -> Any:
        """The model instance of these values as read (converted as the ORM converts them)."""
        fields = dict(zip(self.names, values, strict=True))
        for name, convert in converters(self, db.vendor):
            if fields[name] is not None:
                fields[name] = convert(fields[name], db)
        return self.model.from_db(db.alias, self.names, [fields[name] for name in self.names])


@cache
def converters(part: Part, vendor: str) -> list[tuple[str, Callable[[Any, BaseDatabaseWrapper], Any]]]:
    """For the fields whose values need converting, how (the field's own converters)."""
    found = []
    for name in part.names:
        field = part.model._meta.get_field(name)
        column = field.get_col(part.model._meta.db_table)
        chain = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        if vendor == "sqlite" and isinstance(field, DateTimeField):
            chain = [sqlite_datetime]
        elif field in OWN_JSON and vendor == "sqlite":
            chain = [own_json]
        if chain:
            found.append((name, applying(chain, column)))
    return found


def applying(chain: list[Any], column: Any) -> Callable[[Any, BaseDatabaseWrapper], Any]:
    def convert(value: Any, db: BaseDatabaseWrapper) -> Any:
        for converter in chain:
            value = converter(value, column, db)
        return value

    return convert


def sqlite_datetime(value: Any, column: Any, db: BaseDatabaseWrapper) -> datetime:
    """SQLite's text for a date and time, as Django's converter reads it (UTC with
    USE_TZ), by the standard library's parser: Django's regular expression cost more."""
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    if settings.USE_TZ and moment.tzinfo is None:
        moment = moment.replace(tzinfo=db.timezone)
    return moment


# JSON fields of todoweb's own data (steps, their changes, warnings, the trend), which
# hold no integer beyond 64 bits (which orjson would read as a float).
OWN_JSON = frozenset(
    [
        Session._meta.get_field("trend"),
        Revision._meta.get_field("changes"),
        Revision._meta.get_field("dropped"),
        Revision._meta.get_field("warnings"),
    ]
)


def own_json(value: Any, column: Any, db: BaseDatabaseWrapper) -> Any:
    """The text of one of the OWN_JSON fields, read with orjson: as json reads it,
    4x faster."""
    return orjson.loads(value)


# What authentication needs of a token (the rest stays deferred) and of its project.
TOKEN = Part.of(ApiToken, "t", {"id", "project_id", "scope", "last_used_at", "revoked_at"})
PROJECT = Part.of(
    Project,
    "pr",
    {"id", "slug", "name", "single_in_progress", "max_items", "max_content_chars", "reply_style", "webhook_version"},
)
# The session; its parent's public id; of its current revision, what a write builds
# on; and the earlier call with this idempotency key (the one parameter), if any.
SESSION = Part.of(Session, "s")
CURRENT = Part.of(Revision, "r", {"todos", "dropped", "dropped_count", "changes", "warnings", "author", "created_at"})
REPLAY = Part.of(Revision, "k", {"fingerprint", "response"})

TOKEN_FROM = "todoweb_apitoken t JOIN todoweb_project pr ON pr.id = t.project_id"
# The session of the token's project by its key (the one parameter), if there is one.
TOKEN_SESSION = ' LEFT JOIN todoweb_session s ON s.project_id = t.project_id AND s."key" = %s'
SESSION_JOINS = (
    " LEFT JOIN todoweb_session p ON p.id = s.parent_id"
    " LEFT JOIN todoweb_revision r ON r.session_id = s.id AND r.number = s.revision"
    " LEFT JOIN todoweb_revision k ON k.session_id = s.id AND k.idempotency_key = %s"
)


@cache
def token_sql() -> str:
    return f"SELECT {TOKEN.select()}, {PROJECT.select()} FROM {TOKEN_FROM} WHERE t.digest = %s"


@cache
def session_sql() -> str:
    columns = f"{SESSION.select()}, p.public_id, {CURRENT.select()}, {REPLAY.select()}"
    return f'SELECT {columns} FROM todoweb_session s{SESSION_JOINS} WHERE s.project_id = %s AND s."key" = %s'


@cache
def token_and_session_sql() -> str:
    """Both at once: one round trip fewer per call."""
    columns = f"{TOKEN.select()}, {PROJECT.select()}, {SESSION.select()}, p.public_id, {CURRENT.select()}"
    return f"SELECT {columns}, {REPLAY.select()} FROM {TOKEN_FROM}{TOKEN_SESSION}{SESSION_JOINS} WHERE t.digest = %s"


@cache
def token_and_untold_sql() -> str:
    """The token, and whether people told the session's agent anything it has not heard."""
    return (
        f"SELECT {TOKEN.select()}, {PROJECT.select()}, s.last_message > s.told_message"
        f" FROM {TOKEN_FROM}{TOKEN_SESSION} WHERE t.digest = %s"
    )


@cache
def token_standing_sql() -> str:
    """A token's standing, without its objects: its scope, whether it is active and
    when its use was last noted (SQLite's text); whether the session has a message of
    people's its agent has not been told. In SQLite's placeholders, for the event
    loop's own connection (web.api.quiet_hooks)."""
    return native(
        "SELECT t.scope, t.revoked_at IS NULL, t.last_used_at, s.last_message > s.told_message"
        f" FROM todoweb_apitoken t{TOKEN_SESSION} WHERE t.digest = %s",
        "sqlite",
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
    row = fetch_row(token_sql(), [digest])
    return None if row is None else token_from(row, this_thread_connection())


def session_row(
    project: Project, key: str, *, idempotency_key: str | None, for_update: bool = False
) -> SessionRow | None:
    """The session `key` of the project as a write finds it (None: there is none yet);
    `for_update` locks its row until the transaction ends."""
    if for_update:
        lock_session(project, key)
    row = fetch_row(session_sql(), [idempotency_key, project.pk, key])
    return None if row is None else session_from(row, project, this_thread_connection())


def token_and_session(
    digest: str, key: str, *, idempotency_key: str | None
) -> tuple[ApiToken | None, SessionRow | None]:
    """The token, and the session `key` of its project as `session_row` reads it
    (None if there is none), in one query."""
    row = fetch_row(token_and_session_sql(), [key, idempotency_key, digest])
    if row is None:
        return None, None
    db = this_thread_connection()
    token = token_from(row, db)
    rest = row[len(TOKEN.names) + len(PROJECT.names) :]
    return token, session_from(rest, token.project, db) if rest[0] is not None else None


def token_and_untold(digest: str, key: str) -> tuple[ApiToken | None, bool]:
    """The token, and whether the session `key` of its project has people's messages
    its agent has not heard (False: nothing to tell, or no such session), in one query:
    what a hook on any tool asks, reading no plan when there is nothing to tell."""
    row = fetch_row(token_and_untold_sql(), [key, digest])
    if row is None:
        return None, False
    return token_from(row, this_thread_connection()), bool(row[-1])


def token_from(row: Sequence[Any], db: BaseDatabaseWrapper) -> ApiToken:
    token = TOKEN.instance(row[: len(TOKEN.names)], db)
    token.project = PROJECT.instance(row[len(TOKEN.names) : len(TOKEN.names) + len(PROJECT.names)], db)
    return token


def session_from(row: Sequence[Any], project: Project, db: BaseDatabaseWrapper) -> SessionRow:
    """The SessionRow of the session's columns, its parent's public id, the current
    revision's columns and the replay's, in that order."""
    end = len(SESSION.names)
    session = SESSION.instance(row[:end], db)
    session.project = project
    parent_public_id = row[end]
    if session.parent_id is not None:
        session.parent = Session(pk=session.parent_id, public_id=parent_public_id, project=project)
    start, end = end + 1, end + 1 + len(CURRENT.names)
    current = None
    if session.revision:
        current = CURRENT.instance(row[start:end], db)
        current.session = session
        current.number = session.revision
    replay = None
    if row[end] is not None:  # its fingerprint: there is an earlier call with this key
        earlier = REPLAY.instance(row[end:], db)
        replay = Replay(earlier.fingerprint, earlier.response)
    return SessionRow(session, current, replay)


def fetch_row(sql: str, params: list[Any]) -> tuple[Any, ...] | None:
    return execute(sql, params).fetchone()


def execute(sql: str, params: Sequence[Any]) -> Any:
    """Run `sql` (written with %s placeholders) on this thread's connection; its cursor."""
    db = this_thread_connection()
    if db.queries_logged:
        cursor = db.cursor()  # counted and logged as every other query
        cursor.execute(sql, params)
        return cursor
    if db.connection is None:
        db.ensure_connection()
    with db.wrap_database_errors:
        cursor = db.connection.cursor()
        cursor.execute(native(sql, db.vendor), params)
        return cursor


@cache
def native(sql: str, vendor: str) -> str:
    """`sql` in the driver's own placeholders: sqlite3 takes `?` (Django rewrites them
    on every call)."""
    return sql.replace("%s", "?") if vendor == "sqlite" else sql


def lock_session(project: Project, key: str) -> None:
    """Lock the session's row until the transaction ends. A statement of its own: on
    PostgreSQL a locking read that waited re-reads the locked row only, not the rows
    joined to it, so the session read follows the lock rather than taking it."""
    if connection.features.has_select_for_update:
        execute('SELECT 1 FROM todoweb_session WHERE project_id = %s AND "key" = %s FOR UPDATE', [project.pk, key])


def this_thread_connection() -> BaseDatabaseWrapper:
    """The connection itself: `django.db.connection` looks it up again on every
    attribute read (a context-local lookup), which adds up over a row's fields."""
    return connections[DEFAULT_DB_ALIAS]


# Python values the database drivers take as they are, for any field but JSON.
PLAIN_TYPES = frozenset({int, str, bool, float, type(None)})

Prepare = Callable[[Any, BaseDatabaseWrapper], Any]


@cache
def preparer(field: Any, vendor: str) -> Prepare:
    """How a value of `field` goes to the database, as `get_db_prep_save` would send it."""
    if isinstance(field, JSONField):
        return prepared_json(field)
    if isinstance(field, CompressedJSONField):
        return field.get_db_prep_save
    if isinstance(field, DateTimeField) and vendor == "sqlite":
        return prepared_sqlite_datetime(field)

    def prepare(value: Any, db: BaseDatabaseWrapper) -> Any:
        return value if type(value) in PLAIN_TYPES else field.get_db_prep_save(value, db)

    return prepare


def prepared_json(field: JSONField) -> Prepare:
    def prepare(value: Any, db: BaseDatabaseWrapper) -> Any:
        if value is None:
            return field.get_db_prep_save(value, db)
        if not isinstance(value, Serialised):
            try:
                value = Serialised(orjson.dumps(value).decode())
            except orjson.JSONEncodeError:
                # An integer beyond 64 bits or a lone surrogate: Django's json.dumps.
                return field.get_db_prep_save(value, db)
        # Django's JSON adaptation without its json.dumps: Jsonb on PostgreSQL, text on SQLite.
        return jsonb(value) if db.vendor == "postgresql" else str(value)

    return prepare


def jsonb(text: str) -> Any:
    from psycopg.types.json import Jsonb  # imported only where PostgreSQL is used

    return Jsonb(text, dumps=str)


def prepared_sqlite_datetime(field: DateTimeField) -> Prepare:
    """An aware datetime as Django's SQLite backend stores it: the text of the naive time
    in the connection's zone (UTC)."""

    def prepare(value: Any, db: BaseDatabaseWrapper) -> Any:
        if type(value) is datetime and value.tzinfo is not None and settings.USE_TZ:
            return str(value.astimezone(db.timezone).replace(tzinfo=None))
        return field.get_db_prep_save(value, db)

    return prepare


def db_value(field: Any, value: Any, db: BaseDatabaseWrapper) -> Any:
    """`value` as the database takes it for `field` (on the connection `db`)."""
    return preparer(field, db.vendor)(value, db)


def session_update(session: Session, changed: dict[str, Any], number: int, told: int) -> tuple[str, list[Any]]:
    """The UPDATE that moves the session from revision `number` - 1 to `number`,
    setting the fields `changed`, and its values. `told` is the last of people's
    messages the agent was told of, as the writer read it: a call that told the agent
    meanwhile makes the write start over, so that a message is told once."""
    db = this_thread_connection()
    sql, preparers = update_statement(tuple(changed), db.vendor)
    values = [prepare(value, db) for prepare, value in zip(preparers, changed.values(), strict=True)]
    return sql, values + [session.pk, number - 1, told]


@cache
def update_statement(names: tuple[str, ...], vendor: str) -> tuple[str, list[Prepare]]:
    """The session's UPDATE of these fields, and how each value goes to the database."""
    meta, quote = Session._meta, connection.ops.quote_name
    fields = [meta.get_field(name) for name in names]
    sql = (
        f"UPDATE {meta.db_table} SET "
        + ", ".join(f"{quote(field.column)} = %s" for field in fields)
        + " WHERE id = %s AND revision = %s AND told_message = %s"
    )
    return sql, [preparer(field, vendor) for field in fields]


def advance(session: Session, changed: dict[str, Any], number: int, told: int) -> bool:
    """Move the session to revision `number`; False (nothing written) when it is no
    longer as the writer read it."""
    sql, values = session_update(session, changed, number, told)
    return execute(sql, values).rowcount == 1


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
    return execute(sql, values).rowcount == 1


def insert(*instances: Any) -> None:
    """INSERT a new row for each of `instances` (of one model) in one statement, their
    primary keys left to the database (and not read back: nothing refers to a revision
    or a new delivery by its id)."""
    db = this_thread_connection()
    statement, fields = insert_statement(type(instances[0]), len(instances), db.vendor)
    values = [prepare(getattr(instance, field.attname), db) for instance in instances for field, prepare in fields]
    execute(statement, values)


def insert_rows(model: Any, rows: list[dict[str, Any]]) -> None:
    """`insert` without making the instances: each row a dict of field attribute names
    to values, the fields a row leaves out taking their defaults."""
    db = this_thread_connection()
    statement, fields = insert_statement(model, len(rows), db.vendor)
    fixed = fixed_defaults(model, db.vendor)
    values = [
        prepare(row[field.attname], db)
        if field.attname in row
        else fixed[field.attname]
        if field.attname in fixed
        else prepare(field.get_default(), db)
        for row in rows
        for field, prepare in fields
    ]
    execute(statement, values)


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
def insert_statement(model: Any, rows: int, vendor: str) -> tuple[str, list[tuple[Any, Prepare]]]:
    """The INSERT of `rows` new rows of `model`, and the fields of each row's values in
    order, each with how its value goes to the database (looked up here once: a field's
    hash, which `preparer`'s cache takes, costs more than the value's preparing)."""
    meta = model._meta
    fields = [field for field in meta.concrete_fields if not field.primary_key]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    statement = f"INSERT INTO {meta.db_table} ({columns}) VALUES {', '.join([row] * rows)}"
    return statement, [(field, preparer(field, vendor)) for field in fields]
