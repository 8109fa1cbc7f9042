package protocol

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// VersionRange is the range of versions of one API key that a broker
// advertises in ApiVersions.
type VersionRange struct {
	Key      int16
	Min, Max int16
}

// clientSoftware is the pattern KIP-511 requires of ApiVersions v3+
// ClientSoftwareName and ClientSoftwareVersion.
var clientSoftware = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

// ValidClientSoftware reports whether s is a valid client software name or
// version for ApiVersions v3+.
func ValidClientSoftware(s string) bool { return clientSoftware.MatchString(s) }

// UnsupportedApiVersions builds the answer to an ApiVersions request whose
// version is above what the broker serves: a v0 body with
// UNSUPPORTED_VERSION and the broker's range for ApiVersions itself, so that
// the client retries at a version both sides know (KIP-511).
func UnsupportedApiVersions(own VersionRange) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = own.Key, own.Min, own.Max
	resp.ApiKeys = append(resp.ApiKeys, k)
	return resp
}
