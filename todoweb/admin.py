"""The staff console: projects and their policy, tokens, sessions, revisions, webhooks."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from todoweb.calls.errors import InvalidInput
from todoweb.models import (
    ApiToken,
    Membership,
    Project,
    Revision,
    Session,
    ShareLink,
    Step,
    WebhookDelivery,
    WebhookEndpoint,
)
from todoweb.reads import state_filter
from todoweb.webhooks import endpoints as webhook_endpoints
from todoweb.webhooks import events as webhook_events
from todoweb.writes.people import session_archive, session_change
from todoweb.writes.sharing import share_revoke
from todoweb.writes.tokens import token_revoke


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]
    fields = ["user", "role"]
    verbose_name = "member"
    verbose_name_plural = "members (viewers watch; editors also act on sessions; admins also run the project)"


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "single_in_progress", "max_items", "max_content_chars", "reply_style", "created_at"]
    list_filter = ["single_in_progress", "reply_style"]
    search_fields = ["slug", "name"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]
    fieldsets = [
        (None, {"fields": ["name", "slug"]}),
        ("Policy", {"fields": ["single_in_progress", "max_items", "max_content_chars", "reply_style"]}),
    ]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "project", "name", "scope", "created_at", "last_used_at", "active"]
    list_filter = ["scope", "project", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["prefix", "name", "project__slug"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        if obj is None:
            return ["project", "name", "scope"]
        return ["project", "name", "scope", "prefix", "created_at", "last_used_at", "revoked_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        return self.readonly_fields + (["project", "scope"] if obj else [])

    @admin.display(boolean=True)
    def active(self, token: ApiToken) -> bool:
        return token.is_active

    def save_model(self, request: HttpRequest, obj: ApiToken, form, change: bool) -> None:
        if not change:
            raw = ApiToken.new_raw()
            obj.set_raw(raw)
            # Shown once: only the digest is stored.
            messages.warning(request, f"New API token (copy it now, it will not be shown again): {raw}")
        super().save_model(request, obj, form, change)

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = token_revoke(queryset)
        self.message_user(request, f"Revoked {count} token(s).")


class StateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin) -> list[tuple[str, str]]:
        return [(state.value, state.label) for state in Session.State]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Session]) -> QuerySet[Session]:
        if self.value() not in Session.State.values:
            return queryset
        return queryset.filter(state_filter(self.value(), timezone.now()))


class StepInline(admin.TabularInline):
    """The session's current steps, read-only (the rows its last revision left)."""

    model = Step
    fields = [
        "step_id",
        "content",
        "status",
        "active_form",
        "owner",
        "started_at",
        "completed_at",
        "duration_s",
        "reopened",
    ]
    readonly_fields = fields
    ordering = ["position"]
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "key", "project", "dialect", "state_badge", "progress_text", "revision", "updated_at"]
    list_filter = [
        StateFilter,
        "project",
        "dialect",
        ("closed_at", admin.EmptyFieldListFilter),
        ("archived_at", admin.EmptyFieldListFilter),
    ]
    search_fields = ["key", "title", "public_id"]
    list_select_related = ["project"]
    readonly_fields = [
        "project",
        "key",
        "public_id",
        "dialect",
        "parent",
        "revision",
        "total_steps",
        "completed_steps",
        "open_steps",
        "current_text",
        "created_at",
        "updated_at",
        "closed_at",
        "archived_at",
        "revisions_link",
    ]
    fields = ["title", *readonly_fields]
    inlines = [StepInline]
    actions = ["close", "archive"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # sessions are created by their agents' first call

    def get_queryset(self, request: HttpRequest) -> QuerySet[Session]:
        return super().get_queryset(request).with_current()

    @admin.display(description="state")
    def state_badge(self, session: Session) -> str:
        return session.state

    @admin.display(description="progress")
    def progress_text(self, session: Session) -> str:
        return f"{session.completed_steps}/{session.total_steps}"

    @admin.display(description="revisions")
    def revisions_link(self, session: Session) -> str:
        url = reverse("admin:todoweb_revision_changelist") + f"?session__id__exact={session.pk}"
        return format_html('<a href="{}">{} revision(s)</a>', url, session.revision)

    def save_model(self, request: HttpRequest, obj: Session, form, change: bool) -> None:
        # Only the title is editable; saving the whole row could write back a
        # revision counter that a concurrent tool call has moved on.
        session_change(obj, title=form.cleaned_data["title"])

    @admin.action(description="Close selected sessions")
    def close(self, request: HttpRequest, queryset: QuerySet[Session]) -> None:
        sessions = list(queryset.filter(closed_at__isnull=True))
        for session in sessions:
            session_change(session, closed=True)
        self.message_user(request, f"Closed {len(sessions)} session(s).")

    @admin.action(description="Archive selected sessions")
    def archive(self, request: HttpRequest, queryset: QuerySet[Session]) -> None:
        sessions = list(queryset.filter(archived_at__isnull=True))
        for session in sessions:
            session_archive(session)
        self.message_user(request, f"Archived {len(sessions)} session(s).")


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    """Every session's current steps: what agents are doing across the fleet."""

    list_display = ["content", "status", "session", "project", "started_at", "completed_at", "duration_s", "updated_at"]
    list_filter = ["status", "session__project", "session__dialect"]
    search_fields = ["content", "active_form", "session__key", "session__title"]
    list_select_related = ["session__project"]
    date_hierarchy = "updated_at"

    @admin.display(description="project", ordering="session__project__slug")
    def project(self, step: Step) -> str:
        return step.session.project.slug

    def get_readonly_fields(self, request: HttpRequest, obj=None) -> list[str]:
        return [f.name for f in Step._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # steps are written by their sessions' revisions

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


# A revision's JSON values, shown as JSON (indented), not as Python's reprs.
JSON_VALUES = ("todos", "raw_input", "response", "changes", "dropped", "dropped_here", "warnings")


@admin.register(Revision)
class RevisionAdmin(admin.ModelAdmin):
    list_display = ["session", "number", "author", "tool", "dialect", "call_id", "created_at"]
    list_filter = ["author", "dialect", "tool"]
    search_fields = ["session__key", "session__title", "call_id"]
    list_select_related = ["session"]

    def get_readonly_fields(self, request: HttpRequest, obj=None) -> list[str]:
        return [f"{f.name}_json" if f.name in JSON_VALUES else f.name for f in Revision._meta.fields]

    def get_fields(self, request: HttpRequest, obj=None) -> list[str]:
        return self.get_readonly_fields(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


def json_display(name: str):  # noqa: ANN201
    """A read-only field showing a revision's JSON value `name` as indented JSON (escaped)."""

    @admin.display(description=name.replace("_", " "))
    def shown(admin: RevisionAdmin, revision: Revision) -> str:
        return format_html("<pre>{}</pre>", json.dumps(getattr(revision, name), ensure_ascii=False, indent=2))

    return shown


for _name in JSON_VALUES:
    setattr(RevisionAdmin, f"{_name}_json", json_display(_name))


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):
    list_display = ["session", "created_at", "expires_at", "revoked_at"]
    readonly_fields = ["session", "digest", "created_at", "expires_at", "revoked_at"]
    list_select_related = ["session"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke selected links")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ShareLink]) -> None:
        count = share_revoke(queryset)
        self.message_user(request, f"Revoked {count} link(s); their open pages are disconnected.")


class WebhookEndpointForm(forms.ModelForm):
    # A plain field, so that the one URL check says why an address is refused (rather
    # than the URL field's "Enter a valid URL.").
    url = forms.CharField(label="URL", max_length=webhook_endpoints.URL_MAX_CHARS)
    events = forms.MultipleChoiceField(
        choices=[(event, event) for event in webhook_events.EVENTS], widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["project", "url", "events", "format"]

    def clean(self):
        data = super().clean()
        try:
            if data.get("url"):
                webhook_endpoints.check_url(data["url"])
        except InvalidInput as error:
            self.add_error("url", error.message)
        return data


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    form = WebhookEndpointForm
    list_display = ["url", "project", "format", "events_text", "enabled", "failing_since", "disabled_reason", "log"]
    list_filter = ["format", "project", ("disabled_at", admin.EmptyFieldListFilter)]
    search_fields = ["url", "project__slug"]
    list_select_related = ["project"]
    readonly_fields = ["created_at", "failing_since", "disabled_at", "disabled_reason", "log"]
    actions = ["send_test", "enable"]

    def get_fields(self, request: HttpRequest, obj: WebhookEndpoint | None = None) -> list[str]:
        if obj is None:
            return ["project", "url", "events", "format"]
        return ["project", "url", "events", "format", *self.readonly_fields]

    def get_readonly_fields(self, request: HttpRequest, obj: WebhookEndpoint | None = None) -> list[str]:
        return self.readonly_fields + (["project"] if obj else [])

    @admin.display(description="events")
    def events_text(self, endpoint: WebhookEndpoint) -> str:
        return ", ".join(endpoint.events)

    @admin.display(boolean=True)
    def enabled(self, endpoint: WebhookEndpoint) -> bool:
        return endpoint.is_enabled

    @admin.display(description="deliveries")
    def log(self, endpoint: WebhookEndpoint) -> str:
        url = reverse("admin:todoweb_webhookdelivery_changelist") + f"?endpoint__id__exact={endpoint.pk}"
        return format_html('<a href="{}">delivery log</a>', url)

    def save_model(self, request: HttpRequest, obj: WebhookEndpoint, form, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            webhook_endpoints.enqueue.changed(obj.project_id)
            return
        created = webhook_endpoints.create(
            obj.project,
            url=obj.url,
            wanted=obj.events,
            fmt=obj.format,
            site_url=request.build_absolute_uri("/").rstrip("/"),
        )
        obj.pk = created.pk
        # Shown once: signed deliveries need it to be verified.
        messages.warning(
            request, f"The endpoint's signing secret (copy it now, it will not be shown again): {created.secret}"
        )

    def delete_model(self, request: HttpRequest, obj: WebhookEndpoint) -> None:
        webhook_endpoints.delete(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        for endpoint in queryset:
            webhook_endpoints.delete(endpoint)

    @admin.action(description="Send a test event")
    def send_test(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        for endpoint in queryset:
            webhook_endpoints.send_test(endpoint)
        self.message_user(request, f"Queued a test event to {queryset.count()} endpoint(s); see their delivery logs.")

    @admin.action(description="Enable again")
    def enable(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        for endpoint in queryset:
            webhook_endpoints.enable(endpoint)
        self.message_user(request, f"Enabled {queryset.count()} endpoint(s).")


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "endpoint",
        "event",
        "status",
        "attempts",
        "response_status",
        "latency_ms",
        "next_attempt_at",
        "error",
    ]
    list_filter = ["status", "event", "endpoint"]
    search_fields = ["message_id", "endpoint__url"]
    list_select_related = ["endpoint__project"]

    def get_readonly_fields(self, request: HttpRequest, obj=None) -> list[str]:
        return [f.name for f in WebhookDelivery._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
