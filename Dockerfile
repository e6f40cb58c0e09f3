# mcpgov operator image: a release build of the `mcpgov` binary on a slim, non-root base.
# The build steps live in scripts/build-release.sh (tested in scripts/test.sh).

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
ENV CARGO_TARGET_DIR=/target
RUN bash scripts/build-release.sh /out

FROM debian:bookworm-slim
# CA certificates for https MCP endpoints; nothing else.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/mcpgov /usr/local/bin/mcpgov
# The chart runs it with a read-only root filesystem and this uid (restricted profile).
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/mcpgov"]
CMD ["operator"]
