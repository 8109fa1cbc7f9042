package broker

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/restproxy"
	"github.com/samsa-io/samsa/security"
)

// serveProxy serves Confluent REST Proxy's API on
// samsa.http.proxy.listener, once the broker's listeners are up: the
// proxy is a Kafka client of this broker's first PLAINTEXT or
// SASL_PLAINTEXT listener (the console's), so that its consumer
// instances are members of their groups as any client is, and on a SASL
// listener every call is made, and authorized, as the request's user.
func (b *Broker) serveProxy() error {
	if b.settings.HTTPProxyListener == "" {
		return nil
	}
	scheme, addr := config.RegistryListener(b.settings.HTTPProxyListener)
	var srvTLS *security.TLS
	if scheme == "https" {
		get := func(key string) string { return b.props.ListenerString(proxyTLSName, key) }
		t, err := security.NewTLS(security.TLSConfigFrom(get), b.log.With("listener", proxyTLSName))
		if err != nil {
			return fmt.Errorf("broker: samsa.http.proxy.listener %s: %w", b.settings.HTTPProxyListener, err)
		}
		srvTLS = t
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("broker: samsa.http.proxy.listener %s: %w", addr, err)
	}
	if srvTLS != nil {
		ln = tls.NewListener(ln, srvTLS.ServerConfig())
	}
	bootstrap, mechanism := b.consoleBootstrap()
	cfg := restproxy.Config{
		Bootstrap:       bootstrap,
		SASLMechanism:   mechanism,
		Logger:          b.log.With("component", "restproxy"),
		InstanceTimeout: b.settings.ProxyInstanceTimeout,
		RequestTimeout:  b.settings.ProxyRequestTimeout,
		RequestMaxBytes: b.settings.ProxyRequestMaxBytes,
		CORS: restproxy.CORS{AllowOrigin: b.settings.ProxyCORSOrigin,
			AllowMethods: b.settings.ProxyCORSMethods, AllowHeaders: b.settings.ProxyCORSHeaders},
	}
	if b.registry != nil {
		// The avro and jsonschema formats go through this broker's
		// registry, as the request's user.
		cfg.RegistryURL = b.registryScheme() + "://" + dialable(b.registry.Addr())
		if b.registryTLS != nil {
			cfg.RegistryHTTP = &http.Client{Timeout: 30 * time.Second,
				Transport: &http.Transport{TLSClientConfig: b.registryTLS.ClientConfig("")}}
		}
	}
	b.proxy = restproxy.New(cfg)
	b.proxy.Serve(ln)
	b.log.Info("serving the REST proxy", "url", scheme+"://"+b.proxy.Addr()+"/")
	return nil
}

// proxyTLSName is the listener name whose ssl.* overrides
// (listener.name.rest_proxy.ssl.*) an https:// REST proxy listener serves
// with.
const proxyTLSName = "rest_proxy"

// closeProxy stops the REST proxy: its consumer instances leave their
// groups.
func (b *Broker) closeProxy() {
	if b.proxy != nil {
		b.proxy.Close()
	}
}

// ProxyAddr is the bound address of samsa.http.proxy.listener, or "".
func (b *Broker) ProxyAddr() string {
	if b.proxy == nil {
		return ""
	}
	return b.proxy.Addr()
}
