"""The data todoweb keeps: projects and their tokens, sessions, steps and revisions.

Writes go through `todoweb.writes` only; these classes hold fields and the small
derivations (state, progress) that every reader needs.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, FilteredRelation, Q
from django.utils import timezone

from todoweb.fields import CompressedJSONField


def new_public_id() -> str:
    return secrets.token_urlsafe(12)


def digest(raw: str) -> str:
    # API and share tokens carry 256 bits of randomness, so a fast hash is
    # enough at rest (nothing to brute-force) and lookups stay one index hit.
    return hashlib.sha256(raw.encode()).hexdigest()


class Project(models.Model):
    class SingleInProgress(models.TextChoices):
        OFF = "off", "off: accept any number"
        WARN = "warn", "warn: accept, with a warning"
        REJECT = "reject", "reject the call"

    class ReplyStyle(models.TextChoices):
        CHECKLIST = "checklist", "checklist"
        NATIVE = "native", "native (each tool's own text)"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="todoweb_projects", through="Membership"
    )
    single_in_progress = models.CharField(max_length=8, choices=SingleInProgress.choices, default=SingleInProgress.WARN)
    max_items = models.PositiveIntegerField(
        default=100, validators=[MinValueValidator(1), MaxValueValidator(settings.TODOWEB_MAX_ITEMS_CAP)]
    )
    max_content_chars = models.PositiveIntegerField(default=2000, validators=[MinValueValidator(1)])
    reply_style = models.CharField(max_length=10, choices=ReplyStyle.choices, default=ReplyStyle.CHECKLIST)
    created_at = models.DateTimeField(default=timezone.now)
    # Moves on every change of the project's webhook endpoints (0: it never had any). A
    # write reads it with the token, so a project without endpoints costs no query, and
    # each process keeps the endpoints of the version it last saw (webhooks.enqueue).
    webhook_version = models.PositiveIntegerField(default=0, editable=False)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    """A user's place in a project: every member watches its sessions; editors also act
    on them (edit the plan, notes, answers, rename, close, archive, share); admins also
    run the project from the board (members, tokens, share links, webhooks, policy).
    Staff may do everything everywhere, member or not."""

    class Role(models.TextChoices):
        VIEWER = "viewer", "viewer: watches"
        EDITOR = "editor", "editor: watches and acts on sessions"
        ADMIN = "admin", "admin: also runs the project"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="todoweb_memberships")
    role = models.CharField(max_length=6, choices=Role.choices, default=Role.EDITOR)

    class Meta:
        # The table the plain many-to-many had: existing members stay members.
        db_table = "todoweb_project_members"
        unique_together = [("project", "user")]
        ordering = ["project", "user"]

    def __str__(self) -> str:
        return f"{self.user} ({self.project.slug}, {self.role})"

    @property
    def may_edit(self) -> bool:
        return self.role != self.Role.VIEWER


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        WRITE = "write", "write (and read)"
        READ = "read", "read only"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100, blank=True)
    scope = models.CharField(max_length=5, choices=Scope.choices, default=Scope.WRITE)
    prefix = models.CharField(max_length=12, editable=False, help_text="First characters, to recognise it.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.project.slug}, {self.scope})"

    @staticmethod
    def new_raw() -> str:
        return "tw_" + secrets.token_urlsafe(32)

    def set_raw(self, raw: str) -> None:
        self.prefix = raw[:10]
        self.digest = digest(raw)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class SessionQuerySet(models.QuerySet):
    def with_current(self) -> SessionQuerySet:
        """Each session with its current plan, the revision numbered `revision`, in the
        same query: `session.current` (None before the first write)."""
        current = FilteredRelation("revisions", condition=Q(revisions__number=F("revision")))
        return self.annotate(current=current, current_number=F("current__number")).select_related("current")


class CurrentRevision:
    """`session.current`. The join in `with_current()` sets it when it finds the
    revision; when it finds none, there is none yet. A session read without the join
    has no idea: asking is a mistake, not an empty plan."""

    def __get__(self, session: Session | None, owner: type | None = None):
        if session is None:
            return self
        if "current_number" in session.__dict__:
            return None
        raise AttributeError("session.current is loaded by Session.objects.with_current()")


class Session(models.Model):
    class State(models.TextChoices):
        EMPTY = "empty"
        ACTIVE = "active"
        IDLE = "idle"
        COMPLETED = "completed"
        FAILED = "failed"
        CLOSED = "closed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sessions")
    key = models.CharField(max_length=200)
    public_id = models.CharField(max_length=24, unique=True, default=new_public_id, editable=False)
    title = models.CharField(max_length=500, blank=True)
    dialect = models.CharField(max_length=32, blank=True)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    revision = models.PositiveIntegerField(default=0)
    # Next number for a step id the server assigns ("1", "2", …).
    next_step_number = models.PositiveIntegerField(default=1)
    # Denormalised from the current steps so lists and state filters need no join.
    total_steps = models.PositiveIntegerField(default=0)
    completed_steps = models.PositiveIntegerField(default=0)
    open_steps = models.PositiveIntegerField(default=0)  # neither completed nor cancelled
    working_steps = models.PositiveIntegerField(default=0)  # pending or in progress: work remains
    current_text = models.CharField(max_length=2000, blank=True)
    rounds_since_todo = models.PositiveIntegerField(default=0)
    # The last revision the agent wrote or was told of: later ones are people's edits
    # that its next call is answered with first.
    agent_revision = models.PositiveIntegerField(default=0)
    # People's messages to the agent (edits and notes, `Message`): the newest, and the
    # newest it was told of. One call tells each once: it moves `told_message` from the
    # value it read (a compare-and-set, as a write moves `revision`).
    last_message = models.PositiveBigIntegerField(default=0)
    told_message = models.PositiveBigIntegerField(default=0)
    # Progress over time for the dashboard's sparkline: [unix seconds, progress] per
    # revision, the last TREND_POINTS of them.
    trend = models.JSONField(default=list, blank=True)
    # What the board must tell people of how the agent reaches it: a telemetry export
    # that cut the agent's todo list (nothing of it was written), and what avoids that.
    reach_warning = models.CharField(max_length=500, blank=True)
    # Where the agent works: the folder its hooks report (`cwd`), and the git branch
    # a hook names (X-Todoweb-Branch). Shown on the cards.
    workdir = models.CharField(max_length=1000, blank=True)
    branch = models.CharField(max_length=250, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now, db_index=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    archived_at = models.DateTimeField(null=True, blank=True)

    objects = SessionQuerySet.as_manager()
    current = CurrentRevision()

    class Meta:
        ordering = ["-updated_at"]
        constraints = [models.UniqueConstraint(fields=["project", "key"], name="session_key_unique_in_project")]
        indexes = [models.Index(fields=["project", "-updated_at"])]

    def __str__(self) -> str:
        return self.title or self.key

    def state_at(self, now: datetime) -> str:
        if self.closed_at:
            return self.State.CLOSED
        if self.total_steps == 0:
            return self.State.EMPTY
        if self.open_steps == 0:
            return self.State.COMPLETED
        if self.working_steps == 0:
            # Nothing left to do, and some steps failed or are blocked.
            return self.State.FAILED
        if now - self.updated_at >= timedelta(seconds=settings.TODOWEB_IDLE_AFTER):
            return self.State.IDLE
        return self.State.ACTIVE

    @property
    def state(self) -> str:
        return self.state_at(timezone.now())

    @property
    def progress(self) -> float:
        return round(self.completed_steps / self.total_steps, 4) if self.total_steps else 0.0

    def get_absolute_url(self) -> str:
        return f"/s/{self.public_id}/"


# The largest revision number: a PositiveIntegerField is a 32-bit integer in PostgreSQL.
MAX_REVISION = 2**31 - 1


class Revision(models.Model):
    """One accepted write: immutable, numbered 1..N within its session."""

    class Author(models.TextChoices):
        AGENT = "agent"
        USER = "user"  # a person's edit from the board or the edits endpoint

    # No index of its own: the unique (session, number) index leads with the session
    # and serves every lookup by session; one index fewer to write on each revision.
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="revisions", db_index=False)
    number = models.PositiveIntegerField()
    tool = models.CharField(max_length=100)
    dialect = models.CharField(max_length=32)
    call_id = models.CharField(max_length=200, blank=True)
    raw_input = CompressedJSONField(null=True)  # the call's input, as the agent sent it
    title = models.CharField(max_length=500, blank=True)
    todos = CompressedJSONField(default=list, wide_integers=False)
    changes = models.JSONField(default=list)
    # Unfinished steps dropped and not back: the newest few (plan.DROPPED_KEPT) and how
    # many in all; and every step this revision dropped, from which the whole ledger is
    # read back (selectors.dropped_ledger).
    dropped = models.JSONField(default=list)
    dropped_count = models.PositiveIntegerField(default=0)
    dropped_here = models.JSONField(default=list)
    warnings = models.JSONField(default=list)
    author = models.CharField(max_length=5, choices=Author.choices, default=Author.AGENT)
    created_at = models.DateTimeField(default=timezone.now)
    # The call's idempotency key (its tool call id, or an Idempotency-Key header): a
    # repeat of the same call is answered with `response`, the first answer, and
    # writes nothing. `fingerprint` tells a repeat from another call reusing the key.
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    fingerprint = models.CharField(max_length=64, blank=True)
    response = CompressedJSONField(null=True, blank=True)

    class Meta:
        ordering = ["session", "number"]
        constraints = [
            models.UniqueConstraint(fields=["session", "number"], name="revision_number_unique"),
            models.UniqueConstraint(fields=["session", "idempotency_key"], name="revision_idempotency_key_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.session} r{self.number}"


class Step(models.Model):
    """One step of a session's current plan, as a row: what SQL and BI tools query
    (the revisions keep the history, compressed). Written in the transaction of the
    revision that made the plan, only the steps it changed (store/steps.py): after any
    write, a session's rows are its last revision's list."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="steps", db_index=False)
    # The step's id in the plan (the caller's, at most 500 characters, or the server's "1", "2", …).
    step_id = models.CharField(max_length=500)
    position = models.PositiveIntegerField()
    content = models.TextField()
    active_form = models.TextField(blank=True)
    notes = models.TextField(blank=True)
    status = models.CharField(max_length=11)
    priority = models.TextField(blank=True)  # as the agent gave it: some tools take any word
    owner = models.CharField(max_length=200, blank=True)
    blocked_by = models.JSONField(default=list, blank=True)  # ids of the steps it waits for
    first_seen_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    reopened = models.PositiveIntegerField(default=0)
    # The time of the revision that last changed this row.
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["session", "position"]
        constraints = [models.UniqueConstraint(fields=["session", "step_id"], name="step_id_unique_in_session")]
        indexes = [
            models.Index(fields=["status", "-updated_at"], name="step_status_updated"),
            models.Index(fields=["-updated_at"], name="step_updated"),
        ]

    def __str__(self) -> str:
        return self.content[:80]


class Message(models.Model):
    """What a person told the agent: an edit of the plan (its revision, and the note
    that came with it) or a note alone. Told to the agent once, on its next call by
    whatever route; the board shows where each stands."""

    class Kind(models.TextChoices):
        EDIT = "edit"
        NOTE = "note"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages")
    kind = models.CharField(max_length=4, choices=Kind.choices)
    revision = models.PositiveIntegerField(null=True, blank=True)  # an edit's revision
    text = models.TextField(blank=True)  # the note
    author = models.CharField(max_length=150, blank=True)  # the member's username
    created_at = models.DateTimeField(default=timezone.now)
    told_at = models.DateTimeField(null=True, blank=True)
    told_via = models.CharField(max_length=60, blank=True)  # the route: "Claude Code hook", "MCP tool call", …

    class Meta:
        ordering = ["session", "id"]

    def __str__(self) -> str:
        return f"{self.session} {self.kind} {self.pk}"


class Question(models.Model):
    """Something the agent asks people to decide, on the board: approve its plan (Claude
    Code's ExitPlanMode, through a PreToolUse hook) or allow a tool (Claude Code's
    permission prompt, through the channel). The first member's answer wins."""

    class Kind(models.TextChoices):
        PLAN = "plan"
        PERMISSION = "permission"

    class Decision(models.TextChoices):
        ALLOW = "allow"
        DENY = "deny"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="questions")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    request_id = models.CharField(max_length=64, blank=True)  # the agent's own id for it
    tool_name = models.CharField(max_length=200, blank=True)
    text = models.TextField(blank=True)  # the plan, or what the tool would do
    detail = models.TextField(blank=True)  # the tool's input, as the agent previews it
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()  # after this the agent asks its own prompt instead
    decision = models.CharField(max_length=5, choices=Decision.choices, blank=True)
    feedback = models.TextField(blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=150, blank=True)
    # The requests waiting on it now (the hook that asked, `?wait` polls), whatever
    # process serves them: when the last one hangs up, no agent will read an answer.
    waiters = models.PositiveIntegerField(default=0)
    abandoned_at = models.DateTimeField(null=True, blank=True)  # its last waiter hung up

    class Meta:
        ordering = ["session", "id"]

    def __str__(self) -> str:
        return f"{self.session} {self.kind} {self.pk}"


class ShareLink(models.Model):
    """A read-only, expiring link to one session's panel."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="share_links")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    def is_valid_at(self, now: datetime) -> bool:
        return self.revoked_at is None and now < self.expires_at


class WebhookEndpoint(models.Model):
    """Where a project's events are posted (todoweb.webhooks, docs/webhooks.md)."""

    class Format(models.TextChoices):
        STANDARD = "standard", "standard (JSON, signed per Standard Webhooks)"
        SLACK = "slack", "slack (Slack and Mattermost incoming webhooks)"
        DISCORD = "discord", "discord"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list)
    format = models.CharField(max_length=8, choices=Format.choices, default=Format.STANDARD)
    # `whsec_` + base64 of 32 random bytes: shown once, kept to sign each delivery.
    secret = models.CharField(max_length=80, editable=False)
    # The board's address when the endpoint was made, for the panel links in messages
    # (TODOWEB_PUBLIC_URL, when set, wins).
    site_url = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Since when every delivery failed (None: the last one got through).
    failing_since = models.DateTimeField(null=True, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["project", "id"]
        verbose_name = "webhook endpoint"

    def __str__(self) -> str:
        return f"{self.url} ({self.project.slug}, {self.format})"

    @property
    def is_enabled(self) -> bool:
        return self.disabled_at is None


class WebhookDelivery(models.Model):
    """One event for one endpoint: its body as of the event, and where its delivery
    stands (the last attempt's answer, the next attempt)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"  # given up

    # Indexed by the (endpoint, -id) index and the (endpoint, dedupe_key) constraint below:
    # an index of its own would only cost each event's write.
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    event = models.CharField(max_length=40)
    # The webhook-id header: the same on every attempt, so receivers can drop repeats.
    message_id = models.CharField(max_length=40, unique=True)
    # One delivery per event per endpoint ("session.completed:<session>:<revision>");
    # None for test events.
    dedupe_key = models.CharField(max_length=120, null=True, blank=True)
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    payload = models.JSONField()  # {"type", "timestamp", "data"}
    status = models.CharField(max_length=9, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    response_body = models.TextField(blank=True)  # the answer's first characters
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)  # why the last attempt failed
    # The queued task that makes the next attempt: only it may (a stray copy does nothing).
    # Empty until the worker queues the first (the write that made the delivery does not).
    task_id = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-id"]
        verbose_name = "webhook delivery"
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "dedupe_key"], name="webhook_delivery_once_per_event"),
        ]
        indexes = [
            models.Index(fields=["endpoint", "-id"]),
            models.Index(fields=["status", "next_attempt_at"]),
            models.Index(fields=["id"], condition=models.Q(task_id=""), name="webhook_delivery_unqueued"),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.endpoint_id} ({self.status})"


class WebhookClock(models.Model):
    """The recurring check for idle sessions: one row, and one queued task due at
    `due_at` (a task due at another time is a stray copy and stops)."""

    name = models.CharField(max_length=20, primary_key=True)
    due_at = models.DateTimeField()
    swept_upto = models.DateTimeField(null=True, blank=True)  # idle deadlines up to here are checked
    pruned_at = models.DateTimeField(null=True, blank=True)
