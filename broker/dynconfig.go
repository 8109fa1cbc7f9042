package broker

// Dynamic broker configs (Kafka's DynamicBrokerConfig): AlterConfigs and
// IncrementalAlterConfigs on the BROKER resource store them in etcd
// (controller.UpdateBrokerConfig), for one broker (its id) or as the
// cluster-wide default (""); every broker watches them and layers them
// over its static properties (config.Props.WithDynamic). What samsa reads
// from the layered properties takes the change without a restart: the
// topic defaults under each topic's overrides (retention, segments,
// cleanup, message size, min.insync.replicas: the logs are reconfigured
// at once), the log cleaner's backoff, and a TLS listener's certificates
// and settings (listener.name.<l>.ssl.*, from the next handshake on). DescribeConfigs reports the
// sources DYNAMIC_BROKER_CONFIG and DYNAMIC_DEFAULT_BROKER_CONFIG.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/security"
)

// cfg returns the broker properties in effect: the static ones with the
// dynamic broker configs over them.
func (b *Broker) cfg() *config.Props { return b.dynProps.Load() }

// reloadDynamicConfigs reads the dynamic broker configs from etcd and puts
// them in effect; it returns the etcd revision read at. A stored set that
// no longer validates (written by another version) is logged and left
// out, as Kafka skips an invalid dynamic config.
func (b *Broker) reloadDynamicConfigs(ctx context.Context) (int64, error) {
	def, mine, rev, err := b.store.BrokerConfigs(ctx, b.nodeID)
	if err != nil {
		return 0, err
	}
	def, mine = b.decodePasswords(def, true), b.decodePasswords(mine, true)
	p, err := b.props.WithDynamic(def, mine)
	if err != nil {
		b.log.Warn("dynamic broker configs: ignoring an invalid stored set", "err", err)
		if p, err = b.props.WithDynamic(nil, nil); err != nil {
			return 0, err
		}
	}
	b.dynProps.Store(p)
	b.reconfigureListeners(p)
	b.applyCordon(ctx, p)
	return rev, nil
}

// reconfigureListeners gives each TLS listener the ssl settings of p
// (listener.name.<l>.ssl.*, a dynamic per-broker config, as Kafka 4
// reloads listener certificates through AlterConfigs) when they changed.
func (b *Broker) reconfigureListeners(p *config.Props) {
	for i, ln := range b.settings.Listeners {
		if i >= len(b.lnSec) || b.lnSec[i] == nil || b.lnSec[i].tls == nil {
			continue
		}
		t := b.lnSec[i].tls
		next := security.TLSConfigFrom(func(key string) string { return p.ListenerString(ln.Name, key) })
		if reflect.DeepEqual(next, t.Settings()) {
			continue
		}
		if err := t.Reconfigure(next); err != nil {
			b.log.Warn("dynamic listener config: the new TLS settings do not load; keeping the old ones", "listener", ln.Name, "err", err)
			continue
		}
		b.log.Info("dynamic listener config: TLS settings reloaded", "listener", ln.Name)
	}
}

// alterBrokerConfigs applies edit to the dynamic configs of the BROKER
// resource name (this broker's id, or "" for the cluster-wide default),
// validated as Kafka does: names Kafka can change at run time
// (INVALID_REQUEST otherwise), values that parse (INVALID_CONFIG).
func (b *Broker) alterBrokerConfigs(ctx context.Context, name string, validateOnly bool, edit func(cur map[string]string) (map[string]string, error)) error {
	if err := b.checkBrokerResource(name); err != nil {
		return err
	}
	clusterDefault := name == ""
	err := b.store.UpdateBrokerConfig(ctx, controller.BrokerConfigEntity(name), func(stored map[string]string) (map[string]string, error) {
		next, err := edit(maps.Clone(stored))
		if err != nil {
			return nil, err
		}
		if err := config.ValidateDynamic(next, clusterDefault); err != nil {
			return nil, err
		}
		now := b.cfg()
		def, mine := now.DynamicLayer(true), now.DynamicLayer(false)
		if clusterDefault {
			def = b.decodePasswords(next, false)
		} else {
			mine = b.decodePasswords(next, false)
		}
		q, err := b.props.WithDynamic(def, mine)
		if err != nil {
			return nil, err
		}
		if err := config.CheckReconfiguration(now, q, !clusterDefault, changedKeys(stored, next)); err != nil {
			var re *config.ReconfigError
			errors.As(err, &re)
			code := kerr.InvalidRequest
			if re.InvalidConfig {
				code = kerr.InvalidConfig
			}
			return nil, &codedError{code, re.Msg}
		}
		if _, err := q.CordonedLogDirs(); err != nil {
			// Kafka checks it as at startup (a Scala require).
			var ce *config.CordonedLogDirsError
			errors.As(err, &ce)
			return nil, &codedError{kerr.InvalidRequest, "requirement failed: " + ce.Msg}
		}
		toStore, err := b.encodePasswords(stored, next)
		if err != nil {
			return nil, err
		}
		if validateOnly {
			return nil, errValidateOnly
		}
		return toStore, nil
	})
	var ce *config.ConfigError
	switch {
	case errors.Is(err, errValidateOnly):
		return nil
	case errors.As(err, &ce):
		// Kafka refuses a dynamic broker config's value with
		// INVALID_REQUEST and its ConfigException's message.
		return &codedError{kerr.InvalidRequest, ce.Msg}
	case errors.Is(err, config.ErrNotDynamic), errors.Is(err, errNoPasswordEncoder):
		return fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	case err != nil:
		return err
	}
	// Apply here at once; the watch brings it to the other brokers.
	if _, err := b.reloadDynamicConfigs(ctx); err != nil {
		return err
	}
	return b.syncMetadata(ctx)
}

// changedKeys are the configs set, changed or deleted from before to after.
func changedKeys(before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if w, ok := before[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// passwordEncoder is the broker's password.encoder.* (nil when
// password.encoder.secret is unset).
func passwordEncoder(p *config.Props) (*security.PasswordEncoder, error) {
	secret := p.String("password.encoder.secret")
	if secret == "" {
		return nil, nil
	}
	return security.NewPasswordEncoder(secret, p.String("password.encoder.old.secret"),
		p.String("password.encoder.keyfactory.algorithm"), p.String("password.encoder.cipher.algorithm"),
		int(p.Int32("password.encoder.key.length")), int(p.Int32("password.encoder.iterations")))
}

// errNoPasswordEncoder: a password config to store and no
// password.encoder.secret to encrypt it with (Kafka: INVALID_REQUEST).
var errNoPasswordEncoder = errors.New("password.encoder.secret is not set on this broker: it cannot store password configs encrypted")

// decodePasswords returns layer with its encrypted passwords decrypted. A
// value that does not decode (another secret, or none here) is left out
// when logged is true (the configs put in effect, logged as Kafka does),
// and kept as it is stored otherwise (a check of a set about to be
// stored). A password stored before they were encrypted reads as it is.
func (b *Broker) decodePasswords(layer map[string]string, logged bool) map[string]string {
	var out map[string]string
	for k, v := range layer {
		if !config.IsPassword(k) || !security.IsEncodedPassword(v) {
			continue
		}
		if out == nil {
			out = maps.Clone(layer)
		}
		err := errNoPasswordEncoder
		if b.passwords != nil {
			var plain string
			if plain, err = b.passwords.Decode(v); err == nil {
				out[k] = plain
				continue
			}
		}
		if logged {
			b.log.Warn("dynamic broker configs: a stored password does not decode here; ignoring it", "config", k, "err", err)
			delete(out, k)
		}
	}
	if out == nil {
		return layer
	}
	return out
}

// encodePasswords returns next as it is to be stored: each password the
// edit set encrypted, each it left untouched as it was stored.
func (b *Broker) encodePasswords(stored, next map[string]string) (map[string]string, error) {
	out := maps.Clone(next)
	for k, v := range next {
		if !config.IsPassword(k) {
			continue
		}
		if old, ok := stored[k]; ok && old == v && (security.IsEncodedPassword(v) || b.passwords == nil) {
			continue
		}
		if b.passwords == nil {
			return nil, fmt.Errorf("%w (config %s)", errNoPasswordEncoder, k)
		}
		enc, err := b.passwords.Encode(v)
		if err != nil {
			return nil, err
		}
		out[k] = enc
	}
	return out, nil
}
