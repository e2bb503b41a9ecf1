"""django-tasks' names (the backport of Django 6's django.tasks, which todoweb will use
once on Django 6)."""

from __future__ import annotations

from django_tasks import TaskContext, TaskResultStatus, task

__all__ = ["TaskContext", "TaskResultStatus", "task"]
