package restproxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/samsa-io/samsa/internal/browsertest"
)

// corsPageJS is what a web application's page does with the proxy: JSON
// produced, a consumer instance created, subscribed and read until it
// answers the record, then deleted (a method the proxy's CORS does not
// allow). It resolves to the answers, or to the error's name (TypeError:
// the browser kept the answer from the page).
const corsPageJS = `(async (u) => {
	const out = {};
	const call = async (what, url, init) => {
		try {
			const r = await fetch(url, init);
			const text = await r.text();
			out[what] = {status: r.status, body: text ? JSON.parse(text) : null};
		} catch (e) {
			out[what] = e.name;
		}
		return out[what];
	};
	const v2 = {"Content-Type": "application/vnd.kafka.v2+json"};
	await call("produce", u + "/topics/browser", {method: "POST",
		headers: {"Content-Type": "application/vnd.kafka.json.v2+json"}, body: JSON.stringify({records: [{value: {from: "browser"}}]})});
	const inst = await call("create", u + "/consumers/web", {method: "POST", headers: v2,
		body: JSON.stringify({name: "tab", format: "json", "auto.offset.reset": "earliest"})});
	if (typeof inst === "string") return JSON.stringify(out);
	const base = inst.body.base_uri;
	await call("subscribe", base + "/subscription", {method: "POST", headers: v2, body: JSON.stringify({topics: ["browser"]})});
	for (let i = 0; i < 100; i++) {
		const r = await call("records", base + "/records?timeout=200", {headers: {Accept: "application/vnd.kafka.json.v2+json"}});
		if (typeof r === "string" || r.body.length > 0) break;
	}
	await call("delete", base, {method: "DELETE"});
	return JSON.stringify(out);
})(%q)`

// TestRESTProxyCORSInBrowser: a page in Chromium, served from another
// origin than the proxy's, produces and consumes with fetch() when its
// origin is in access.control.allow.origin (preflights answered as
// configured), is kept from a method the configuration leaves out, and a
// page of an origin not in the list can neither read an answer nor get a
// record produced (its preflight fails, the POST is never sent).
func TestRESTProxyCORSInBrowser(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>an application</title>")
	}))
	t.Cleanup(site.Close)
	b := startProxy(t, map[string]string{
		"access.control.allow.origin":  site.URL, // http://127.0.0.1:PORT
		"access.control.allow.methods": "GET,POST",
		"access.control.allow.headers": "Content-Type,Accept",
	})
	b.createTopic(t, "browser", 1)
	proxy := strings.Replace(b.url, "127.0.0.1", "localhost", 1)
	tab := browsertest.Start(t)

	page := func(url string) map[string]any {
		t.Helper()
		if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
		res, err := chromedp.Run(tab, chromedp.Evaluate[string](fmt.Sprintf(corsPageJS, proxy), chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(res), &out); err != nil {
			t.Fatalf("%s: %v", res, err)
		}
		return out
	}
	answer := func(v any) string { b, _ := json.Marshal(v); return string(b) }

	got := page(site.URL + "/")
	for what, want := range map[string]string{
		"produce":   `{"body":{"key_schema_id":null,"offsets":[{"error":null,"error_code":null,"offset":0,"partition":0}],"value_schema_id":null},"status":200}`,
		"subscribe": `{"body":null,"status":204}`,
		"records":   `{"body":[{"key":null,"offset":0,"partition":0,"topic":"browser","value":{"from":"browser"}}],"status":200}`,
		"delete":    `"TypeError"`,
	} {
		if answer(got[what]) != want {
			t.Errorf("allowed origin, %s: %s, want %s", what, answer(got[what]), want)
		}
	}

	// The same page from http://localhost:PORT, an origin not listed.
	got = page(strings.Replace(site.URL, "127.0.0.1", "localhost", 1) + "/")
	if answer(got) != `{"create":"TypeError","produce":"TypeError"}` {
		t.Errorf("origin not allowed: %s", answer(got))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := b.adm.ListEndOffsets(ctx, "browser")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("browser", 0); o.Offset != 1 {
		t.Errorf("the topic ends at %d: a refused page's record was produced", o.Offset)
	}
}
