"""One member of a KIP-932 share group (librdkafka's share consumer through
confluent-kafka): share_member.py BOOTSTRAP GROUP TOPIC NAME MODE [PROP=VALUE...]
with the PROPs passed to the consumer. It prints "R partition offset
delivery-count" for each record it gets and, from the acknowledgement
commit callback, "A partition offset" for each offset whose
acknowledgement the broker confirmed, or "E ack partition: error" for a
partition whose acknowledgement failed.

MODE accept: implicit acknowledgement (each poll's records are accepted
with the next poll); a line "leave" on stdin (or its end) closes the
consumer. MODE close-after:N: explicit acknowledgement; every record is
acknowledged (accept) as it arrives, and once N records have arrived the
consumer is closed with those acknowledgements still pending, so that
close() commits them. "S closed" follows a close."""

import sys
import threading

from confluent_kafka import KafkaException, ShareConsumer


def main():
    bootstrap, group, topic, name, mode = sys.argv[1:6]
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": name,
    }
    for kv in sys.argv[6:]:
        k, v = kv.split("=", 1)
        conf[k] = v
    close_after = 0
    if mode.startswith("close-after:"):
        close_after = int(mode.split(":", 1)[1])
        conf["share.acknowledgement.mode"] = "explicit"
    elif mode != "accept":
        raise SystemExit("unknown mode %s" % mode)

    leave = threading.Event()

    def read_stdin():
        for line in sys.stdin:
            if line.strip() == "leave":
                break
        leave.set()

    threading.Thread(target=read_stdin, daemon=True).start()

    def on_commit(offsets, err):
        out = []
        for tp, offs in offsets.items():
            if err is not None or tp.error is not None:
                out.append("E ack %d: %s" % (tp.partition, tp.error or err))
                continue
            out.extend("A %d %d" % (tp.partition, o) for o in sorted(offs))
        if err is not None and not offsets:
            out.append("E ack -1: %s" % err)
        if out:
            print("\n".join(out), flush=True)

    c = ShareConsumer(conf)
    c.set_acknowledgement_commit_callback(on_commit)
    c.subscribe([topic])
    print("S started", flush=True)
    got = 0
    while not leave.is_set():
        try:
            msgs = c.poll(0.2)
        except KafkaException as e:  # a partition's error: retried by the next poll
            print("E poll: %s" % e, flush=True)
            continue
        out = []
        for m in msgs:
            if m.error():
                out.append("E poll: %s" % m.error())
                continue
            out.append("R %d %d %d" % (m.partition(), m.offset(), m.delivery_count()))
            got += 1
            if close_after:
                c.acknowledge(m)
        if out:
            print("\n".join(out), flush=True)
        if close_after and got >= close_after:
            break
    c.close()
    print("S closed", flush=True)


if __name__ == "__main__":
    main()
