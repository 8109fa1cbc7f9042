// Package security holds the listeners' security mechanisms and the
// authorizer, configured with Kafka's property names:
//
//   - TLS (tls.go, keystore.go): key material from PEM, PKCS12 and JKS
//     stores, reloaded when the files change; client certificates; the
//     principal from the certificate's subject through
//     ssl.principal.mapping.rules.
//   - SASL (sasl.go, scram.go, oauth.go, jwks.go): the server side of
//     PLAIN (users from the JAAS config), SCRAM-SHA-256/512 (credentials
//     from a ScramStore, which the broker fills from etcd) and OAUTHBEARER
//     (Kafka's unsecured JWS validator, or JWTs verified against a JWKS).
//   - Delegation tokens (token.go): SCRAM with the tokenauth=true
//     extension authenticates a token (from a TokenStore, which the
//     broker fills from etcd) as its owner; the HMAC is the password.
//   - ACLs (acl.go): Kafka's StandardAuthorizer semantics over a snapshot
//     of the bindings, which the broker loads from etcd and reloads on
//     every change.
//   - Quotas (quota.go): client byte rates per user and client id, with
//     defaults, measured over Kafka's sample windows.
//
// A principal is Kafka's "User:<name>" string. The package imports no
// other package of the project: the broker hands it each listener's
// settings as lookup functions and fills the stores.
package security
