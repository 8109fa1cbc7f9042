"""Helpers of the REST proxy scripts: a consumer instance read over HTTP."""
import sys
import time

import requests

V2 = "application/vnd.kafka.v2+json"


def check(cond, what):
    if not cond:
        print("FAILED: " + what)
        sys.exit(1)


def read_instance(url, group, fmt, topics, n):
    """Creates instance "one" of group in fmt, subscribes it to topics and
    reads n records; returns the session, the instance's base_uri and the
    records."""
    s = requests.Session()
    s.headers["Content-Type"] = V2
    r = s.post(url + "/consumers/" + group, json={"name": "one", "format": fmt, "auto.offset.reset": "earliest"})
    check(r.status_code == 200, "create: %d %s" % (r.status_code, r.text))
    base = r.json()["base_uri"]
    check(base == url + "/consumers/" + group + "/instances/one", "base_uri " + base)
    r = s.post(base + "/subscription", json={"topics": topics})
    check(r.status_code == 204, "subscribe: %d %s" % (r.status_code, r.text))
    recs = []
    deadline = time.time() + 60
    while len(recs) < n and time.time() < deadline:
        r = s.get(base + "/records", params={"timeout": 500}, headers={"Accept": "application/vnd.kafka.%s.v2+json" % fmt})
        check(r.status_code == 200, "records: %d %s" % (r.status_code, r.text))
        recs += r.json()
    check(len(recs) == n, "read %d of %d records over HTTP" % (len(recs), n))
    return s, base, recs
