package groups

import (
	"errors"
	"fmt"

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

// kafkaError is an error code with the message Kafka sends with it.
type kafkaError struct {
	code *kerr.Error
	msg  string
}

func (e *kafkaError) Error() string { return e.msg }
func (e *kafkaError) Unwrap() error { return e.code }

// ErrGroupNotFound is GROUP_ID_NOT_FOUND for a group id no group has (not
// one of another type): the admin APIs of share groups tell the two apart.
var ErrGroupNotFound error = &kafkaError{kerr.GroupIDNotFound, "no group has this id"}

// groupNotFoundError is ErrGroupNotFound for group id, with Kafka's message.
type groupNotFoundError struct{ id string }

func (e *groupNotFoundError) Error() string   { return fmt.Sprintf("Group %s not found.", e.id) }
func (e *groupNotFoundError) Unwrap() []error { return []error{ErrGroupNotFound} }

// kafkaErrorf is code with Kafka's message, formatted.
func kafkaErrorf(code *kerr.Error, format string, args ...any) error {
	return &kafkaError{code, fmt.Sprintf(format, args...)}
}

// errorMessage is the message Kafka sends with err: a kafkaError's own,
// else what err says.
func errorMessage(err error) string {
	var ke *kafkaError
	if errors.As(err, &ke) {
		return ke.msg
	}
	return err.Error()
}
