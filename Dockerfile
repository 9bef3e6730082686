# Fairway image: one image for web, worker and beat (see docker-compose.yml).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 FAIRWAY_VAR_DIR=/var/lib/fairway
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY config config
COPY scheduler_core scheduler_core
COPY api api
COPY console console
RUN pip install --no-cache-dir -e .
COPY package*.json ./
RUN if [ -f package.json ]; then npm ci --no-audit --no-fund || npm install --no-audit --no-fund; fi
COPY manage.py ./
COPY templates templates
COPY static static
RUN mkdir -p /var/lib/fairway && SECRET_KEY=build python manage.py collectstatic --noinput -v0
EXPOSE 8000
CMD ["python", "manage.py", "run", "--host", "0.0.0.0", "--port", "8000", "--no-worker", "--no-beat"]
