# Agent API: multi-stage build on Node 22 (LTS; the service needs Node 22.12+ and is tested on 22 and 24).
# test/e2e/docker-image.e2e-spec.ts replays this file without a Docker engine (test/helpers/docker-layout.ts)
# and serves /console and /docs from the result: a RUN step it does not know fails that test.
FROM node:22-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json .swcrc nest-cli.json ./
COPY src ./src
COPY migrations ./migrations
RUN npm run build && npm prune --omit=dev

FROM node:22-slim
# No API_KEYS here on purpose: with HOST=0.0.0.0 and no API_KEYS the server refuses to start
# (the development key is well known). Pass API_KEYS at `docker run -e` / in compose.
ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    DATA_DIR=/app/data
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY agents ./agents
# The web console (/console): static files served by the app.
COPY console ./console
RUN mkdir -p /app/data && chown -R node:node /app/data
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/readyz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
CMD ["node", "dist/src/main.js"]
