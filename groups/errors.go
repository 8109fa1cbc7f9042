package groups

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// errorCode is the Kafka error code of err: 0 for nil, the code of a kerr
// error, UNKNOWN_SERVER_ERROR otherwise.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
