// Package deploy holds the checks of the repository's deployment files
// (docker-compose.yml, Dockerfile). The fast check loads the compose file
// with compose-spec/compose-go, as Docker Compose does, and feeds each
// broker's environment through samsa's own configuration loader: a KRaft
// file whose three nodes form the controller quorum (the etcd cluster).
package deploy
