package controller

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrFenced: a remote log metadata write was refused because the writer
// no longer leads the partition in the leader epoch it named.
var ErrFenced = errors.New("controller: not the leader in that leader epoch")

// remoteLogKey is the key of one partition's remote log metadata (tiered
// storage), under the topic id so that a topic deleted and created again
// keeps its remote segments apart.
func (s *Store) remoteLogKey(topicID [16]byte, p int32) string {
	return s.remoteLogPrefix() + base64.RawURLEncoding.EncodeToString(topicID[:]) + "/" + strconv.Itoa(int(p))
}

func (s *Store) remoteLogPrefix() string { return s.root + "/remote_log/" }

// RemoteLogMetadata returns a partition's remote log metadata as stored
// (the tiered package's JSON, opaque here) and the key's mod revision, the
// compare value of the next PutRemoteLogMetadata; nil and 0 when there is
// none.
func (s *Store) RemoteLogMetadata(ctx context.Context, topicID [16]byte, p int32) ([]byte, int64, error) {
	if err := s.checkOpen(); err != nil {
		return nil, 0, err
	}
	resp, err := s.cli.Get(ctx, s.remoteLogKey(topicID, p))
	if err != nil {
		return nil, 0, fmt.Errorf("controller: reading remote log metadata: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, nil
	}
	return resp.Kvs[0].Value, resp.Kvs[0].ModRevision, nil
}

// DeleteRemoteLogMetadata removes the remote log metadata of every
// partition of the topic whose id is topicID (deleted, its remote
// segments with it).
func (s *Store) DeleteRemoteLogMetadata(ctx context.Context, topicID [16]byte) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	prefix := s.remoteLogPrefix() + base64.RawURLEncoding.EncodeToString(topicID[:]) + "/"
	if _, err := s.cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("controller: deleting remote log metadata: %w", err)
	}
	return nil
}

// PutRemoteLogMetadata writes value as the remote log metadata of
// partition p of topic (whose id is topicID), in one transaction
// conditioned on the metadata key's mod revision still being rev (0: no
// key yet) and on the partition's state naming leader as its leader in
// leaderEpoch, so that a deposed leader, paused past its leadership,
// changes nothing. It returns the new revision. A lost race on the
// metadata is ErrStale; a state that names another leader or epoch (or
// no longer exists) is ErrFenced.
func (s *Store) PutRemoteLogMetadata(ctx context.Context, topic string, topicID [16]byte, p, leader, leaderEpoch int32, rev int64, value []byte) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	if err := validTopicName(topic); err != nil {
		return 0, err
	}
	key, stateKey := s.remoteLogKey(topicID, p), s.stateKey(topic, p)
	// The state may change under the same leader and epoch (an ISR
	// write): read it again and retry then, a bounded number of times.
	for range 16 {
		resp, err := s.cli.Get(ctx, stateKey)
		if err != nil {
			return 0, fmt.Errorf("controller: reading %s-%d: %w", topic, p, err)
		}
		if len(resp.Kvs) == 0 {
			return 0, fmt.Errorf("%w: %s-%d has no state", ErrFenced, topic, p)
		}
		st, err := decodeState(resp.Kvs[0].Value)
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %v", ErrCorrupt, stateKey, err)
		}
		if st.Leader != leader || st.LeaderEpoch != leaderEpoch {
			return 0, fmt.Errorf("%w: %s-%d is led by %d in epoch %d, not %d in %d",
				ErrFenced, topic, p, st.Leader, st.LeaderEpoch, leader, leaderEpoch)
		}
		tr, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(stateKey), "=", resp.Kvs[0].ModRevision),
				clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, string(value))).
			Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).
			Commit()
		if err != nil {
			return 0, fmt.Errorf("controller: writing remote log metadata of %s-%d: %w", topic, p, err)
		}
		if tr.Succeeded {
			return tr.Header.Revision, nil
		}
		var now int64
		if kvs := tr.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			now = kvs[0].ModRevision
		}
		if now != rev {
			return 0, fmt.Errorf("%w: remote log metadata of %s-%d changed since revision %d", ErrStale, topic, p, rev)
		}
	}
	return 0, fmt.Errorf("%w: the state of %s-%d keeps changing", ErrStale, topic, p)
}
