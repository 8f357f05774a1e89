# Multi-stage: build with the Rust toolchain, run from a distroless image as a non-root user.
#   docker build -t cronscaler:dev .
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY tests tests
COPY manifests manifests
COPY examples examples
COPY bench bench
RUN cargo build --release --locked --bin cronscaler

# glibc and CA certificates, no shell, no package manager; uid 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/cronscaler /usr/local/bin/cronscaler
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/cronscaler"]
CMD ["run"]
