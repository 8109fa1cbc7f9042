package s3test

import "github.com/samsa-io/samsa/internal/config"

// TieredProps are the server.properties with which a broker tiers to the
// store's bucket, named as for Aiven's RemoteStorageManager with its S3
// backend: remote.log.storage.system.enable, 4 MiB chunks, this
// package's region and credentials, path-style access. extra are further
// properties (name, value, ...), which may replace these.
func (s *Store) TieredProps(extra ...string) map[string]string {
	return tieredProps(s.Endpoint, s.Bucket, extra)
}

// TieredProps are the store's TieredProps with the broker reaching the
// store through the fault proxy.
func (f *Fault) TieredProps(extra ...string) map[string]string {
	return tieredProps(f.Endpoint, f.bucket, extra)
}

func tieredProps(endpoint, bucket string, extra []string) map[string]string {
	p := map[string]string{
		"remote.log.storage.system.enable":                "true",
		"remote.log.storage.manager.class.name":           config.AivenRSMClass,
		"rsm.config.storage.backend.class":                config.AivenS3BackendClass,
		"rsm.config.chunk.size":                           "4194304",
		"rsm.config.storage.s3.bucket.name":               bucket,
		"rsm.config.storage.s3.endpoint.url":              endpoint,
		"rsm.config.storage.s3.region":                    Region,
		"rsm.config.storage.s3.path.style.access.enabled": "true",
		"rsm.config.storage.aws.access.key.id":            AccessKey,
		"rsm.config.storage.aws.secret.access.key":        SecretKey,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		p[extra[i]] = extra[i+1]
	}
	return p
}
