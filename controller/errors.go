package controller

import "errors"

// Errors returned by Store. Callers test them with errors.Is; the broker
// maps them to Kafka error codes.
var (
	// ErrTopicExists: CreateTopic found the topic, or its deletion marker.
	ErrTopicExists = errors.New("controller: topic already exists")
	// ErrUnknownTopic: the topic has no key in etcd.
	ErrUnknownTopic = errors.New("controller: unknown topic")
	// ErrUnknownPartition: the partition index is not in the topic.
	ErrUnknownPartition = errors.New("controller: unknown partition")
	// ErrStale: a compare-and-set lost a race; re-read and retry.
	ErrStale = errors.New("controller: stale version")
	// ErrBrokerIDInUse: another live broker (another lease) is registered
	// with this id.
	ErrBrokerIDInUse = errors.New("controller: broker id already registered")
	// ErrBrokerNotRegistered: UnregisterBroker found no registration of
	// the broker, live or fenced.
	ErrBrokerNotRegistered = errors.New("controller: broker not registered")
	// ErrBrokerLive: UnregisterBroker was asked to remove the registration
	// of a broker that is up.
	ErrBrokerLive = errors.New("controller: broker is up")
	// ErrNoController: no broker holds the controller election.
	ErrNoController = errors.New("controller: no controller elected")
	// ErrNotController: this store lost (or never held) the controller
	// election.
	ErrNotController = errors.New("controller: not the controller")
	// ErrInvalid: an argument is malformed (empty topic name, bad replica
	// list...). Wrapped with the detail.
	ErrInvalid = errors.New("controller: invalid argument")
	// ErrCorrupt: a value in etcd does not parse. Wrapped with the key.
	ErrCorrupt = errors.New("controller: corrupt value in etcd")
	// ErrProducerIDsExhausted: no producer id is left below 2^63.
	ErrProducerIDsExhausted = errors.New("controller: producer ids exhausted")
	// ErrElectionNotNeeded: ElectLeaders found the wanted leader leading.
	ErrElectionNotNeeded = errors.New("controller: leader election not needed")
	// ErrPreferredLeaderNotAvailable: the preferred replica is not live and
	// in sync.
	ErrPreferredLeaderNotAvailable = errors.New("controller: preferred leader not available")
	// ErrEligibleLeadersNotAvailable: no live replica may lead.
	ErrEligibleLeadersNotAvailable = errors.New("controller: eligible leaders not available")
	// ErrNoReassignment: a cancelled reassignment was not in progress.
	ErrNoReassignment = errors.New("controller: no reassignment in progress")
	// ErrInvalidAssignment: a reassignment's target replicas are empty,
	// repeat a broker or name one that is not registered.
	ErrInvalidAssignment = errors.New("controller: invalid replica assignment")
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("controller: store closed")
)
