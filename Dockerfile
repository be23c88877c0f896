# The comment service's image: one image for the web server, the Celery worker and beat, chosen
# by the container's command (deploy/container/entrypoint: web, worker, beat, manage <args>).
# docs/production.md ("Containers") describes its commands, settings and volumes; compose.yaml
# runs it with PostgreSQL and Redis.
#
#   docker build -t comment-service .        (or podman build)
#
# BASE_IMAGE is any Debian bookworm image: the official Python image by default, or plain Debian,
# on which Debian's own Python 3.11 is installed (CI builds it so, from a local Debian image:
# scripts/test-container). Behind a proxy that re-signs TLS, give pip the proxy's CA bundle as a
# build secret, which no layer keeps: --secret id=pip-ca,src=/etc/ssl/certs/ca-certificates.crt
ARG BASE_IMAGE=docker.io/library/python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS python
RUN if ! command -v python3 >/dev/null 2>&1; then \
        apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            python3 python3-venv ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && python3 -c 'import sys; assert sys.version_info >= (3, 11), "the service needs Python 3.11"'


FROM python AS dependencies
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
RUN python3 -m venv /opt/venv
# The dependencies alone, read from pyproject.toml (without the dev extras): this stage is built
# again only when they change, and the image's layer of them with it.
COPY pyproject.toml /tmp/pyproject.toml
RUN --mount=type=secret,id=pip-ca \
    if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi \
    && /opt/venv/bin/python -c 'import tomllib; project = tomllib.load(open("/tmp/pyproject.toml", "rb")); print("\n".join(project["build-system"]["requires"] + project["project"]["dependencies"]))' > /tmp/requirements.txt \
    && /opt/venv/bin/pip install -q -r /tmp/requirements.txt \
    && rm /tmp/pyproject.toml /tmp/requirements.txt


FROM dependencies AS build
WORKDIR /app
COPY . .
RUN /opt/venv/bin/python -m compileall -q /app \
    && DJANGO_SECRET_KEY=collectstatic-only COMMENTS_VAR_DIR=/tmp/var DJANGO_STATIC_ROOT=/app/staticfiles \
        /opt/venv/bin/python manage.py collectstatic --noinput -v 0 \
    && rm -rf /tmp/var


FROM python
# A user of its own, which owns nothing but /var/lib/comments (COMMENTS_VAR_DIR: celery beat's
# schedule, and the embedded default's SQLite database and kept key when no database is named);
# the code and the static files are root's, read-only to it.
RUN groupadd --gid 10001 comments \
    && useradd --uid 10001 --gid comments --home-dir /var/lib/comments --no-create-home \
        --shell /usr/sbin/nologin comments \
    && install -d -o comments -g comments -m 0750 /var/lib/comments
COPY --from=dependencies /opt/venv /opt/venv
COPY --from=build /app /app
# Editable, as docs/production.md installs it: the code runs from /app, beside the templates,
# static files and translations it reads there. Nothing is downloaded here.
RUN /opt/venv/bin/pip install -q --no-deps --no-build-isolation --disable-pip-version-check --root-user-action=ignore -e /app \
    && rm -rf /app/build
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    LANG=C.UTF-8 \
    COMMENTS_VAR_DIR=/var/lib/comments \
    DJANGO_STATIC_ROOT=/app/staticfiles \
    PORT=8000
WORKDIR /app
USER 10001:10001
EXPOSE 8000
# /healthz for the web (the database must answer), a ping of the worker, nothing for beat.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
    CMD ["/app/deploy/container/entrypoint", "healthcheck"]
ENTRYPOINT ["/app/deploy/container/entrypoint"]
CMD ["web"]
