# syntax=docker/dockerfile:1
#
# agentauth container image: a static Go binary on distroless (no shell, no
# package manager), running as the unprivileged "nonroot" user (65532).
#
#   docker build -t agentauth:dev --build-arg VERSION=$(git describe --always) \
#     --build-arg REVISION=$(git rev-parse HEAD) .
#   docker run --rm -p 8080:8080 -e SERVICE_API_KEY=... agentauth:dev
#
# deploy/helm/agentauth runs this image; see deploy/helm/README.md.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-mod=readonly
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/agentauth/agentauth/internal/buildinfo.version=${VERSION} -X github.com/agentauth/agentauth/internal/buildinfo.revision=${REVISION}" \
      -o /out/agentauth ./cmd/agentauth \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/agentauth /agentauth
# The data directory (SQLite when no SERVICE_DATABASE_URL) must be writable by
# nonroot; mount a volume here to keep it.
COPY --from=build --chown=65532:65532 /out/data /var/lib/agentauth
USER nonroot:nonroot
ENV SERVICE_HOST=0.0.0.0 \
    SERVICE_PORT=8080 \
    SERVICE_DATA_DIR=/var/lib/agentauth
EXPOSE 8080
# No HEALTHCHECK: the image has no shell or HTTP client. Probe from outside:
# GET /health (liveness), or with SERVICE_MANAGEMENT_PORT set, /health/live
# and /health/ready there (the Helm chart uses port 9000).
ENTRYPOINT ["/agentauth", "serve"]
