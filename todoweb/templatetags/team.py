"""The header's links to a project's settings (for its admins) and the admin (for staff)."""

from __future__ import annotations

from django import template

from todoweb.reads import administered_projects

register = template.Library()


@register.simple_tag
def runs_a_project(user) -> bool:
    """Whether the user administers a project (staff: always)."""
    if not user.is_authenticated:
        return False
    return bool(user.is_staff) or administered_projects(user).exists()
