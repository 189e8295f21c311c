# Our AppWrapper controller as an image for users who build with Docker:
#   docker build -t awconf/appwrapper-controller:0.1.0 .
#   awconf controller manifests --image awconf/appwrapper-controller:0.1.0 | kubectl apply --server-side -f -
# awconf itself needs no registry: `awconf install` and `awconf run --controller in-cluster`
# make the image from the binary and load it into the nodes.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p appwrapper-controller

# The binary links glibc; distroless's cc image has it and runs as nonroot (65532), as the
# release manifests' runAsNonRoot requires.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/appwrapper-controller /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
