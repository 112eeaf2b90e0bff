# syntax=docker/dockerfile:1
# cmdb-exporter: build with dev dependencies, run with production dependencies only, as non-root.

ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE}
# EXPORTER_STORAGE_PATH: where the exporter keeps what it knew across restarts (docs/restarts.md).
ENV NODE_ENV=production \
    EXPORTER_LISTEN_ADDRESS=:9873 \
    EXPORTER_STORAGE_PATH=/var/lib/cmdb-exporter
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY config/exporter.example.yaml ./config/exporter.example.yaml
# The state directory belongs to the user the exporter runs as, and to nobody else.
RUN mkdir -p /var/lib/cmdb-exporter && chown node:node /var/lib/cmdb-exporter && chmod 0700 /var/lib/cmdb-exporter
# The runbooks the status page links to by default (/docs/alerts) and the other docs, rendered by the exporter.
COPY docs ./docs
USER node
# A volume, so that the state outlives the container: mount a named volume (docker-compose.yml) or
# a persistent volume (deploy/kubernetes) here to keep it across re-created containers too.
VOLUME ["/var/lib/cmdb-exporter"]
EXPOSE 9873
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 CMD ["node", "dist/healthcheck.js"]
# node is PID 1's command directly (no npm, no shell), so SIGTERM reaches the daemon.
ENTRYPOINT ["node", "dist/main.js"]
