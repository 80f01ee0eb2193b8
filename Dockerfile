# syntax=docker/dockerfile:1
#
# Handoff server image. Build: `docker build -t handoff .`
# Runs `node dist/src/cli.js serve` as the unprivileged `node` user, listening on 0.0.0.0:8080,
# with its embedded data (DB, blobs, outbox, generated server key) under /var/lib/handoff.

# Node major of both stages; `--build-arg NODE_VERSION=22` moves to the next LTS.
ARG NODE_VERSION=20

# ---- build: install every dependency, compile TypeScript, then drop the dev dependencies ----
FROM node:${NODE_VERSION}-slim AS build
WORKDIR /app

# Dependencies first so this layer is reused while only sources change.
COPY package.json package-lock.json ./
COPY packages/sdk/package.json packages/sdk/package.json
RUN --mount=type=cache,target=/root/.npm npm ci

# Sources (what .dockerignore lets through), compiled by `tsc -p tsconfig.build.json` into dist/.
COPY . .
RUN npm run build \
 && npm prune --omit=dev

# ---- runtime: production node_modules + compiled output only ----
FROM node:${NODE_VERSION}-slim AS runtime

ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/var/lib/handoff

WORKDIR /app

# The data directory is the only place the server writes; the code stays root-owned and read-only to it.
RUN mkdir -p /var/lib/handoff && chown node:node /var/lib/handoff

COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The client commands (handoff send, receive, mcp…) run on the workspace SDK, linked from node_modules.
COPY --from=build /app/packages/sdk/package.json ./packages/sdk/package.json
COPY --from=build /app/packages/sdk/dist ./packages/sdk/dist

USER node

EXPOSE 8080

# Liveness for a plain `docker run` (the slim image has no curl); docker-compose.yml checks /readyz instead.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# --v8-pool-size=0: as many V8 helper threads as the machine has cores less one (see docs/deployment.md).
CMD ["node", "--v8-pool-size=0", "dist/src/cli.js", "serve"]
