# samsa in a container: the static bin/samsa in an image from scratch,
# configured through the apache/kafka image's KAFKA_* variables (a compose
# file written for that image runs samsa with only the image changed).
#
#   CGO_ENABLED=0 make build        # bin/samsa, static
#   docker build -t samsa .
#
# The image holds nothing but the binary: no shell, no user database.
FROM scratch
COPY bin/samsa /samsa
# Creates the data directory (WORKDIR needs no shell).
WORKDIR /var/lib/samsa/data
# Defaults for a container; KAFKA_* variables given to the container win.
ENV KAFKA_LOG_DIRS=/var/lib/samsa/data
VOLUME /var/lib/samsa/data
EXPOSE 9092
STOPSIGNAL SIGTERM
ENTRYPOINT ["/samsa"]
CMD ["serve"]
