# samsa in a container: a drop-in for the apache/kafka image in compose files
# (same KAFKA_* environment variables, same port 9092).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=${VERSION}" -o /out/samsa ./cmd/samsa

FROM debian:bookworm-slim
# Defaults for a container: listen on every interface, keep data in the
# volume. They sit in a properties file, the lowest precedence, so KAFKA_*
# variables (as for apache/kafka, including listeners derived from
# KAFKA_ADVERTISED_LISTENERS) and --override flags replace them.
RUN useradd --system --uid 1000 --home-dir /var/lib/samsa samsa \
 && mkdir -p /var/lib/samsa/data /etc/samsa && chown -R samsa /var/lib/samsa \
 && printf '%s\n' 'listeners=PLAINTEXT://0.0.0.0:9092' 'log.dirs=/var/lib/samsa/data' > /etc/samsa/server.properties
COPY --from=build /out/samsa /usr/local/bin/samsa
USER samsa
VOLUME /var/lib/samsa/data
EXPOSE 9092
STOPSIGNAL SIGTERM
ENTRYPOINT ["samsa"]
CMD ["serve", "--config", "/etc/samsa/server.properties"]
