# The release image: the binary GoReleaser built (see .goreleaser.yaml) on
# distroless, as the repository's Dockerfile makes it from source. Without
# a shell nothing can make /var/lib/agentauth writable here, so the data
# folder defaults to one under nonroot's home; the Helm chart sets
# SERVICE_DATA_DIR to its own volume.
FROM gcr.io/distroless/static-debian12:nonroot
ARG TARGETPLATFORM
COPY ${TARGETPLATFORM}/agentauth /agentauth
USER nonroot:nonroot
ENV SERVICE_HOST=0.0.0.0 \
    SERVICE_PORT=8080 \
    SERVICE_DATA_DIR=/home/nonroot/agentauth
EXPOSE 8080
ENTRYPOINT ["/agentauth", "serve"]
