# mcpgov images: release builds of the operator (`mcpgov`) and of the gateway sidecar
# (`mcpgov-gateway`) on a slim, non-root base. The build steps live in
# scripts/build-release.sh (tested in scripts/test.sh).
#
#   docker build -t mcpgov .                                  # the operator (last stage)
#   docker build --target gateway -t mcpgov-gateway .         # the gateway sidecar

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
ENV CARGO_TARGET_DIR=/target
RUN bash scripts/build-release.sh /out

# Shared by both images: CA certificates for https MCP endpoints; nothing else.
FROM debian:bookworm-slim AS base
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*

FROM base AS gateway
COPY --from=build /out/mcpgov-gateway /usr/local/bin/mcpgov-gateway
# Runs as this uid with a read-only root filesystem (restricted profile); it writes
# nothing but stdout and stderr.
USER 65532:65532
# 8480: MCP routes (loopback by default), 8481: /healthz, /readyz, /metrics.
EXPOSE 8480 8481
ENTRYPOINT ["/usr/local/bin/mcpgov-gateway"]

# The operator stays last: a plain `docker build` builds it.
FROM base AS operator
COPY --from=build /out/mcpgov /usr/local/bin/mcpgov
# The chart runs it with a read-only root filesystem and this uid (restricted profile).
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/mcpgov"]
CMD ["operator"]
