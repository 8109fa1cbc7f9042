// Package deploy holds the checks of the repository's deployment files
// (docker-compose.yml, Dockerfile): there is no Docker engine on the
// development machines, so its tests load the compose file with
// compose-spec/compose-go, as Docker Compose does, and feed each broker's
// environment through samsa's own configuration loader.
package deploy
