# todoweb's image: `manage.py serve` (uvicorn, several workers) on PostgreSQL + Redis.
# See compose.yaml for the whole stack.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app

COPY requirements.txt .
RUN pip install -r requirements.txt

COPY manage.py ./
COPY todoweb ./todoweb
COPY templates ./templates
COPY static ./static
# Static files are collected at build time and served by whitenoise.
RUN python manage.py collectstatic --noinput --verbosity 0

RUN useradd --system --uid 10001 --no-create-home todoweb
USER todoweb

EXPOSE 8000
# Migrate, then serve. WORKERS and PORT come from the environment (compose.yaml).
CMD ["sh", "-c", "python manage.py migrate --noinput && exec python manage.py serve --host 0.0.0.0 --port \"${PORT:-8000}\" --workers \"${WORKERS:-4}\""]
