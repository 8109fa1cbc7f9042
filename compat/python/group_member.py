"""One member of a consumer group for compat's group scenarios (librdkafka
through confluent-kafka): group_member.py BOOTSTRAP GROUP TOPIC NAME PROTOCOL
with PROTOCOL classic or consumer (KIP-848). After every poll it prints
"R partition offset" for each record read, commits them synchronously and
prints "C partition next-offset" for each partition committed. A line
"leave" on stdin (or its end) closes the consumer, which leaves the group;
the test kills the process to crash it."""

import sys
import threading

from confluent_kafka import Consumer, TopicPartition


def main():
    bootstrap, group, topic, name, protocol = sys.argv[1:6]
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": name,
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    if protocol == "classic":
        conf.update({"session.timeout.ms": 3000, "heartbeat.interval.ms": 300,
                     "partition.assignment.strategy": "cooperative-sticky"})
    leave = threading.Event()

    def read_stdin():
        for line in sys.stdin:
            if line.strip() == "leave":
                break
        leave.set()

    threading.Thread(target=read_stdin, daemon=True).start()
    c = Consumer(conf)
    c.subscribe([topic])
    print("S started", flush=True)
    while not leave.is_set():
        msgs = c.consume(num_messages=100, timeout=0.2)
        commit = {}
        out = []
        for m in msgs:
            if m.error():
                continue
            out.append("R %d %d" % (m.partition(), m.offset()))
            commit[m.partition()] = m.offset() + 1
        if not commit:
            continue
        print("\n".join(out), flush=True)
        try:
            c.commit(offsets=[TopicPartition(topic, p, o) for p, o in commit.items()], asynchronous=False)
            print("\n".join("C %d %d" % (p, o) for p, o in commit.items()), flush=True)
        except Exception as e:  # a commit refused mid-rebalance
            print("E commit: %s" % e, flush=True)
    c.close()
    print("S left", flush=True)


if __name__ == "__main__":
    main()
