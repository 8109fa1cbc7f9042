// Package security holds the listeners' security mechanisms, configured
// with Kafka's property names: TLS (key material from PEM, PKCS12 and JKS
// stores, reloaded when the files change; client certificates; the
// principal from the certificate's subject through
// ssl.principal.mapping.rules).
//
// A principal is Kafka's "User:<name>" string. The package imports no
// other package of the project: the broker hands it each listener's
// settings as a lookup function.
package security
