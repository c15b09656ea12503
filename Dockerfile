# The server in two stages: the first compiles TypeScript and builds the API reference with the
# dev tools; the second holds the production dependencies and the compiled output only, and
# runs as the unprivileged `node` user. `npm run test:recipe` runs these same steps in a plain
# shell (CI has no container engine), then starts the result and smoke-tests it.
#
#   docker build -t trs .
#   docker run --rm -p 8080:8080 -e DATABASE_URL=postgres://… trs
#
# Node.js 24 LTS; the server also runs on Node.js 20.19+ and 22.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The lodash.get override of package.json points into vendor/.
COPY vendor ./vendor
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json redocly.yaml ./
COPY openapi ./openapi
COPY generated ./generated
COPY src ./src
RUN npm run build

FROM node:24-bookworm-slim AS run
ENV NODE_ENV=production
# A heap limit makes V8 collect before it grows: a process peaks at ~210 MB under load instead
# of ~380 MB, at the same throughput (BENCHMARKS.md). The server needs ~100 MB of heap at rest
# and BLACKLIST_CACHE_MB more at most; raise the limit with that cache.
ENV NODE_OPTIONS=--max-old-space-size=512
# libuv's thread pool, which Node sizes before any of the server's code runs: password hashing
# (PASSWORD_HASH_CONCURRENCY, at most the pool less 2) shares it with DNS lookups and file writes.
ENV UV_THREADPOOL_SIZE=8
# Only used without DATABASE_URL (the embedded database): a folder the `node` user owns.
ENV DATA_DIR=/home/node/trs-data
WORKDIR /app
COPY package.json package-lock.json ./
COPY vendor ./vendor
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY generated ./generated
# The account pages: templates and static files, read at run time.
COPY views ./views
COPY public ./public
COPY --from=build /app/dist ./dist
# The `trs` command (package.json's bin): a launcher that runs dist/src/cli/index.js.
COPY bin ./bin
USER node
EXPOSE 8080
# Ready means the database answers; node's fetch, since the slim image has no curl.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
CMD ["node", "dist/src/main.js"]
