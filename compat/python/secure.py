"""librdkafka (confluent-kafka) over a secured listener; run by
compat/security_librdkafka_kafkajs_test.go.

Usage: secure.py BOOTSTRAP TOPIC CONFIG_JSON

CONFIG_JSON holds the librdkafka security settings (security.protocol,
sasl.mechanism, sasl.username, ssl.ca.location, ...; samsa.oauth.token
and samsa.oauth.principal: an OAUTHBEARER token for an oauth_cb). Produces three
records to TOPIC, consumes them back with a group, and prints one JSON
line: {"ok": true} or {"ok": false, "error": "..."}.
"""

import json
import sys
import time
import uuid

import confluent_kafka as ck

WAIT = 60.0


def main():
    bootstrap, topic, conf = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    token = conf.pop("samsa.oauth.token", None)
    principal = conf.pop("samsa.oauth.principal", "")
    base = dict(conf, **{"bootstrap.servers": bootstrap})
    if token is not None:
        # OAUTHBEARER with a token made by the test: an oauth_cb hands it
        # to librdkafka (valid for the hour the test signed it for).
        base["oauth_cb"] = lambda _config: (token, time.time() + 3600, principal)
    errors = []
    p = ck.Producer(dict(base, **{"acks": "all", "error_cb": lambda e: errors.append(str(e))}))
    delivered = []
    for i in range(3):
        p.produce(topic, value=("secure-%d" % i).encode(),
                  on_delivery=lambda err, msg: delivered.append(err))
    left = p.flush(WAIT)
    if left or any(e is not None for e in delivered) or len(delivered) != 3:
        return fail("produce: %s %s" % (delivered, errors))
    c = ck.Consumer(dict(base, **{"group.id": "secure-" + uuid.uuid4().hex, "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    got = []
    deadline = time.time() + WAIT
    while len(got) < 3 and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            return fail("consume: %s" % m.error())
        got.append(m.value().decode())
    c.close()
    if sorted(got) != ["secure-0", "secure-1", "secure-2"]:
        return fail("consumed %s" % got)
    print(json.dumps({"ok": True}))


def fail(msg):
    print(json.dumps({"ok": False, "error": msg}))


if __name__ == "__main__":
    main()
