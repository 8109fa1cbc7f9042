package config

import (
	"fmt"
	"strings"
)

// Tiered storage (KIP-405). The broker properties are Kafka's
// (remote.log.*, log.local.retention.*); the object store is configured
// with the names of Aiven's tiered-storage-for-apache-kafka plugin and its
// S3 backend, passed to the plugin under remote.log.storage.manager.impl.prefix
// (rsm.config.), so that a server.properties written for Kafka with that
// plugin starts samsa unchanged. samsa implements the S3 side itself.

// The plugin and backend classes whose properties samsa reads.
const (
	AivenRSMClass       = "io.aiven.kafka.tieredstorage.RemoteStorageManager"
	AivenS3BackendClass = "io.aiven.kafka.tieredstorage.storage.s3.S3Storage"
)

// rsmPrefix and rlmmPrefix are Kafka's default prefixes of the properties
// passed to the RemoteStorageManager and RemoteLogMetadataManager.
const (
	rsmPrefix  = "rsm.config."
	rlmmPrefix = "rlmm.config."
)

// rsmDefs are the plugin's properties samsa reads, typed and checked as
// the plugin's ConfigDef does. Other rsm.config.* and rlmm.config.* names
// are accepted as strings and ignored (named in the start-up warning).
var rsmDefs = []Def{
	{Name: "rsm.config.storage.backend.class", Type: tClass, Doc: "The plugin's storage backend; samsa implements " + AivenS3BackendClass + "."},
	{Name: "rsm.config.chunk.size", Type: tInt, Doc: "The size of the chunks a segment is stored and fetched in.", check: between(1, 1<<30-1)},
	{Name: "rsm.config.fetch.chunk.cache.size", Type: tLong, Default: str("67108864"), Doc: "The bytes of remote chunks kept in memory for remote reads (beyond those being sent); -1, the plugin's unbounded, is taken as the default.", check: atLeast(-1)},
	{Name: "rsm.config.key.prefix", Type: tString, Default: str(""), Doc: "The prefix of every object key."},
	{Name: "rsm.config.storage.s3.bucket.name", Type: tString, Doc: "The S3 bucket."},
	{Name: "rsm.config.storage.s3.endpoint.url", Type: tString, Doc: "The S3 endpoint (an S3-compatible store's URL); unset: AWS's endpoint of the region.", check: checkEndpointURL},
	{Name: "rsm.config.storage.s3.region", Type: tString, Default: str("us-east-1"), Doc: "The S3 region."},
	{Name: "rsm.config.storage.s3.path.style.access.enabled", Type: tBool, Doc: "Address the bucket in the URL's path rather than its host name (S3-compatible stores)."},
	{Name: "rsm.config.storage.aws.access.key.id", Type: tPassword, Sensitive: true, Doc: "The AWS access key id."},
	{Name: "rsm.config.storage.s3.api.call.timeout", Type: tLong, Doc: "How long, in milliseconds, one call to the store may take, its retries included; unset: 120000 (the plugin's unset is the SDK's unbounded). A Put is given a second more per MiB it sends.", check: atLeast(1)},
	{Name: "rsm.config.storage.s3.api.call.attempt.timeout", Type: tLong, Doc: "How long, in milliseconds, one HTTP request to the store may take before it is given up and retried; unset: 30000 (the plugin's unset is the SDK's unbounded). A Put is given a second more per MiB it sends.", check: atLeast(1)},
	{Name: "rsm.config.storage.aws.secret.access.key", Type: tPassword, Sensitive: true, Doc: "The AWS secret access key."},
}

var rsmIndex = indexByName(rsmDefs, func(d *Def) string { return d.Name })

// checkEndpointURL accepts an http or https URL with a host.
func checkEndpointURL(v string) error {
	rest, ok := strings.CutPrefix(v, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(v, "https://")
	}
	if !ok || rest == "" || strings.HasPrefix(rest, "/") {
		return fmt.Errorf("not an http or https URL")
	}
	return nil
}

// pluginProp reports whether key is passed to a tiered storage plugin
// (rsm.config.*, rlmm.config.*).
func pluginProp(key string) bool {
	return strings.HasPrefix(key, rsmPrefix) || strings.HasPrefix(key, rlmmPrefix)
}

// RSM returns the value of a plugin property of rsmDefs as set, else its
// default ("" when it has none).
func (p *Props) RSM(key string) string {
	if v, ok := p.set[key]; ok {
		return v.norm
	}
	if d := rsmIndex[key]; d != nil && d.Default != nil {
		return *d.Default
	}
	return ""
}

// tieredCheck validates the tiered storage properties together: with
// remote.log.storage.system.enable=true, the RemoteStorageManager must be
// Aiven's plugin with its S3 backend (the one samsa implements), naming a
// bucket and a chunk size, as the plugin requires them.
func (p *Props) tieredCheck() []error {
	if !p.Bool("remote.log.storage.system.enable") {
		return nil
	}
	var errs []error
	if c := p.String("remote.log.storage.manager.class.name"); c != AivenRSMClass {
		errs = append(errs, p.invalid("remote.log.storage.manager.class.name", "with remote.log.storage.system.enable=true samsa implements %s (with its S3 backend)", AivenRSMClass))
	}
	if p.String("remote.log.storage.manager.impl.prefix") != rsmPrefix {
		errs = append(errs, p.invalid("remote.log.storage.manager.impl.prefix", "samsa reads the plugin's properties under %s", rsmPrefix))
	}
	if c := p.RSM("rsm.config.storage.backend.class"); c != AivenS3BackendClass {
		errs = append(errs, fmt.Errorf("%w: rsm.config.storage.backend.class must be %s with remote.log.storage.system.enable=true (samsa implements the S3 backend)", ErrInvalidConfig, AivenS3BackendClass))
	}
	for _, k := range []string{"rsm.config.chunk.size", "rsm.config.storage.s3.bucket.name"} {
		if p.RSM(k) == "" {
			errs = append(errs, fmt.Errorf("%w: %s is required with remote.log.storage.system.enable=true", ErrInvalidConfig, k))
		}
	}
	return errs
}
