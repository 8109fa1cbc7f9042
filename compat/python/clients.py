"""The Python clients of samsa's compatibility matrix (go run ./compat/matrix).

Usage: clients.py BOOTSTRAP PREFIX CLIENT:SCENARIO...

CLIENT is "confluent-kafka ..." (librdkafka) or "kafka-python ...". Each
scenario prints one JSON line: {"client", "scenario", "ok", "error", "ms"}.
The records, checks and expected errors are those of compat/matrix/doc.go.
"""

import json
import os
import sys
import threading
import time
import traceback

WAIT = 60.0
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
SECURE = ("sasl_ssl", "mtls", "sasl_plain")
SECURE_RECORDS = 30


def security(scenario):
    """The listener and client settings of a security scenario, from the file
    compat/matrix writes ($SAMSA_MATRIX_SECURITY/security.json)."""
    d = os.environ.get("SAMSA_MATRIX_SECURITY")
    if not d:
        raise AssertionError("SAMSA_MATRIX_SECURITY is not set")
    with open(os.path.join(d, "security.json")) as f:
        conf = json.load(f)
    return conf["denied"], conf["scenarios"][scenario]


# ---- the registry scenario: compat/matrix/registry.go has the same ----

REG_RECORDS = 10
_REG_FIELDS = ['{"name":"name","type":"string"}', '{"name":"n","type":"int"}',
               '{"name":"email","type":"string","default":""}', '{"name":"phone","type":"string"}']
REG_SCHEMAS = ['{"type":"record","name":"User","namespace":"samsa.matrix","fields":[%s]}' % ",".join(_REG_FIELDS[:k])
               for k in (2, 3, 4)]


def registry_url():
    """The schema registry the brokers serve ($SAMSA_MATRIX_REGISTRY)."""
    url = os.environ.get("SAMSA_MATRIX_REGISTRY")
    if not url:
        raise AssertionError("SAMSA_MATRIX_REGISTRY is not set")
    return url


def reg_user(i, version):
    """Record i of the registry scenario, of schema version+1."""
    u = {"name": "user-%d" % i, "n": i}
    if version:
        u["email"] = "user-%d@example.org" % i
    return u


# ---- the records every client sends ----

def key(i):
    return ("key-%d" % (i % 37)).encode()


def value(i):
    return bytes((i * 31 + j * 7) & 0xFF for j in range(16 + i % 64))


def headers(i):
    return [("i", str(i).encode()), ("bin", bytes([0, 0xFF, i & 0xFF]))]


def check(where, k, v, hs):
    """The record's index, after checking key, value and headers byte for byte."""
    hs = [(h[0], bytes(h[1]) if h[1] is not None else None) for h in (hs or [])]
    if len(hs) != 2 or hs[0][0] != "i" or hs[1][0] != "bin":
        raise AssertionError("%s: headers %r, want [i, bin]" % (where, hs))
    i = int(hs[0][1].decode())
    if bytes(k or b"") != key(i) or bytes(v or b"") != value(i) or hs[1][1] != bytes([0, 0xFF, i & 0xFF]):
        raise AssertionError("%s: record %d differs from what was sent" % (where, i))
    return i


class ReadCheck:
    def __init__(self, n):
        self.n, self.seen, self.last = n, set(), {}

    def add(self, partition, offset, k, v, hs):
        i = check("partition %d offset %d" % (partition, offset), k, v, hs)
        prev = self.last.get(partition)
        if prev is not None and prev >= i:
            raise AssertionError("partition %d: record %d after %d" % (partition, i, prev))
        self.last[partition] = i
        if i in self.seen:
            raise AssertionError("record %d read twice" % i)
        self.seen.add(i)

    def done(self):
        return len(self.seen) == self.n

    def fail(self):
        raise AssertionError("read %d of %d records in %ds" % (len(self.seen), self.n, WAIT))


def wait_for(what, probe):
    deadline = time.time() + WAIT
    last = None
    while time.time() < deadline:
        try:
            v = probe()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - retried until the deadline
            last = e
        time.sleep(0.1)
    raise AssertionError("timed out waiting for %s%s" % (what, ": %r" % last if last else ""))


# ---- confluent-kafka (librdkafka) ----

class Confluent:
    def __init__(self, bootstrap, prefix, sec=None):
        import confluent_kafka as ck
        from confluent_kafka import admin as cka
        self.ck, self.cka = ck, cka
        self.bootstrap, self.prefix, self.sec = bootstrap, prefix, sec or {}
        self.admin = cka.AdminClient(dict(self.sec, **{"bootstrap.servers": bootstrap}))

    def create_topic(self, topic, partitions, configs=None):
        nt = self.cka.NewTopic(topic, num_partitions=partitions, replication_factor=1, config=configs or {})
        for f in self.admin.create_topics([nt], operation_timeout=30).values():
            f.result()
        # A new topic's leaders reach the brokers' metadata a moment after
        # CreateTopics answers; librdkafka's admin calls do not wait for them.
        def ready():
            t = self.admin.list_topics(topic=topic, timeout=10).topics.get(topic)
            return t is not None and t.error is None and len(t.partitions) == partitions \
                and all(p.leader >= 0 and p.error is None for p in t.partitions.values())
        wait_for(topic + " with leaders", ready)

    def producer(self, **extra):
        conf = dict(self.sec, **{"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5})
        conf.update(extra)
        return self.ck.Producer(conf)

    def produce(self, topic, rng, codec="none"):
        # librdkafka keeps the order within a partition across retries only
        # when idempotent (not its default).
        p = self.producer(**{"compression.type": codec, "enable.idempotence": True})
        errs = []

        def cb(err, _msg):
            if err is not None:
                errs.append(err)

        for i in rng:
            while True:
                try:
                    p.produce(topic, key=key(i), value=value(i), headers=headers(i), on_delivery=cb)
                    break
                except BufferError:
                    p.poll(0.05)
            p.poll(0)
        left = p.flush(WAIT)
        if left or errs:
            raise AssertionError("produce: %d undelivered, errors %s" % (left, errs[:3]))

    def consumer(self, group, **extra):
        conf = dict(self.sec, **{"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False,
                                 "auto.offset.reset": "earliest"})
        conf.update(extra)
        return self.ck.Consumer(conf)

    def poll(self, c, timeout):
        m = c.poll(timeout)
        if m is None:
            return None
        if m.error():
            raise self.ck.KafkaException(m.error())
        return m

    def commit(self, c):
        try:
            c.commit(asynchronous=False)
        except self.ck.KafkaException as e:
            if e.args[0].code() != self.ck.KafkaError._NO_OFFSET:
                raise

    def create(self):
        topic = self.prefix + "-create"
        self.create_topic(topic, 3)
        wait_for(topic + " with 3 partitions",
                 lambda: len(self.admin.list_topics(topic=topic, timeout=10).topics[topic].partitions) == 3)

    def produce_scenario(self):
        failed = []
        for codec in CODECS:
            topic = "%s-produce-%s" % (self.prefix, codec)
            try:
                self.create_topic(topic, 3)
                self.produce(topic, range(1000), codec)
                self.read_back(topic, 1000)
            except Exception as e:  # noqa: BLE001
                failed.append("%s: %s" % (codec, describe(e)))
        if failed:
            raise AssertionError("; ".join(failed))

    def read_back(self, topic, n, group="-readback", **extra):
        c = self.consumer(self.prefix + group, **extra)
        try:
            c.assign([self.ck.TopicPartition(topic, p, self.ck.OFFSET_BEGINNING) for p in range(3)])
            self.drain(c, n)
        finally:
            c.close()

    def drain(self, c, n):
        """Reads n records with c, each checked."""
        rc = ReadCheck(n)
        deadline = time.time() + WAIT
        while not rc.done():
            if time.time() > deadline:
                rc.fail()
            m = self.poll(c, 0.2)
            if m is not None:
                rc.add(m.partition(), m.offset(), m.key(), m.value(), m.headers())

    def group(self, scenario="group", **extra):
        """The group scenario; group848 runs it with group.protocol=consumer."""
        topic, group = self.prefix + "-" + scenario, self.prefix + "-" + scenario + "-g"
        self.create_topic(topic, 3)
        self.produce(topic, range(300))
        seen = set()
        cs = [self.consumer(group, **extra), self.consumer(group, **extra)]
        try:
            for c in cs:
                c.subscribe([topic])
            deadline = time.time() + WAIT
            while True:
                for c in cs:
                    got = False
                    for m in c.consume(100, 0.1):
                        if m.error():
                            raise self.ck.KafkaException(m.error())
                        seen.add(check("partition %d offset %d" % (m.partition(), m.offset()), m.key(), m.value(), m.headers()))
                        got = True
                    if got:
                        self.commit(c)
                a = [len(c.assignment()) for c in cs]
                if len(seen) == 300 and a[0] > 0 and a[1] > 0 and sum(a) == 3:
                    break
                if time.time() > deadline:
                    raise AssertionError("two members: read %d of 300 records, assigned %s partitions" % (len(seen), a))
            for c in cs:
                self.commit(c)
        finally:
            for c in cs:
                c.close()
        self.produce(topic, range(300, 400))
        c = self.consumer(group, **extra)
        try:
            c.subscribe([topic])
            again = set()
            deadline = time.time() + WAIT
            while len(again) < 100:
                if time.time() > deadline:
                    raise AssertionError("new member: read %d of the 100 new records" % len(again))
                m = self.poll(c, 0.2)
                if m is None:
                    continue
                i = check("partition %d offset %d" % (m.partition(), m.offset()), m.key(), m.value(), m.headers())
                if i < 300:
                    raise AssertionError("new member read committed record %d again (partition %d offset %d)"
                                         % (i, m.partition(), m.offset()))
                again.add(i)
            self.commit(c)
        finally:
            c.close()

    def admin_scenario(self):
        ck, cka = self.ck, self.cka
        topic, group = self.prefix + "-admin", self.prefix + "-admin-g"
        self.create_topic(topic, 3)
        base = (int(time.time()) - 3600) * 1000
        p = self.producer()
        errs = []
        for i in range(30):
            p.produce(topic, key=key(i), value=value(i), partition=0, timestamp=base + i * 1000,
                      on_delivery=lambda err, _m: err and errs.append(err))
        if p.flush(WAIT) or errs:
            raise AssertionError("produce: %s" % errs[:3])

        def offset(partition, spec):
            # A partition of a topic just made may answer NOT_LEADER_FOR_PARTITION
            # for a moment on Kafka, and on a cluster its leader may not know
            # the topic yet (UNKNOWN_TOPIC_OR_PART, which librdkafka does not
            # call retriable): those are asked again.
            tp = ck.TopicPartition(topic, partition)
            deadline = time.time() + WAIT
            while True:
                try:
                    return list(self.admin.list_offsets({tp: spec}).values())[0].result().offset
                except ck.KafkaException as e:
                    err = e.args[0]
                    if time.time() > deadline or not (err.retriable() or err.code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART):
                        raise AssertionError("list offsets of %s-%d: %s" % (topic, partition, err))
                time.sleep(0.1)

        got = (offset(0, cka.OffsetSpec.earliest()), offset(0, cka.OffsetSpec.latest()),
               offset(0, cka.OffsetSpec.for_timestamp(base + 10500)), offset(1, cka.OffsetSpec.latest()))
        if got != (0, 30, 11, 0):
            raise AssertionError("list offsets: earliest, latest, by time, empty partition latest = %s, want (0, 30, 11, 0)" % (got,))

        c = self.consumer(group)
        try:
            c.subscribe([topic])
            n, deadline = 0, time.time() + WAIT
            while n < 30:
                if time.time() > deadline:
                    raise AssertionError("group member read %d of 30 records" % n)
                if self.poll(c, 0.2) is not None:
                    n += 1
            self.commit(c)
            d = list(self.admin.describe_consumer_groups([group]).values())[0].result()
            if len(d.members) != 1 or len(d.members[0].assignment.topic_partitions) != 3:
                raise AssertionError("describe group: %d members %s, want one with 3 partitions"
                                     % (len(d.members), [m.assignment.topic_partitions for m in d.members]))
            req = ck.ConsumerGroupTopicPartitions(group)
            res = list(self.admin.list_consumer_group_offsets([req]).values())[0].result()
            offs = {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions}
            if offs.get((topic, 0)) != 30:
                raise AssertionError("group offsets %s, want partition 0 at 30" % offs)
        finally:
            c.close()

        res = cka.ConfigResource(cka.ResourceType.TOPIC, topic)

        def configs():
            return list(self.admin.describe_configs([res]).values())[0].result()

        cfg = configs()
        cp, rm = cfg.get("cleanup.policy"), cfg.get("retention.ms")
        if cp is None or cp.value != "delete" or rm is None or rm.value != "604800000":
            raise AssertionError("describe configs: cleanup.policy %s, retention.ms %s" % (cp, rm))
        alter = cka.ConfigResource(cka.ResourceType.TOPIC, topic, incremental_configs=[
            cka.ConfigEntry("retention.ms", "3600000", incremental_operation=cka.AlterConfigOpType.SET)])
        for f in self.admin.incremental_alter_configs([alter]).values():
            f.result()
        wait_for("retention.ms altered", lambda: configs()["retention.ms"].value == "3600000"
                 and configs()["retention.ms"].source == cka.ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
        for f in self.admin.delete_topics([topic], operation_timeout=30).values():
            f.result()
        wait_for(topic + " gone", lambda: topic not in self.admin.list_topics(timeout=10).topics)

    def errors(self):
        ck = self.ck
        missing, big = self.prefix + "-errors-missing", self.prefix + "-errors-big"
        got = self.send_error(missing, os.urandom(16), **{"message.timeout.ms": 20000,
                                                           "topic.metadata.propagation.max.ms": 3000})
        codes = (ck.KafkaError._UNKNOWN_TOPIC, ck.KafkaError.UNKNOWN_TOPIC_OR_PART)
        if got is None or got.code() not in codes:
            raise AssertionError("produce to a missing topic: got %s, want UNKNOWN_TOPIC_OR_PART or _UNKNOWN_TOPIC" % got)
        if missing in self.admin.list_topics(timeout=10).topics:
            raise AssertionError("a produce created %s with auto-creation off" % missing)
        self.create_topic(big, 1, {"max.message.bytes": "2048"})
        small = self.send_error(big, bytes(100))
        if small is not None:
            raise AssertionError("a 100-byte record: %s" % small)
        got = self.send_error(big, os.urandom(4096))
        if got is None or got.code() != ck.KafkaError.MSG_SIZE_TOO_LARGE:
            raise AssertionError("produce 4096 bytes to a topic with max.message.bytes=2048: got %s, want MSG_SIZE_TOO_LARGE" % got)

    def send_error(self, topic, val, **extra):
        p = self.producer(**extra)
        res = []
        p.produce(topic, value=val, on_delivery=lambda err, _m: res.append(err))
        p.flush(WAIT)
        if not res:
            raise AssertionError("no delivery report for %s" % topic)
        return res[0]

    def txn(self):
        """Scenario 7: commit 30, abort 30, commit 30; read_committed reads the 60; a
        second producer of the id fences the first."""
        topic, tid = self.prefix + "-txn", self.prefix + "-txn-id"
        self.create_topic(topic, 3)
        p = self.producer(**{"transactional.id": tid, "transaction.timeout.ms": 30000})
        p.init_transactions(WAIT)

        def txn(rng, commit):
            p.begin_transaction()
            for i in rng:
                p.produce(topic, key=key(i), value=value(i) if commit else b"aborted", headers=headers(i),
                          partition=i % 3)
            p.flush(WAIT)
            if commit:
                p.commit_transaction(WAIT)
            else:
                p.abort_transaction(WAIT)

        txn(range(30), True)
        txn(range(30), False)
        txn(range(30, 60), True)
        self.read_back(topic, 60, "-txn-read", **{"isolation.level": "read_committed"})
        p2 = self.producer(**{"transactional.id": tid})
        p2.init_transactions(WAIT)
        try:
            txn(range(60, 61), True)
        except self.ck.KafkaException as e:
            err = e.args[0]
            if err.fatal() or err.code() in (self.ck.KafkaError._FENCED, self.ck.KafkaError.PRODUCER_FENCED,
                                             self.ck.KafkaError.INVALID_PRODUCER_EPOCH):
                return
            raise AssertionError("the fenced producer's transaction: %s, want a fencing error" % err)
        raise AssertionError("the fenced producer's transaction committed")

    def secure(self, scenario):
        """Over the scenario's listener: 30 records, read back by a group
        member; a produce to the denied topic fails TOPIC_AUTHORIZATION_FAILED."""
        denied, sc = security(scenario)
        cl = Confluent(sc["bootstrap"], self.prefix, sc["librdkafka"])
        topic = "sec-%s-%s" % (self.prefix, scenario)
        cl.produce(topic, range(SECURE_RECORDS))
        c = cl.consumer(topic + "-g")
        try:
            c.subscribe([topic])
            cl.drain(c, SECURE_RECORDS)
            c.commit(asynchronous=False)
        finally:
            c.close()
        got = cl.send_error(denied, value(0), **{"message.timeout.ms": 20000})
        if got is None or got.code() != self.ck.KafkaError.TOPIC_AUTHORIZATION_FAILED:
            raise AssertionError("produce to %s without an ACL: got %s, want TOPIC_AUTHORIZATION_FAILED" % (denied, got))

    def registry(self):
        """Its schema registry client and Avro serdes against the registry."""
        import struct
        from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
        from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
        from confluent_kafka.schema_registry.error import SchemaRegistryError
        from confluent_kafka.serialization import MessageField, SerializationContext
        topic = self.prefix + "-registry"
        subject = topic + "-value"
        client = SchemaRegistryClient({"url": registry_url()})
        self.create_topic(topic, 1)
        ctx = SerializationContext(topic, MessageField.VALUE)
        p = self.producer()
        ids = []
        for v in (0, 1):
            ser = AvroSerializer(client, REG_SCHEMAS[v])  # registers it
            for i in range(v * REG_RECORDS, (v + 1) * REG_RECORDS):
                p.produce(topic, value=ser(reg_user(i, v), ctx))
            if p.flush(WAIT):
                raise AssertionError("produce: records undelivered")
            ids.append(client.lookup_schema(subject, Schema(REG_SCHEMAS[v], "AVRO")).schema_id)
        try:
            client.register_schema(subject, Schema(REG_SCHEMAS[2], "AVRO"))
            raise AssertionError("version 3 (a field without a default) registered, want a 409")
        except SchemaRegistryError as e:
            if e.http_status_code != 409:
                raise
        if client.get_versions(subject) != [1, 2]:
            raise AssertionError("versions of %s: %s, want [1, 2]" % (subject, client.get_versions(subject)))
        deser = AvroDeserializer(client)
        c = self.consumer(self.prefix + "-registry-g")
        got = []
        try:
            c.assign([self.ck.TopicPartition(topic, 0, self.ck.OFFSET_BEGINNING)])
            deadline = time.time() + WAIT
            while len(got) < 2 * REG_RECORDS and time.time() < deadline:
                m = self.poll(c, 0.2)
                if m is None:
                    continue
                i = len(got)
                magic, sid = struct.unpack(">bI", m.value()[:5])
                if magic != 0 or sid != ids[i // REG_RECORDS]:
                    raise AssertionError("record %d: magic %d id %d, want 0 and %d" % (i, magic, sid, ids[i // REG_RECORDS]))
                got.append(deser(m.value(), ctx))
        finally:
            c.close()
        want = [reg_user(i, i // REG_RECORDS) for i in range(2 * REG_RECORDS)]
        if got != want:
            raise AssertionError("read %s, want %s" % (got[:3], want[:3]))

    def run(self, scenario):
        if scenario in SECURE:
            return self.secure(scenario)
        {"create": self.create, "produce": self.produce_scenario, "group": self.group,
         "group848": lambda: self.group("group848", **{"group.protocol": "consumer"}),
         "admin": self.admin_scenario, "errors": self.errors, "txn": self.txn, "registry": self.registry}[scenario]()


# ---- kafka-python ----

class KafkaPython:
    def __init__(self, bootstrap, prefix, sec=None):
        import kafka
        import kafka.admin as ka
        import kafka.errors as ke
        self.k, self.ka, self.ke = kafka, ka, ke
        self.bootstrap, self.prefix, self.sec = bootstrap, prefix, sec or {}
        # The security scenarios need no admin client (KafkaAdminClient
        # connects at once).
        self.admin = ka.KafkaAdminClient(bootstrap_servers=bootstrap) if sec is None else None

    def create_topic(self, topic, partitions, configs=None):
        self.admin.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1,
                                          "configs": configs or {}}}, wait_for_metadata=True)

    def producer(self, codec=None, **extra):
        return self.k.KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5,
                                    compression_type=codec, **dict(self.sec, **extra))

    def produce(self, topic, rng, codec=None):
        p = self.producer(codec)
        try:
            fs = [p.send(topic, key=key(i), value=value(i), headers=headers(i)) for i in rng]
            for f in fs:
                f.get(timeout=WAIT)
        finally:
            p.close()

    def consumer(self, group):
        # A member closed while its JoinGroup was in flight can stay in the
        # group until the rebalance timeout (max_poll_interval_ms, 300 s by
        # default) ends; a shorter one bounds how long the next member waits.
        return self.k.KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=group, enable_auto_commit=False,
                                    auto_offset_reset="earliest", session_timeout_ms=10000,
                                    max_poll_interval_ms=20000, **self.sec)

    def subscribe(self, c, topic):
        c.subscribe([topic])
        # Load the topic's partitions before the first poll. A leader that
        # joins before it knows them assigns nothing, and its rejoin when they
        # arrive is driven by kafka-python's metadata snapshot, not its rejoin
        # flag: once its own assignment updates the snapshot, a poll that timed
        # out mid-join stops waiting for the SyncGroup answer, so the member
        # never takes its partitions and stops heartbeating (kafka-python
        # 3.0.12; against Apache Kafka too, one run in five on a busy machine).
        wait_for("the consumer to know " + topic, lambda: len(c.partitions_for_topic(topic)) == 3)

    def create(self):
        topic = self.prefix + "-create"
        self.create_topic(topic, 3)

        def probe():
            ds = [d for d in self.admin.describe_topics([topic]) if d["name"] == topic]
            return ds and ds[0]["error_code"] == 0 and len(ds[0]["partitions"]) == 3
        wait_for(topic + " with 3 partitions", probe)
        if topic not in self.admin.list_topics():
            raise AssertionError("list_topics lacks " + topic)

    def produce_scenario(self):
        failed = []
        for codec in CODECS:
            topic = "%s-produce-%s" % (self.prefix, codec)
            try:
                self.create_topic(topic, 3)
                self.produce(topic, range(1000), None if codec == "none" else codec)
                self.read_back(topic, 1000)
            except Exception as e:  # noqa: BLE001
                failed.append("%s: %s" % (codec, describe(e)))
        if failed:
            raise AssertionError("; ".join(failed))

    def read_back(self, topic, n):
        c = self.consumer(None)
        try:
            tps = [self.k.TopicPartition(topic, p) for p in range(3)]
            c.assign(tps)
            c.seek_to_beginning(*tps)
            self.drain(c, n)
        finally:
            c.close()

    def drain(self, c, n):
        """Reads n records with c, each checked."""
        rc = ReadCheck(n)
        deadline = time.time() + WAIT
        while not rc.done():
            if time.time() > deadline:
                rc.fail()
            for _tp, rs in c.poll(timeout_ms=200).items():
                for r in rs:
                    rc.add(r.partition, r.offset, r.key, r.value, r.headers)

    def group(self):
        topic, group = self.prefix + "-group", self.prefix + "-group-g"
        self.create_topic(topic, 3)
        self.produce(topic, range(300))
        # Each member polls in a thread of its own: kafka-python's consumer
        # is not thread-safe, and two members polled in turn by one thread
        # can leave a rebalance waiting on the member not being polled.
        seen, lock, stop = set(), threading.Lock(), threading.Event()
        assigned, errors = [0, 0], []

        def member(k):
            c = self.consumer(group)
            try:
                self.subscribe(c, topic)
                while not stop.is_set():
                    got = False
                    for _tp, rs in c.poll(timeout_ms=100).items():
                        for r in rs:
                            i = check("partition %d offset %d" % (r.partition, r.offset), r.key, r.value, r.headers)
                            with lock:
                                seen.add(i)
                            got = True
                    if got:
                        c.commit()
                    assigned[k] = len(c.assignment())
            except Exception as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)
            finally:
                c.close()

        threads = [threading.Thread(target=member, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        try:
            deadline = time.time() + WAIT
            while not errors:
                with lock:
                    n = len(seen)
                a = list(assigned)
                if n == 300 and a[0] > 0 and a[1] > 0 and sum(a) == 3:
                    break
                if time.time() > deadline:
                    raise AssertionError("two members: read %d of 300 records, assigned %s partitions" % (n, a))
                time.sleep(0.05)
        finally:
            stop.set()
            for t in threads:
                t.join()
        if errors:
            raise errors[0]
        self.produce(topic, range(300, 400))
        c = self.consumer(group)
        try:
            self.subscribe(c, topic)
            again = set()
            deadline = time.time() + WAIT
            while len(again) < 100:
                if time.time() > deadline:
                    raise AssertionError("new member: read %d of the 100 new records" % len(again))
                for _tp, rs in c.poll(timeout_ms=200).items():
                    for r in rs:
                        i = check("partition %d offset %d" % (r.partition, r.offset), r.key, r.value, r.headers)
                        if i < 300:
                            raise AssertionError("new member read committed record %d again (partition %d offset %d)"
                                                 % (i, r.partition, r.offset))
                        again.add(i)
            c.commit()
        finally:
            c.close()

    def admin_scenario(self):
        k, ka = self.k, self.ka
        topic, group = self.prefix + "-admin", self.prefix + "-admin-g"
        self.create_topic(topic, 3)
        base = (int(time.time()) - 3600) * 1000
        p = self.producer()
        try:
            for i in range(30):
                p.send(topic, key=key(i), value=value(i), partition=0, timestamp_ms=base + i * 1000).get(timeout=WAIT)
        finally:
            p.close()
        tp0, tp1 = k.TopicPartition(topic, 0), k.TopicPartition(topic, 1)

        def offset(tp, spec):
            deadline = time.time() + WAIT
            while True:
                try:
                    return self.admin.list_partition_offsets({tp: spec})[tp].offset
                except self.ke.KafkaError as e:
                    if not getattr(e, "retriable", False) or time.time() > deadline:
                        raise
                time.sleep(0.1)

        got = (offset(tp0, ka.OffsetSpec.EARLIEST), offset(tp0, ka.OffsetSpec.LATEST),
               offset(tp0, base + 10500), offset(tp1, ka.OffsetSpec.LATEST))
        if got != (0, 30, 11, 0):
            raise AssertionError("list offsets: earliest, latest, by time, empty partition latest = %s, want (0, 30, 11, 0)" % (got,))

        c = self.consumer(group)
        try:
            self.subscribe(c, topic)
            n, deadline = 0, time.time() + WAIT
            while n < 30:
                if time.time() > deadline:
                    raise AssertionError("group member read %d of 30 records" % n)
                n += sum(len(rs) for rs in c.poll(timeout_ms=200).values())
            c.commit()
            d = self.admin.describe_groups([group])[group]
            members = d.get("members", [])
            parts = []
            if len(members) == 1:
                a = members[0].get("member_assignment") or {}
                for t in (a.get("assigned_partitions") or a.get("topics") or []):
                    parts.extend(t.get("partitions", []))
            if len(members) != 1 or len(parts) != 3:
                raise AssertionError("describe group: %s, want one member with 3 partitions" % d)
            offs = self.admin.list_group_offsets({group: None})[group]
            if tp0 not in offs or offs[tp0].offset != 30:
                raise AssertionError("group offsets %s, want partition 0 at 30" % offs)
        finally:
            c.close()

        res = ka.ConfigResource(ka.ConfigResourceType.TOPIC, topic)

        def configs():
            return self.admin.describe_configs([res], config_filter="all")["topic"][topic]

        cfg = configs()
        cp, rm = cfg.get("cleanup.policy", {}), cfg.get("retention.ms", {})
        if cp.get("value") != "delete" or rm.get("value") != "604800000":
            raise AssertionError("describe configs: cleanup.policy %s, retention.ms %s" % (cp, rm))
        self.admin.alter_configs([ka.ConfigResource(ka.ConfigResourceType.TOPIC, topic,
                                                    configs={"retention.ms": "3600000"})])
        wait_for("retention.ms altered", lambda: configs()["retention.ms"]["value"] == "3600000"
                 and configs()["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG")
        self.admin.delete_topics([topic])
        wait_for(topic + " gone", lambda: topic not in self.admin.list_topics())

    def errors(self):
        ke = self.ke
        missing, big = self.prefix + "-errors-missing", self.prefix + "-errors-big"
        got = self.send_error(missing, os.urandom(16), max_block_ms=3000)
        if not isinstance(got, (ke.KafkaTimeoutError, ke.UnknownTopicOrPartitionError)):
            raise AssertionError("produce to a missing topic: got %r, want KafkaTimeoutError or UnknownTopicOrPartitionError" % got)
        if missing in self.admin.list_topics():
            raise AssertionError("a produce created %s with auto-creation off" % missing)
        self.create_topic(big, 1, {"max.message.bytes": "2048"})
        small = self.send_error(big, bytes(100))
        if small is not None:
            raise AssertionError("a 100-byte record: %r" % small)
        got = self.send_error(big, os.urandom(4096))
        if not isinstance(got, ke.MessageSizeTooLargeError):
            raise AssertionError("produce 4096 bytes to a topic with max.message.bytes=2048: got %r, want MessageSizeTooLargeError" % got)

    def send_error(self, topic, val, **extra):
        p = self.producer(None, **extra)
        try:
            p.send(topic, value=val).get(timeout=WAIT)
            return None
        except Exception as e:  # noqa: BLE001 - the error is the result
            return e
        finally:
            p.close(timeout=5)

    def txn(self):
        """Scenario 7, as Confluent.txn."""
        topic, tid = self.prefix + "-txn", self.prefix + "-txn-id"
        self.create_topic(topic, 3)
        p = self.producer(None, transactional_id=tid, transaction_timeout_ms=30000)
        try:
            p.init_transactions()

            def txn(rng, commit):
                p.begin_transaction()
                fs = [p.send(topic, key=key(i), value=value(i) if commit else b"aborted", headers=headers(i),
                             partition=i % 3) for i in rng]
                for f in fs:
                    f.get(timeout=WAIT)
                if commit:
                    p.commit_transaction()
                else:
                    p.abort_transaction()

            txn(range(30), True)
            txn(range(30), False)
            txn(range(30, 60), True)
            c = self.k.KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                                     isolation_level="read_committed")
            try:
                tps = [self.k.TopicPartition(topic, i) for i in range(3)]
                c.assign(tps)
                c.seek_to_beginning(*tps)
                rc = ReadCheck(60)
                deadline = time.time() + WAIT
                while not rc.done():
                    if time.time() > deadline:
                        rc.fail()
                    for _tp, rs in c.poll(timeout_ms=200).items():
                        for r in rs:
                            rc.add(r.partition, r.offset, r.key, r.value, r.headers)
            finally:
                c.close()
            p2 = self.producer(None, transactional_id=tid)
            try:
                p2.init_transactions()
            finally:
                p2.close(timeout=5)
            try:
                txn(range(60, 61), True)
            except Exception as e:  # noqa: BLE001 - the fencing error is the point
                if "Fenced" in type(e).__name__ or "InvalidProducerEpoch" in type(e).__name__ \
                        or "fenced" in str(e).lower() or "epoch" in str(e).lower():
                    return
                raise AssertionError("the fenced producer's transaction: %s, want a fencing error" % describe(e))
            raise AssertionError("the fenced producer's transaction committed")
        finally:
            p.close(timeout=5)

    def secure(self, scenario):
        """Over the scenario's listener: 30 records, read back by a group
        member; a produce to the denied topic fails with
        TopicAuthorizationFailedError."""
        denied, sc = security(scenario)
        cl = KafkaPython(sc["bootstrap"], self.prefix, sc["kafka_python"])
        topic = "sec-%s-%s" % (self.prefix, scenario)
        cl.produce(topic, range(SECURE_RECORDS))
        c = cl.consumer(topic + "-g")
        try:
            cl.subscribe(c, topic)
            cl.drain(c, SECURE_RECORDS)
            c.commit()
        finally:
            c.close()
        got = cl.send_error(denied, value(0), max_block_ms=20000)
        if not isinstance(got, self.ke.TopicAuthorizationFailedError):
            raise AssertionError("produce to %s without an ACL: got %r, want TopicAuthorizationFailedError" % (denied, got))

    def run(self, scenario):
        if scenario in SECURE:
            return self.secure(scenario)
        {"create": self.create, "produce": self.produce_scenario, "group": self.group,
         "admin": self.admin_scenario, "errors": self.errors, "txn": self.txn}[scenario]()


def describe(e):
    s = "%s: %s" % (type(e).__name__, e)
    return s[:400]


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    bootstrap, prefix = sys.argv[1], sys.argv[2]
    clients = {}
    for arg in sys.argv[3:]:
        client, _, scenario = arg.rpartition(":")
        start = time.time()
        err = ""
        try:
            if client not in clients:
                impl = Confluent if client.startswith("confluent-kafka") else KafkaPython
                clients[client] = impl(bootstrap, prefix)
            clients[client].run(scenario)
        except Exception as e:  # noqa: BLE001 - reported as the cell's error
            err = describe(e)
            traceback.print_exc(file=sys.stderr)
        print(json.dumps({"client": client, "scenario": scenario, "ok": not err, "error": err,
                          "ms": int((time.time() - start) * 1000)}), flush=True)


if __name__ == "__main__":
    main()
